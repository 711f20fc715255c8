"""The MCP Inspector's CLI (npm ``@modelcontextprotocol/inspector``, ``--cli``) against
``kairox serve --stdio`` and the HTTP endpoint: a client kairox did not write."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import peers
import pytest
from serve_helpers import KAIROX, TOKEN, Workspace, make_workspace, serve_http

pytestmark = pytest.mark.usefixtures("no_leftovers")


def inspector(ws: Workspace, *args: str, code: int = 0) -> Any:
    js = peers.inspector_cli_js()
    env = ws.env()  # HOME is the test's: the Inspector's catalog file lands there
    proc = subprocess.run(
        ["node", str(js), "--cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        start_new_session=True,
    )
    assert proc.returncode == code, f"inspector {args}: {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return json.loads(proc.stdout)


def stdio_target(ws: Workspace) -> list[str]:
    return [
        "-e",
        f"KAIROX_HOME={ws.home}",
        "-e",
        f"HOME={ws.home}",
        "--",
        *KAIROX,
        "-w",
        str(ws.root),
        "serve",
        "--stdio",
    ]


def check(ws: Workspace, target: list[str]) -> None:
    def run(*method: str, code: int = 0) -> Any:
        # the target last: after --, a stdio command; otherwise --server-url options
        return inspector(ws, *method, *target, code=code)

    tools = run("--method", "tools/list")["tools"]
    by_name = {t["name"]: t for t in tools}
    assert by_name["fs_read"]["annotations"]["readOnlyHint"] is True
    assert by_name["wb_echo"]["annotations"]["destructiveHint"] is True
    called = run("--method", "tools/call", "--tool-name", "wb_echo", "--tool-arg", "message=from the inspector")
    assert called["content"][0]["text"] == "from the inspector" and not called.get("isError")
    denied = run("--method", "tools/call", "--tool-name", "wb_env", code=5)  # 5: the tool said isError
    assert denied["isError"] is True and "denied" in denied["content"][0]["text"]
    prompts = run("--method", "prompts/list")["prompts"]
    assert [p["name"] for p in prompts] == ["greet"]
    assert prompts[0]["arguments"][0]["name"] == "who"


def test_inspector_against_stdio(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    check(ws, stdio_target(ws))


def test_inspector_against_http(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        check(ws, ["--transport", "http", "--header", f"Authorization: Bearer {TOKEN}", "--server-url", url])
