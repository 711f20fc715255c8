"""The dashboard's runtime is reopened as the user changes things (trust, install, a plugin
switched, ``POST /api/reload``), any number of times, against a real ``kairox ui`` process."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import peers
import pytest
from ui_helpers import ECHO_DESCRIPTION, UiServer, UiSetup, echo_entry, install

pytestmark = pytest.mark.integration


def wait_for(server: UiServer, check: Any, what: str, timeout: float = 60.0) -> dict[str, Any]:
    """Poll ``/api/status`` until ``check(status)``; fails naming ``what`` and the process's stderr."""
    deadline = time.monotonic() + timeout
    data: dict[str, Any] = {}
    while time.monotonic() < deadline:
        try:
            data = server.json("/api/status")
        except OSError:  # refused: the process is gone (said below) or not answering yet
            data = {}
        assert server.proc is not None and server.proc.poll() is None, f"kairox ui died: {server.stderr()}"
        if data and check(data):
            return data
        time.sleep(0.1)
    raise AssertionError(f"{what}: not reached; last status {data}; stderr {server.stderr()}")


def states(data: dict[str, Any]) -> dict[str, str]:
    return {s["name"]: s["state"] for s in data["servers"]}


def assert_alive(server: UiServer) -> None:
    assert server.proc is not None
    assert server.proc.poll() is None, server.stderr()
    assert "Traceback" not in server.stderr() and "cancel scope" not in server.stderr(), server.stderr()


def test_three_reloads_in_a_row_keep_the_dashboard_serving(ui: UiSetup) -> None:
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    ui.trust()
    server = ui.start()
    wait_for(server, lambda d: states(d).get("echo") == "ready", "echo ready")
    for generation in (1, 2, 3):
        status, text = server.request("/api/reload", method="POST")
        assert status == 200, text
        wait_for(
            server,
            lambda d, g=generation: d["generation"] == g and states(d).get("echo") == "ready",
            f"generation {generation} with echo ready",
        )
    assert_alive(server)
    # the dashboard's session is the new runtime's: a call through it works
    ui.write("notes.txt", "still here\n")
    status, text = server.request(
        "/api/tools/call", method="POST", body={"name": "fs.read", "arguments": {"path": "notes.txt"}}
    )
    assert status == 200 and json.loads(text)["ok"] is True and "still here" in text, text


def test_two_plugin_toggles_reopen_twice(ui: UiSetup) -> None:
    shutil.copytree(
        peers.REPO / "tests" / "fixtures" / "plugins" / "codex" / "release-notes", ui.home / "plugins" / "release-notes"
    )
    server = ui.start()
    url = "/api/plugins/release-notes/enabled"
    for generation, enabled in ((1, False), (2, True)):
        status, text = server.request(
            url, method="POST", body={"scope": "user", "enabled": enabled, "contribution": "skill/changelog"}
        )
        assert status == 200, text
        wait_for(server, lambda d, g=generation: d["generation"] == g, f"generation {generation}")
    assert_alive(server)
    skills = {s["name"] for s in server.json("/api/skills")["skills"]}
    assert "release-notes:changelog" in skills


@pytest.fixture
def catalog(ui: UiSetup) -> Path:
    return ui.catalog({"entries": [echo_entry(description=ECHO_DESCRIPTION)]})


def test_trust_then_install_reopen_twice(ui: UiSetup, catalog: Path) -> None:
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    server = ui.start()
    wait_for(server, lambda d: states(d).get("echo") == "untrusted", "echo untrusted")
    status, text = server.request("/api/trust", method="POST")
    assert status == 200, text
    wait_for(server, lambda d: d["generation"] == 1 and states(d).get("echo") == "ready", "trusted, echo ready")
    outcome = install(server, {"name": "echo-server", "scope": "user", "verify": False})
    assert outcome["ok"] is True, outcome
    wait_for(
        server,
        lambda d: d["generation"] == 2 and states(d).get("echo-server") == "ready" and states(d).get("echo") == "ready",
        "installed, both ready",
    )
    assert_alive(server)
