"""The dashboard reads as the tools users know: a trace whose rows open to a call's arguments
and result (the config's secret values masked, prose as written), approvals in it; a
marketplace that says what is installed; only the actions a server's state allows; API errors
that read as written.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_browser import open_page
from ui_helpers import UiSetup

pytestmark = pytest.mark.integration

#: a value the user's config holds as a secret (an MCP server's env)
SECRET = "s3cret-value-1234"


def secret_in_user_config(ui: UiSetup) -> None:
    ui.mcp_server("echo", "well_behaved", "--name", "echo", where="home")
    path = ui.home / "kairox.toml"
    path.write_text(path.read_text() + f'env = {{ ECHO_API_TOKEN = "{SECRET}" }}\n', encoding="utf-8")


def test_a_trace_row_opens_to_the_call_masked_and_the_approval_who_answered(ui: UiSetup, page: Any) -> None:
    secret_in_user_config(ui)
    # prose that pattern redaction would garble ("password: kept" read as a key and its value)
    ui.write(f"{SECRET}.txt", f"the key {SECRET} is here; password: kept as written\n" + ("x" * 80 + "\n") * 200)
    marker = ui.workspace / "ran.txt"
    server = ui.start()
    open_page(page, server, "/tools")
    status, text = server.request(
        "/api/tools/call", method="POST", body={"name": "fs.read", "arguments": {"path": f"{SECRET}.txt"}}
    )
    assert status == 200 and json.loads(text)["ok"], text
    # a call the policy asks about, denied in the page
    page.locator('[data-tool="shell.exec"][data-decision="ask"] a').click()
    page.locator('.tool-detail input[name="command"]').fill(f"echo {SECRET} > {marker}")
    page.locator('.tool-detail [data-action="call"]').click()
    page.locator("[data-approval]").locator('[data-answer="deny"]').click()
    page.locator('pre.result[data-outcome="denied"]').wait_for()

    page.goto(server.base + "/events")
    row = page.locator('tr[data-kind="ToolCallFinished"][data-server="fs.read"][data-call]')
    details = row.locator("details.call")
    assert not details.evaluate("d => d.open")
    row.locator("summary").press("Enter")  # a keyboard control
    assert details.evaluate("d => d.open")
    assert row.locator('pre[data-argument="path"]').inner_text() == "<redacted>.txt"
    result = row.locator('pre.result[data-result="ok"]').inner_text()
    assert "\tthe key <redacted> is here; password: kept as written\n" in result
    assert result.endswith("more characters)")  # cut: bounded
    assert len(result) < 4_100

    asked = page.locator('tr[data-kind="ApprovalAsked"][data-server="shell.exec"][data-call]')
    asked.locator("summary").click()
    assert asked.locator('pre[data-argument="command"]').inner_text() == f"echo <redacted> > {marker}"
    answered = page.locator('tr[data-kind="ApprovalAnswered"][data-severity="denied"]')
    assert "answer=deny" in answered.inner_text() and "answered_by=you, in the dashboard" in answered.inner_text()
    assert "reason=" in asked.inner_text()  # what asked
    denied = page.locator('tr[data-kind="ToolCallFinished"][data-server="shell.exec"][data-severity="denied"]')
    assert denied.count() == 1
    assert not marker.exists()
    assert SECRET not in page.content()
    assert SECRET not in server.request("/api/events")[1]
