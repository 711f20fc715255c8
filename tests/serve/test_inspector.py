"""The MCP Inspector's CLI (npm ``@modelcontextprotocol/inspector``, ``--cli``) against
``kairox serve --stdio`` and the HTTP endpoint: a client kairox did not write."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import peers
import pytest
from serve_helpers import KAIROX, TOKEN, Workspace, make_workspace, serve_http, with_backend

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


def check_forwarded(ws: Workspace, target: list[str]) -> None:
    """What the Inspector's other methods see of a backend (server-everything, ``ev``): its
    resources, templates and prompts beside the workspace skill's, and a refused Ask's exit code."""

    def run(*method: str, code: int = 0) -> Any:
        return inspector(ws, *method, *target, code=code)

    uris = {r["uri"] for r in run("--method", "resources/list")["resources"]}
    assert "skill://greet/SKILL.md" in uris and "demo://resource/static/document/features.md" in uris
    templates = {t["uriTemplate"] for t in run("--method", "resources/templates/list")["resourceTemplates"]}
    assert "demo://resource/dynamic/text/{resourceId}" in templates
    read = run("--method", "resources/read", "--uri", "demo://resource/dynamic/text/3")
    assert read["contents"][0]["text"].startswith("Resource 3: ")
    prompts = {p["name"] for p in run("--method", "prompts/list")["prompts"]}
    assert {"greet", "ev_simple-prompt", "ev_args-prompt"} <= prompts
    got = run("--method", "prompts/get", "--prompt-name", "ev_args-prompt", "--prompt-args", "city=Paris", "state=IDF")
    assert got["messages"][0]["content"]["text"] == "What's weather in Paris, IDF?"
    greet = run("--method", "prompts/get", "--prompt-name", "greet", "--prompt-args", "who=Ada")
    assert greet["messages"][0]["content"]["text"].strip() == "Say hello to Ada, warmly."
    # ev's tools declare no capability (execute), and no allow rule covers them: asked, and the
    # Inspector cannot be asked, so refused with the user config to put the rule in
    refused = run("--method", "tools/call", "--tool-name", "ev_echo", "--tool-arg", "message=hi", code=5)
    assert "needs approval" in refused["content"][0]["text"]
    assert str(ws.home / "kairox.toml") in refused["content"][0]["text"]


def with_everything(tmp_path: Path) -> Workspace:
    return with_backend(tmp_path, "ev", "node", peers.everything_server_js(), "stdio")


def test_inspector_sees_a_backends_resources_and_prompts(tmp_path: Path) -> None:
    """Over HTTP only: over stdio each Inspector run starts the gateway and its backends anew
    (seconds each), and the stdio test above already drives the same gateway."""
    ws = with_everything(tmp_path)
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        check_forwarded(ws, ["--transport", "http", "--header", f"Authorization: Bearer {TOKEN}", "--server-url", url])
