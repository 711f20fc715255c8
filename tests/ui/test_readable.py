"""The dashboard reads as the tools users know: a trace whose rows open to a call's arguments
and result (the config's secret values masked, prose as written), approvals in it; a
marketplace that says what is installed; only the actions a server's state allows; API errors
that read as written.
"""

from __future__ import annotations

import json
from typing import Any

import peers
import pytest
from test_accessibility import axe
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
    assert axe(page) == []  # the opened rows too
    assert SECRET not in page.content()
    assert SECRET not in server.request("/api/events")[1]


#: a 1x1 PNG, as a data: URL (an icon the page can show)
PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@pytest.fixture
def catalog(ui: UiSetup) -> None:
    argv = peers.fixture_server("well_behaved")
    launch = {"command": argv[0], "args": [argv[1], "--name", "echo"]}
    kairox_doc = {
        "entries": [
            {"name": "echo-server", "requirements": [{"runtime": "python", "version": ">=3.10"}], "launch": launch},
            {"name": "quiet", "description": "installed, switched off", "launch": launch},
            {"name": "fresh", "description": "not installed", "launch": launch},
        ]
    }
    # an MCP registry document (server.json): icons of every kind, only some fit to show
    registry_doc = {
        "servers": [
            {
                "name": "io.example/pics",
                "description": "A remote server with icons",
                "version": "1.0.0",
                "remotes": [{"type": "streamable-http", "url": "https://mcp.example.com/mcp"}],
                "icons": [
                    {"src": "javascript:alert(1)"},
                    {"src": "http://tracker.example/i.png"},
                    {"src": "https://cdn.example.com/pics.png", "mimeType": "image/png"},
                    {"src": "data:text/html;base64,PHNjcmlwdD4=", "mimeType": "image/png"},
                    {"src": PNG, "mimeType": "image/png", "sizes": ["1x1"]},
                ],
            }
        ]
    }
    (ui.home / "team.json").write_text(json.dumps(kairox_doc), encoding="utf-8")
    (ui.home / "registry.json").write_text(json.dumps(registry_doc), encoding="utf-8")
    ui.write(
        "kairox.toml",
        "[catalog]\nbuiltin = false\n\n"
        f'[[catalog.sources]]\nname = "team"\nurl = "{(ui.home / "team.json").as_uri()}"\n\n'
        f'[[catalog.sources]]\nname = "registry"\nurl = "{(ui.home / "registry.json").as_uri()}"\n',
        where="home",
    )
    ui.mcp_server("quiet", "well_behaved", "--name", "quiet", where="home")
    with (ui.home / "kairox.toml").open("a", encoding="utf-8") as f:
        f.write("enabled = false\n")
    ui.mcp_server("echo-server", "well_behaved", "--name", "echo")
    ui.trust()


def test_the_marketplace_says_what_is_installed_where_and_shows_data_icons(
    ui: UiSetup, page: Any, catalog: None
) -> None:
    server = ui.start()
    rows = {e["name"]: e for e in server.json("/api/marketplace/search?q=")["entries"]}
    assert rows["quiet"]["installed"] == [{"scope": "user", "enabled": False}]
    assert rows["fresh"]["installed"] == [] and rows["fresh"]["state"] is None
    assert rows["echo-server"]["requirements"] == ["python >=3.10"]
    # only a data: image is shown (the page's CSP loads no remote image); the catalog keeps https
    assert rows["pics"]["icon"] == PNG
    detail = server.json("/api/marketplace/entry?key=" + rows["pics"]["key"])
    assert detail["icons"] == ["https://cdn.example.com/pics.png", PNG]

    open_page(page, server, "/marketplace")
    echo = page.locator('[data-entry="echo-server"][data-installed="workspace"]')
    echo.locator('.installed[data-state="ready"]').wait_for(timeout=60_000)  # the list follows the runtime
    assert "needs python >=3.10" in echo.inner_text()
    assert "installed: workspace, ready" in echo.inner_text()
    quiet = page.locator('[data-entry="quiet"][data-installed="user"]')
    assert "installed: user (disabled)" in quiet.inner_text()
    page.locator('[data-entry="fresh"][data-installed="no"]').wait_for()
    icon = page.locator('[data-entry="pics"] img.icon')
    assert icon.get_attribute("src") == PNG
    assert icon.get_attribute("referrerpolicy") == "no-referrer"
    assert icon.evaluate("i => [i.complete, i.naturalWidth, i.width, i.height]") == [True, 1, 32, 32]
    assert page.locator("img").count() == 1  # no other icon of the document in the page
    # Uninstall is offered where there is something to remove, only
    page.locator('[data-entry="fresh"]').click()
    page.locator('.entry-detail[data-entry="fresh"] [data-installed="no"]').wait_for()
    assert page.locator('.entry-detail [data-action="uninstall"]').count() == 0
    page.locator('[data-entry="quiet"]').click()
    page.locator('.entry-detail[data-entry="quiet"] [data-action="uninstall"]').wait_for()
    assert axe(page) == []


def test_a_server_offers_only_what_its_state_allows_and_errors_read_as_written(ui: UiSetup, page: Any) -> None:
    ui.mcp_server("echo", "well_behaved", "--name", "echo", where="home")
    with (ui.home / "kairox.toml").open("a", encoding="utf-8") as f:
        # entries that do not validate: only editing the file helps
        f.write('\n[mcp_servers.clock]\ncommand = "x"\nenv = { CLOCK_API_KEY = "${CLOCK_API_KEY}" }\n')
        f.write(f'\n[mcp_servers.bad]\ncommand = "x"\nenv = {{ API_TOKEN = "{SECRET}" }}\ntool_timeout = "{SECRET}"\n')
    server = ui.start()
    open_page(page, server)
    page.locator('[data-server="echo"][data-state="ready"]').wait_for(timeout=60_000)
    actions = {s["name"]: s["actions"] for s in server.json("/api/status")["servers"]}
    assert actions == {"echo": ["restart", "stop"], "clock": [], "bad": []}
    assert page.locator('[data-server="clock"] .actions button').count() == 0
    # refused by the API too, in kairox's words (not "<redacted> variable ..."), secrets masked
    status, text = server.request("/api/servers/clock/restart", method="POST", body={"kind": "mcp"})
    assert status == 409, text
    error = json.loads(text)["error"]
    assert "mcp_servers.clock.env.CLOCK_API_KEY: environment variable CLOCK_API_KEY is not set" in error
    status, text = server.request("/api/servers/bad/restart", method="POST", body={"kind": "mcp"})
    assert status == 409 and "mcp_servers.bad.tool_timeout: expected a number, got '<redacted>'" in text, text
    assert SECRET not in text
    # stopped: Start, and no Stop
    page.locator('[data-server="echo"] [data-action="stop"]').click()
    page.locator('[data-server="echo"][data-state="stopped"]').wait_for()
    buttons = page.locator('[data-server="echo"] .actions button')
    assert buttons.count() == 1 and buttons.inner_text() == "Start"
    status, text = server.request("/api/servers/echo/stop", method="POST", body={"kind": "mcp"})
    assert status == 409 and "echo is stopped: nothing to stop" in text, text
    page.locator('[data-server="echo"] [data-action="restart"]').click()
    page.locator('[data-server="echo"][data-state="ready"]').wait_for(timeout=60_000)
