"""``kairox mcp import`` through the CLI: the plan, the refusal without a terminal, the write,
and the written servers as kairox reads them. No secret of a source is ever printed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import click
import peers
import pytest
from test_importer import FIXTURE_SECRETS, copy_fixtures

from kairox._compat import tomllib
from kairox_mcp.import_cli import import_cmd
from kairox_testing import KairoxHarness, make_plugin

COMMAND = "mcp-import"  # the command under a name of its own: `kairox mcp import` once registered


def _add(cli: click.Group) -> None:
    cli.add_command(import_cmd, COMMAND)


@pytest.fixture
def harness(kairox_harness: KairoxHarness, tmp_path: Path) -> KairoxHarness:
    """The fixture tree copied in: the harness's workspace holds the client files, HOME and
    XDG_CONFIG_HOME are the fixture's home (never the real one); KAIROX_HOME stays apart."""
    workspace, env = copy_fixtures(tmp_path)
    shutil.copytree(workspace, kairox_harness.workspace, dirs_exist_ok=True)
    claude = Path(env["HOME"]) / ".claude.json"
    claude.write_text(claude.read_text().replace(str(workspace), str(kairox_harness.workspace)))
    kairox_harness.env.update(env)
    kairox_harness.register(make_plugin("import-cmd", kairox_register_commands=_add))
    return kairox_harness


def run(harness: KairoxHarness, *args: str) -> click.testing.Result:
    return harness.cli(*args, load_entrypoints=True)


def _all_output(result: click.testing.Result) -> str:
    return result.stdout + result.stderr


def _no_secret_in(text: str) -> None:
    for secret in FIXTURE_SECRETS:
        assert secret not in text


def test_dry_run_json_lists_every_server_and_writes_nothing(harness: KairoxHarness) -> None:
    result = run(harness, COMMAND, "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    rows = {r["name"]: r for r in data["servers"]}
    assert rows["vs-remote"] == {
        "name": "vs-remote",
        "from": "vscode",
        "file": str(harness.workspace / ".vscode" / "mcp.json"),
        "transport": "streamable_http",
        "url": "https://vs.example.com/mcp",
        "variables": [],
    }
    assert rows["desk-fs"]["command"] == "npx"
    assert {"name", "from", "file", "transport"} <= set(rows["codex-git"]) and "command" in rows["codex-git"]
    # kairox reads the workspace's .mcp.json itself: those servers are present already
    skipped = {s["name"]: s["reason"] for s in data["skipped"]}
    assert skipped["cc-remote"].startswith("already configured (from ")
    assert data["written"] is False
    assert not (harness.workspace / "kairox.toml").exists()
    _no_secret_in(_all_output(result))


def test_dry_run_text_and_errors_name_the_file_and_field(harness: KairoxHarness) -> None:
    result = run(harness, COMMAND, "--dry-run")
    assert result.exit_code == 0
    assert "kairox mcp import would add" in result.stdout
    assert "servers.vs-broken.command: expected a string, got a number" in result.stderr
    assert "GITHUB_TOKEN  for codex-git: the value of mcp_servers.codex-git.env.GITHUB_TOKEN in " in result.stdout
    _no_secret_in(_all_output(result))


def test_without_a_terminal_and_without_yes_it_shows_the_plan_and_refuses(harness: KairoxHarness) -> None:
    result = run(harness, COMMAND)
    assert result.exit_code == 1
    assert "cursor-db" in result.stdout
    assert "nobody can confirm here (no terminal); pass --yes to write" in result.stderr
    assert not (harness.workspace / "kairox.toml").exists()
    _no_secret_in(_all_output(result))


def test_yes_writes_the_workspace_file_keeping_comments_and_skips_what_is_there(harness: KairoxHarness) -> None:
    target = harness.write_config('# mine\n[mcp_servers.cursor-db]  # already here\ncommand = "mine"\n')
    result = run(harness, COMMAND, "--from", "cursor,vscode", "--yes", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["written"] is True and data["target"] == str(target)
    assert {s["name"]: s["reason"] for s in data["skipped"]}["cursor-db"] == f"already in {target}"
    text = target.read_text()
    assert text.startswith('# mine\n[mcp_servers.cursor-db]  # already here\ncommand = "mine"\n')
    servers = tomllib.loads(text)["mcp_servers"]
    assert set(servers) == {"cursor-db", "cursor-remote", "vs-perplexity", "vs-remote", "vs-user"}
    assert servers["cursor-remote"]["headers"]["Authorization"] == "Bearer ${CURSOR_REMOTE_TOKEN}"
    assert [v["name"] for v in data["variables"] if v["kind"] == "secret"] == ["PERPLEXITY_KEY", "CURSOR_REMOTE_TOKEN"]
    _no_secret_in(_all_output(result) + text)
    again = run(harness, COMMAND, "--from", "cursor,vscode", "--yes", "--json")
    assert json.loads(again.stdout)["servers"] == []  # everything is present now
    assert target.read_text() == text


def test_user_scope_writes_kairox_home_and_kairox_reads_the_servers(harness: KairoxHarness) -> None:
    result = run(harness, COMMAND, "--scope", "user", "--yes")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("added ")
    assert "set these environment variables for kairox" in result.stdout
    target = harness.home / "kairox.toml"
    text = target.read_text()
    _no_secret_in(_all_output(result) + text)
    servers = tomllib.loads(text)["mcp_servers"]
    assert "cursor-db" not in servers  # a workspace's server stays out of the user's file
    assert {"cc-user", "cc-local", "codex-git", "desk-fs", "wind-remote", "zed-remote"} <= set(servers)
    # the written entries are what kairox reads: with their variables set, `mcp list` shows them
    variables = {
        v: "set-" + v
        for v in (
            "TIME_API_KEY CC_LOCAL_API_KEY CURSOR_REMOTE_TOKEN GITHUB_TOKEN ZED_REMOTE_TOKEN DESK_FS_API_KEY "
            "WIND_TOKEN PORT CODEX_OTHER_KEY"  # the last: what a header of codex-http reads
        ).split()
    }
    harness.env.update(variables)
    listed = run(harness, "mcp", "list", "--json")
    data = json.loads(listed.stdout)
    names = {s["name"] for s in data["servers"]}
    assert {"cc-user", "codex-git", "codex-http", "desk-fs", "zed-old", "gem-user", "vs-user"} <= names
    errors = [e for e in data["errors"] if str(target) in e]
    assert errors == [], errors
    for name, value in variables.items():
        if name != "PORT":  # an argument, shown as it is
            assert value not in listed.stdout


def test_on_a_terminal_it_asks_first(harness: KairoxHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    from kairox_mcp import import_cli

    monkeypatch.setattr(import_cli, "_can_ask", lambda: True)  # CliRunner's stdin is not a terminal
    target = harness.workspace / "kairox.toml"
    declined = harness.cli(COMMAND, "--from", "windsurf", input="n\n", load_entrypoints=True)
    assert declined.exit_code == 1
    assert "add 2 servers to " in declined.stderr and "is unchanged" in declined.stderr
    assert not target.exists()
    accepted = harness.cli(COMMAND, "--from", "windsurf", input="y\n", load_entrypoints=True)
    assert accepted.exit_code == 0, accepted.stderr
    assert accepted.stdout.count("wind-remote") == 1  # the plan once, then one line
    assert accepted.stdout.rstrip().endswith(f"added 2 servers to {target}")
    assert set(tomllib.loads(target.read_text())["mcp_servers"]) == {"wind-remote", "wind-local"}


def test_an_unknown_kind_is_a_usage_error(harness: KairoxHarness) -> None:
    result = run(harness, COMMAND, "--from", "emacs")
    assert result.exit_code == 2
    assert "'emacs' is not one of claude-code, cursor" in result.stderr


def test_a_broken_target_is_reported_and_left_alone(harness: KairoxHarness) -> None:
    target = harness.write_config("[mcp_servers\n")
    result = run(harness, COMMAND, "--yes")
    assert result.exit_code == 1
    assert f"{target}: invalid TOML" in result.stderr
    assert target.read_text() == "[mcp_servers\n"


def test_the_real_cli_has_the_command_once_registered(tmp_path: Path) -> None:
    """One subprocess run of the real ``kairox mcp import`` (the lead registers it in ``cli.py``)."""
    probe = subprocess.run(
        [sys.executable, "-c", "from kairox_mcp.cli import mcp; print('import' in mcp.commands)"],
        capture_output=True,
        text=True,
        check=True,
    )
    if probe.stdout.strip() != "True":
        pytest.skip("`import` is not registered in kairox_mcp.cli yet")
    env = {"HOME": str(tmp_path), "KAIROX_HOME": str(tmp_path / "kh"), "PATH": "/usr/bin:/bin"}
    kairox = str(Path(sys.executable).parent / "kairox")
    done = peers.run_to_end([kairox, "--workspace", str(tmp_path), "mcp", "import", "--dry-run", "--json"], env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["servers"] == []
