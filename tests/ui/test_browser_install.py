"""Installing from the Marketplace page ends with the server running or says exactly what is
missing and offers it: ``kairox ui`` as a process, chromium driven by Playwright."""

from __future__ import annotations

import time
from typing import Any

import pytest
from playwright.sync_api import expect
from ui_helpers import UiSetup, echo_entry

pytestmark = pytest.mark.integration

TYPED = "typed-secret-4f1c9a"


def test_install_offers_what_is_missing_and_ends_running(ui: UiSetup, page: Any) -> None:
    document = {
        "entries": [
            echo_entry(),
            echo_entry("clock", inputs=[{"name": "CLOCK_API_KEY", "secret": True, "required": True}]),
            {
                "name": "never-here",
                "requirements": [{"runtime": "kairox-no-such-program"}],
                "launch": {"command": "kairox-no-such-program"},
            },
        ]
    }
    ui.catalog(document)
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    ui.trust()
    server = ui.start()
    page.goto(server.url)
    page.wait_for_selector('#conn[data-connected="true"]')
    page.goto(server.base + "/marketplace")
    page.wait_for_selector('#conn[data-connected="true"]')

    page.locator('input[name="q"]').fill("clock")  # "1 entry", not "1 entries"
    expect(page.locator(".entries > p.muted").first).to_have_text("1 entry from team (3)")
    page.locator('input[name="q"]').fill("")
    page.locator('[data-entry="never-here"]').wait_for()

    # requirements not met: Install is not offered
    page.locator('[data-entry="never-here"]').click()
    page.locator('.entry-detail[data-entry="never-here"] [data-unmet="true"]').wait_for()
    assert page.locator('[data-action="install"]').is_disabled()

    # a secret: the value typed verifies it; the page names the variable to export
    page.locator('[data-entry="clock"]').click()
    page.locator('.entry-detail[data-entry="clock"]').wait_for()
    # left empty, the verify fails (the variable is not set) and nothing is written; each
    # step says its state once (it read "failed: failed: environment variable ...")
    page.locator('[data-action="install"]').click()
    page.locator('.outcome[data-outcome="failed"]').wait_for(timeout=90_000)
    failed = page.locator('ol.steps li[data-state="failed"]').inner_text()
    assert "failed: environment variable CLOCK_API_KEY is not set" in failed and "failed: failed" not in failed
    assert "${CLOCK_API_KEY:-default}" in failed  # the hint as written, not "<redacted>"
    assert not (ui.workspace / "kairox.toml").read_text().count("clock")
    page.locator('input[name="input:CLOCK_API_KEY"]').fill(TYPED)
    page.locator('select[name="scope"]').select_option("user")
    page.locator('[data-action="install"]').click()
    needs = page.locator('.outcome[data-outcome="ok"] [data-needs="env"]')
    needs.wait_for(timeout=90_000)
    assert "export CLOCK_API_KEY=" in needs.inner_text()
    assert TYPED not in (ui.home / "kairox.toml").read_text()

    # a workspace install: offered for trust in the flow, then it runs
    page.locator('[data-entry="echo-server"]').click()
    page.locator('.entry-detail[data-entry="echo-server"]').wait_for()
    page.locator('[data-action="install"]').click()
    offer = page.locator('.outcome[data-outcome="ok"] [data-needs="trust"]')
    offer.wait_for(timeout=90_000)
    assert "echo-server" in offer.inner_text() and "well_behaved.py" in offer.inner_text()
    offer.locator('[data-action="trust-install"]').focus()
    page.keyboard.press("Enter")
    page.locator('[data-needs="trust"][data-trusted="true"]').wait_for()
    # by keyboard, the focus goes to what the button did (it stays disabled), not <body>
    assert page.evaluate("document.activeElement.textContent").startswith("trusted: it starts now")
    deadline = time.monotonic() + 60
    while {s["name"]: s["state"] for s in server.json("/api/status")["servers"]}.get("echo-server") != "ready":
        assert time.monotonic() < deadline, server.json("/api/status")
        time.sleep(0.1)
    # the open entry says what the list says (it kept saying "not installed")
    where = page.locator('.entry-detail[data-entry="echo-server"] [data-where]')
    expect(where).to_have_text("installed: workspace, ready", timeout=30_000)
