"""An install from the dashboard means it runs: against a real ``kairox ui`` process and a
local catalog document, over HTTP."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from ui_helpers import ECHO_DESCRIPTION, NEVER_HERE, UiServer, UiSetup, echo_entry, install

pytestmark = pytest.mark.integration

CLI_WORDS = ("--force", "--ignore-requirements", "--input", "kairox catalog", "run the command again")


@pytest.fixture
def catalog(ui: UiSetup) -> Path:
    dies = {
        "name": "dies",
        "description": "Exits at once",
        "launch": {"command": sys.executable, "args": ["-c", "import sys; sys.exit('bad config here')"]},
    }
    return ui.catalog({"entries": [echo_entry(description=ECHO_DESCRIPTION), dies, NEVER_HERE]})


def test_a_failed_verify_leaves_the_file_byte_identical(ui: UiSetup, catalog: Path) -> None:
    config = ui.write("kairox.toml", "# mine\n[policy]   # spaced as I like it\ninclude_temp_dir = true\n")
    before = config.read_bytes()
    server = ui.start()
    outcome = install(server, {"name": "dies", "scope": "workspace"})
    assert outcome["ok"] is False, outcome
    assert outcome["report"]["verification"]["outcome"] == "failed", outcome
    assert config.read_bytes() == before
    assert not outcome["report"]["written"]


def test_errors_in_the_page_use_no_cli_vocabulary(ui: UiSetup, catalog: Path) -> None:
    server = ui.start()
    first = install(server, {"name": "echo-server", "scope": "workspace", "verify": False})
    assert first["ok"] is True, first
    again = install(server, {"name": "echo-server", "scope": "workspace", "verify": False})
    unmet = install(server, {"name": "never-here", "scope": "workspace"})
    for outcome in (again, unmet):
        assert outcome["ok"] is False, outcome
        for word in CLI_WORDS:
            assert word not in outcome["error"], outcome["error"]
    assert "already exists" in again["error"] and "replace an existing entry" in again["error"]
    assert "kairox-no-such-program" in unmet["error"]


def states(server: UiServer) -> dict[str, str]:
    return {s["name"]: s["state"] for s in server.json("/api/status")["servers"]}


def test_a_workspace_install_offers_the_change_for_trust_and_then_runs(ui: UiSetup, catalog: Path) -> None:
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    ui.trust()
    server = ui.start()
    outcome = install(server, {"name": "echo-server", "scope": "workspace"})
    assert outcome["ok"] is True and outcome["report"]["verification"]["outcome"] == "ready", outcome
    # the runtime reopened before the outcome: what the install wrote waits for the user's trust
    offered = {i["name"]: i for i in outcome["trust"]}
    assert "echo-server" in offered and any("well_behaved.py" in r for r in offered["echo-server"]["runs"])
    assert states(server)["echo-server"] == "untrusted"
    status, text = server.request("/api/trust", method="POST")
    assert status == 200, text
    deadline = time.monotonic() + 60
    while states(server).get("echo-server") != "ready":
        assert time.monotonic() < deadline, server.json("/api/status")
        time.sleep(0.1)


def test_a_user_install_needs_no_trust(ui: UiSetup, catalog: Path) -> None:
    server = ui.start()
    outcome = install(server, {"name": "echo-server", "scope": "user", "verify": False})
    assert outcome["ok"] is True and "trust" not in outcome, outcome
