"""Fail closed: a config that does not validate, a plugin that fails to register, a name
that matches nothing. Each test is the situation a user meets, and checks that nothing
runs on defaults they did not choose and that the reason names the file and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from security_helpers import cli_env, output_of, run_kairox

from kairox import hookimpl
from kairox_testing import KairoxHarness


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello\n")
    return ws


def test_a_typo_in_a_section_does_not_bring_back_what_it_turned_off(ws: Path, home: Path, tmp_path: Path) -> None:
    """The user turned shell.exec off; a bad value beside it used to drop the whole section
    (exit 0, a warning), and shell.exec came back on its defaults."""
    marker = tmp_path / "ran"
    (home / "kairox.toml").write_text('[tools]\ndisabled = ["shell.exec"]\nshell_timeout = "forever"\n')
    args = json.dumps({"command": f"touch {marker}"})
    result = run_kairox(ws, cli_env(home), "tools", "call", "shell.exec", "--yes", "--args", args)
    assert result.returncode == 1
    assert not marker.exists()
    out = output_of(result)
    assert f"{home / 'kairox.toml'}: tools.shell_timeout: expected a number" in out, out
    assert "[tools] does not validate" in out


def test_a_call_to_a_tool_its_broken_section_turned_off_names_the_section(ws: Path, home: Path) -> None:
    """Found by a plugin author: with its section broken, a call to one of its tools said
    "no tool named 'fs.read'; did you mean ...?", naming a tool of another plugin."""
    (home / "kairox.toml").write_text('[tools]\nshell_timeout = "forever"\n')
    result = run_kairox(ws, cli_env(home), "tools", "call", "fs.read", "--args", '{"path": "notes.txt"}')
    assert result.returncode == 1
    out = output_of(result)
    assert "it may belong to what failed: config section [tools] of kairox-tools" in out, out
    assert "tools.shell_timeout: expected a number" in out, out


def test_a_policy_that_does_not_validate_refuses_every_call_naming_the_field(ws: Path, home: Path) -> None:
    """``approval = "nevr"`` used to leave the user's approval out, so the default applied."""
    (home / "kairox.toml").write_text('[policy]\napproval = "nevr"\n')
    result = run_kairox(ws, cli_env(home), "tools", "call", "fs.read", "--args", '{"path": "notes.txt"}')
    assert result.returncode == 1
    assert "hello" not in result.stdout
    assert "the policy does not validate" in result.stderr
    assert f"{home / 'kairox.toml'}: policy.approval: expected one of" in result.stderr


class _BrokenRegistration:
    __name__ = "broken-tools"

    @hookimpl
    def kairox_register_tool_providers(self, registrar: Any, runtime: Any) -> None:
        raise RuntimeError("cannot find my settings")


def test_a_plugin_that_fails_to_register_is_listed_and_named_where_its_tools_would_be(ws: Path, home: Path) -> None:
    harness = KairoxHarness(ws, home, env=cli_env(home))
    harness.register(_BrokenRegistration(), name="broken-tools")
    listed = harness.cli("plugins", "--json")
    assert listed.exit_code == 0, output_of(listed)
    failures = json.loads(listed.stdout)["failures"]
    assert [(f["plugin"], f["stage"]) for f in failures] == [("broken-tools", "kairox_register_tool_providers")]
    assert "cannot find my settings" in failures[0]["error"]

    tools = harness.cli("tools", "list")
    assert "broken-tools" in tools.stderr and "cannot find my settings" in tools.stderr
    call = harness.cli("tools", "call", "broken.thing")
    assert call.exit_code == 1
    assert "it may belong to what failed: plugin broken-tools (kairox_register_tool_providers)" in call.stderr

    strict = KairoxHarness(ws, home, env={**cli_env(home), "KAIROX_STRICT_PLUGINS": "1"})
    strict.register(_BrokenRegistration(), name="broken-tools")
    result = strict.cli("plugins")
    assert result.exit_code == 1 and "cannot find my settings" in result.stdout


@pytest.mark.parametrize("variable", ["KAIROX_DISABLE_PLUGINS", "KAIROX_LOAD_PLUGINS"])
def test_a_plugin_name_that_matches_nothing_is_reported(ws: Path, home: Path, variable: str) -> None:
    """A typo in KAIROX_DISABLE_PLUGINS used to pass for a plugin turned off (a log line at most)."""
    env = {**cli_env(home), variable: "exmaple"}
    result = run_kairox(ws, env, "plugins", "--json")
    failures = json.loads(result.stdout)["failures"]
    assert [(f["plugin"], f["stage"]) for f in failures] == [("exmaple", "environment")]
    assert (
        f"{variable} names 'exmaple', which is no installed plugin package; did you mean 'example'?"
        in (failures[0]["error"])
    )
