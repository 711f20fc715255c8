"""``kairox mcp list|status|tools|logs`` and MCP tools through ``kairox tools call``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import peers
import pytest
from click.testing import CliRunner

from kairox._host import build_plugin_host
from kairox_cli._main import build_cli
from kairox_testing import trust_workspace

pytestmark = pytest.mark.integration


def toml_string(value: str) -> str:
    return json.dumps(value)


def server_table(name: str, fixture: str, *args: str) -> str:
    argv = peers.fixture_server(fixture)
    all_args = ", ".join(toml_string(a) for a in [*argv[1:], *args])
    return f"[mcp_servers.{name}]\ncommand = {toml_string(argv[0])}\nargs = [{all_args}]\n"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    monkeypatch.setenv("KAIROX_HOME", str(home))
    (ws / "kairox.toml").write_text(
        server_table("good", "well_behaved", "--name", "good")
        + server_table("bad", "crash_on_start")
        + "\n[mcp_servers.remote]\n"
        'type = "http"\n'
        'url = "http://127.0.0.1:9/mcp?api_key=URLSECRET"\n'
        'headers = { Authorization = "Bearer HEADERSECRET" }\n'
        "enabled = false\n"
    )
    (ws / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"fromjson": {"command": "never-started", "env": {"API_TOKEN": "ENVSECRET"}}}})
    )
    trust_workspace(ws, home, env=dict(os.environ))  # the test's own workspace: its servers may run
    return ws


def run(workspace: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    host = build_plugin_host(env={**os.environ, **(env or {})})
    result = CliRunner().invoke(build_cli(host), ["-w", str(workspace), *args], catch_exceptions=False)
    return result


def test_list_shows_transport_source_and_redacts_secrets(workspace: Path, no_leftovers: None) -> None:
    result = run(workspace, "mcp", "list")
    assert result.exit_code == 0, result.output
    out = result.output
    for secret in ("URLSECRET", "HEADERSECRET", "ENVSECRET"):
        assert secret not in out
    lines = out.splitlines()
    assert any(line.startswith("remote") and "streamable_http" in line and "(disabled)" in line for line in lines)
    assert f"from {workspace / '.mcp.json'}" in out and f"from {workspace / 'kairox.toml'}" in out
    data = json.loads(run(workspace, "mcp", "list", "--json").output)
    by_name = {s["name"]: s for s in data["servers"]}
    assert set(by_name) == {"good", "bad", "remote", "fromjson"}
    assert by_name["fromjson"]["origin"] == ".mcp.json"
    assert by_name["fromjson"]["config"]["env"] == {"API_TOKEN": "<redacted>"}
    assert by_name["remote"]["config"]["headers"] == {"Authorization": "<redacted>"}
    assert "URLSECRET" not in json.dumps(data)


def test_status_shows_each_server_and_fails_when_one_failed(workspace: Path, no_leftovers: None) -> None:
    (workspace / ".mcp.json").unlink()
    result = run(workspace, "mcp", "status")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert any(" good " in line and "ready" in line and "tools" in line for line in lines)
    assert any(line.startswith("! bad") and "failed" in line and "exit code 3" in line for line in lines)
    assert any("fatal: cannot open /nonexistent/config.toml" in line for line in lines)
    assert any(" remote " in line and "stopped" in line and "disabled" in line for line in lines)
    data = json.loads(run(workspace, "mcp", "status", "--json").output)
    assert {s["name"]: s["state"] for s in data["servers"]} == {"good": "ready", "bad": "failed", "remote": "stopped"}


def test_kairox_status_lists_mcp_servers(workspace: Path, no_leftovers: None) -> None:
    (workspace / ".mcp.json").unlink()
    data = json.loads(run(workspace, "status", "--json").output)
    servers = {s["name"]: s for s in data["servers"] if s["kind"] == "mcp"}
    assert servers["good"]["state"] == "ready" and servers["good"]["tools"] > 0
    assert servers["bad"]["state"] == "failed"
    assert servers["good"]["source"] == str(workspace / "kairox.toml")


def test_tools_of_one_server(workspace: Path, no_leftovers: None) -> None:
    result = run(workspace, "mcp", "tools", "good")
    assert result.exit_code == 0, result.output
    ids = [line.split()[0] for line in result.output.splitlines()]
    assert "good.echo" in ids and "good.sleep" in ids
    failed = run(workspace, "mcp", "tools", "bad")
    assert failed.exit_code == 1 and "exit code 3" in failed.output
    unknown = run(workspace, "mcp", "tools", "nope")
    assert unknown.exit_code != 0 and "no MCP server named 'nope'" in unknown.output


def test_logs_show_the_stderr_tail(workspace: Path, no_leftovers: None) -> None:
    result = run(workspace, "mcp", "logs", "bad")
    assert result.exit_code == 0
    assert result.output.splitlines()[0].startswith("# bad: failed")
    assert "crash_on_start: fatal: cannot open /nonexistent/config.toml" in result.output
    data = json.loads(run(workspace, "mcp", "logs", "bad", "--json", "-n", "1").output)
    assert data["exit_code"] == 3 and len(data["lines"]) == 1


def test_mcp_tools_are_callable_through_tools_call(workspace: Path, no_leftovers: None) -> None:
    result = run(workspace, "tools", "call", "good.echo", "--args", '{"message": "via cli"}', "--yes")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "via cli"
    denied = run(workspace, "tools", "call", "good_echo", "--args", '{"message": "x"}')
    assert denied.exit_code == 1  # system/execute asks; no TTY, no --yes


def test_a_missing_transport_plugin_is_named_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("KAIROX_HOME", str(tmp_path / "home"))
    (ws / "kairox.toml").write_text('[mcp_servers.remote]\ntype = "sse"\nurl = "http://127.0.0.1:9/sse"\n')
    trust_workspace(ws, tmp_path / "home", env=dict(os.environ))
    result = run(ws, "mcp", "status", env={"KAIROX_DISABLE_PLUGINS": "sse"})
    assert result.exit_code == 1
    # installed here but filtered out: said so (pip would only answer "already satisfied")
    assert (
        'transport "sse" is provided by kairox-sse, which is installed but not loaded: listed in KAIROX_DISABLE_PLUGINS'
        in result.output
    )
    assert "Traceback" not in result.output


def test_logs_of_an_unknown_server(workspace: Path) -> None:
    result = run(workspace, "mcp", "logs", "nope")
    assert result.exit_code != 0 and "no MCP server named 'nope'" in result.output
