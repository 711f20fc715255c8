"""The page over a backend that goes away and comes back, and over reopened runtimes: ``kairox ui``
as a process, chromium driven by Playwright."""

from __future__ import annotations

import json
import shutil
from typing import Any

import peers
import pytest
from ui_helpers import UiSetup, open_page

pytestmark = pytest.mark.integration


def test_a_stopped_backend_is_shown_at_once_and_reconnected_when_it_returns(ui: UiSetup, page: Any) -> None:
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    shutil.copytree(
        peers.REPO / "tests" / "fixtures" / "plugins" / "codex" / "release-notes", ui.home / "plugins" / "release-notes"
    )
    ui.trust()
    first = ui.start()
    port = int(first.base.rsplit(":", 1)[1])
    open_page(page, first)
    page.evaluate("window.__kept = 'same document'")
    ready = page.locator('[data-server="echo"][data-state="ready"]')
    ready.wait_for(timeout=60_000)
    assert ready.locator('[data-action="stop"]').is_enabled()

    first.stop()  # the process ends (SIGTERM, as a terminal's close or a service manager sends)
    banner = page.locator('[data-banner="disconnected"][role="alert"]')
    banner.wait_for(timeout=5_000)
    assert "not answering" in banner.inner_text()
    assert page.locator("#conn").get_attribute("data-connected") == "false"
    page.locator('[data-server="echo"][data-state="unknown"]').wait_for(timeout=5_000)
    assert page.locator('[data-server="echo"] button').count() == 0  # no restart/stop offered
    assert page.locator("#main button:enabled").count() == 0
    # a bundle's pill too (it said "loaded", in grey)
    assert page.locator('[data-kind="bundle"][data-server="release-notes"] .pill').inner_text() == "unknown"

    second = ui.start(port)  # the same port, the same home: the token kept there
    assert second.token == first.token
    ready.wait_for(timeout=60_000)  # by itself, without a reload of the page
    assert banner.count() == 0
    assert page.locator("#conn").get_attribute("data-connected") == "true"
    assert ready.locator('[data-action="stop"]').is_enabled()
    assert page.locator('[data-kind="bundle"][data-server="release-notes"] .pill').inner_text() == "loaded"
    assert page.evaluate("window.__kept") == "same document"


def test_plugin_toggles_in_the_page_reopen_the_runtime_each_time(ui: UiSetup, page: Any) -> None:
    shutil.copytree(
        peers.REPO / "tests" / "fixtures" / "plugins" / "codex" / "release-notes", ui.home / "plugins" / "release-notes"
    )
    server = ui.start()
    open_page(page, server, "/plugins")
    item = '[data-plugin="release-notes"] [data-contribution="skill/changelog"][data-enabled="{}"]'
    for generation, (before, after) in enumerate((("true", "false"), ("false", "true"), ("true", "false")), 1):
        page.locator(item.format(before)).locator('[data-action="toggle"]').click()
        page.locator(item.format(after)).wait_for()
        page.wait_for_function(
            "g => fetch('/api/status', {headers: {authorization: 'Bearer ' + sessionStorage.getItem('kairox-ui-token')}})"
            ".then(r => r.json()).then(d => d.generation === g)",
            arg=generation,
        )
    assert server.proc is not None and server.proc.poll() is None, server.stderr()
    assert page.locator("#conn").get_attribute("data-connected") == "true"
    assert page.locator('[data-banner="disconnected"]').count() == 0
    inspected = json.loads(ui.cli("plugin", "inspect", "release-notes", "--json").stdout)
    assert {i["name"]: i["enabled"] for i in inspected["inventory"]} == {"changelog": False, "notes": True}


def test_a_skill_file_added_on_disk_appears_in_the_open_page(ui: UiSetup, page: Any) -> None:
    ui.write(".kairox/skills/hello.md", "---\nname: hello\ndescription: hi\nscope: workspace\n---\nHello.\n")
    server = ui.start()
    open_page(page, server, "/skills")
    page.locator('[data-skill="hello"]').wait_for()
    page.evaluate("window.__kept = 'same document'")
    ui.write(
        ".kairox/skills/added.md", "---\nname: added\ndescription: Written by an editor\nscope: workspace\n---\nHi.\n"
    )
    page.locator('[data-skill="added"]').wait_for(timeout=15_000)
    (ui.workspace / ".kairox" / "skills" / "hello.md").unlink()
    page.locator('[data-skill="hello"]').wait_for(state="detached", timeout=15_000)
    assert page.evaluate("window.__kept") == "same document"  # updated live, not reloaded
    assert {s["name"] for s in server.json("/api/skills")["skills"]} >= {"added"}
    assert server.json("/api/status")["generation"] == 0  # a rescan, not a reopen


def test_a_plugin_folder_added_on_disk_appears_in_the_open_page(ui: UiSetup, page: Any) -> None:
    (ui.home / "plugins").mkdir()
    server = ui.start()
    open_page(page, server, "/plugins")
    shutil.copytree(
        peers.REPO / "tests" / "fixtures" / "plugins" / "codex" / "release-notes", ui.home / "plugins" / "release-notes"
    )
    page.locator('[data-plugin="release-notes"]').first.wait_for(timeout=15_000)


def test_a_skill_folder_created_on_disk_is_watched_from_then_on(ui: UiSetup, page: Any) -> None:
    ui.write(".kairox/settings.json", "{}\n")  # .kairox exists, .kairox/skills does not
    server = ui.start()
    open_page(page, server, "/skills")
    ui.write(".kairox/skills/first.md", "---\nname: first\ndescription: one\nscope: workspace\n---\nOne.\n")
    page.locator('[data-skill="first"]').wait_for(timeout=15_000)
    ui.write(".kairox/skills/second.md", "---\nname: second\ndescription: two\nscope: workspace\n---\nTwo.\n")
    page.locator('[data-skill="second"]').wait_for(timeout=15_000)


def test_the_marketplace_lists_again_when_the_runtime_is_reopened(ui: UiSetup, page: Any) -> None:
    entry = {"name": "first-entry", "launch": {"command": "kairox-no-such-program"}}
    path = ui.catalog({"entries": [entry]})
    server = ui.start()
    open_page(page, server, "/marketplace")
    page.locator('[data-entry="first-entry"]').wait_for()
    page.evaluate("window.__kept = 'same document'")
    path.write_text(json.dumps({"entries": [entry, {**entry, "name": "second-entry"}]}), encoding="utf-8")
    status, text = server.request("/api/reload", method="POST")  # as a trust or an install elsewhere does
    assert status == 200, text
    page.locator('[data-entry="second-entry"]').wait_for(timeout=15_000)
    assert page.evaluate("window.__kept") == "same document"
