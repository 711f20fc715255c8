"""The dashboard at phone width, by keyboard and for a screen reader: ``kairox ui`` as a process,
Debian's chromium driven by Playwright, axe-core (npm) injected into every view.

With ``KAIROX_UI_NARROW_SHOTS=DIR`` the narrow-width test writes a screenshot of each view there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import peers
import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect
from ui_helpers import UiSetup, echo_entry, write_skill

pytestmark = pytest.mark.integration

TITLES = {
    "/": "Status",
    "/marketplace": "Marketplace",
    "/skills": "Skills",
    "/plugins": "Plugins",
    "/tools": "Tools",
    "/events": "Trace",
}


def furnish(ui: UiSetup) -> None:
    """A workspace with something on every view: a ready and a failed server, a skill, a
    bundle, a local catalog with a long description, trusted."""
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    ui.mcp_server("crash", "crash_on_start")
    write_skill(ui, "hello")
    shutil.copytree(
        peers.REPO / "tests" / "fixtures" / "plugins" / "codex" / "release-notes", ui.home / "plugins" / "release-notes"
    )
    echo = echo_entry(
        title="Echo",
        description="A small local MCP server that echoes what it is sent back to the caller (the fixture)",
        requirements=[{"runtime": "python", "version": ">=3.10"}],
    )
    ui.catalog({"entries": [echo]})
    ui.trust()


def go(page: Any, server: Any, path: str) -> None:
    """``path`` of the dashboard in this tab (the first visit takes the token of the printed URL)."""
    if not page.url.startswith(server.base):
        page.goto(server.url)
        page.wait_for_selector('#conn[data-connected="true"]')
    page.goto(server.base + path)
    page.wait_for_selector('#conn[data-connected="true"]')


def open_status(page: Any) -> None:
    page.locator('[data-server="echo"][data-state="ready"]').wait_for(timeout=60_000)
    page.locator('[data-server="crash"][data-state="failed"]').wait_for(timeout=60_000)


def open_marketplace(page: Any) -> None:
    page.locator('[data-entry="echo-server"]').click()
    page.locator('.entry-detail [data-action="install"]').wait_for()


def open_skills(page: Any) -> None:
    page.locator('[data-skill="hello"] a.name').click()
    page.locator('.skill-detail [data-action="render"]').wait_for()


def open_plugins(page: Any) -> None:
    page.locator('[data-plugin="release-notes"] [data-contribution]').first.wait_for()


def open_tools(page: Any) -> None:
    page.locator('[data-tool="fs.read"] a').click()
    page.locator('.tool-detail [data-action="call"]').wait_for()


def open_trace(page: Any) -> None:
    page.locator('table.trace tr[data-kind="McpServerReady"]').first.wait_for(timeout=60_000)


#: path -> (what to do to show the view's detail, the elements that must be on screen)
VIEWS: dict[str, tuple[Callable[[Any], None], tuple[str, ...]]] = {
    "/": (open_status, ('[data-server="crash"] [data-action="restart"]', '[data-server="echo"] [data-action="stop"]')),
    "/marketplace": (
        open_marketplace,
        (".entry-detail", '.entry-detail [data-action="install"]', 'select[name="scope"]'),
    ),
    "/skills": (open_skills, (".skill-detail", '.skill-detail [data-action="render"]')),
    "/plugins": (open_plugins, ('[data-plugin="release-notes"] [data-action="toggle-plugin"]',)),
    "/tools": (open_tools, (".tool-detail", '.tool-detail input[name="path"]', '.tool-detail [data-action="call"]')),
    "/events": (open_trace, ('select[name="kind"]', 'input[name="server"]')),
}


def ask_for_approval(page: Any, server: Any, marker: Path) -> Any:
    """Call ``shell.exec`` from the tools view (the policy asks); the question's dialog."""
    go(page, server, "/tools")
    page.locator('[data-tool="shell.exec"][data-decision="ask"] a').click()
    page.locator('.tool-detail input[name="command"]').fill(f"echo ran > {marker}")
    page.locator('.tool-detail [data-action="call"]').click()
    dialog = page.locator("dialog#approvals")
    dialog.locator("[data-approval]").wait_for()
    return dialog


def _box(element: Any) -> Any:
    """``element`` scrolled into view, and its box. A live update may render the element anew
    between Playwright finding it and scrolling to it ("not attached to the DOM"), or between
    the scroll and the box (no box: the element scrolled to is gone): found again."""
    box = None
    for attempt in range(3):
        try:
            element.scroll_into_view_if_needed()
            box = element.bounding_box()
        except PlaywrightError as exc:
            if "not attached" not in str(exc) or attempt == 2:
                raise
            continue
        if box is not None:
            return box
    return box


def assert_fits(page: Any, width: int, selectors: tuple[str, ...], where: str) -> None:
    scroll = page.evaluate("[document.documentElement.scrollWidth, document.body.scrollWidth]")
    assert max(scroll) <= width, f"{where}: the page is {scroll} px wide at {width} px"
    for selector in selectors:
        box = _box(page.locator(selector).first)
        assert box is not None, f"{where}: {selector} is not rendered"
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, f"{where}: {selector} is off screen: {box}"
        assert box["y"] >= 0 and box["y"] < page.viewport_size["height"], f"{where}: {selector} is off screen: {box}"


@pytest.mark.parametrize("width", [360, 390])
def test_every_view_fits_a_phone_screen(ui: UiSetup, page: Any, width: int, tmp_path: Path) -> None:
    furnish(ui)
    server = ui.start()
    page.set_viewport_size({"width": width, "height": 800})
    shots = Path(os.environ.get("KAIROX_UI_NARROW_SHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    for path, (show, selectors) in VIEWS.items():
        go(page, server, path)
        show(page)
        page.wait_for_timeout(300)  # the last live update painted
        name = TITLES[path].lower()
        page.screenshot(path=str(shots / f"{name}-{width}.png"), full_page=True)
        assert_fits(page, width, selectors, f"{path} at {width}")
    dialog = ask_for_approval(page, server, ui.workspace / "ran.txt")
    page.screenshot(path=str(shots / f"approval-{width}.png"))
    assert_fits(
        page, width, ("dialog#approvals", '[data-answer="deny"]', '[data-answer="allow_once"]'), f"approval at {width}"
    )
    dialog.locator('[data-answer="deny"]').click()
    page.locator('pre.result[data-outcome="denied"]').wait_for()


def axe(page: Any) -> list[dict[str, Any]]:
    """The serious and critical violations axe-core finds on the page (WCAG 2.x A and AA)."""
    if not page.evaluate("typeof window.axe === 'object'"):
        # evaluated through the devtools protocol: the page's CSP (script-src 'self') is not in the way
        page.evaluate(peers.axe_core_js().read_text(encoding="utf-8"))
    result = page.evaluate(
        "async () => (await axe.run(document, {runOnly: {type: 'tag', values: "
        "['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']}}))"
        ".violations.map(v => ({id: v.id, impact: v.impact, help: v.help, "
        "nodes: v.nodes.map(n => n.target.join(' ') + ' ' + n.failureSummary)}))"
    )
    return [v for v in result if v["impact"] in ("serious", "critical")]


def test_axe_finds_no_serious_violation_on_any_view(ui: UiSetup, page: Any) -> None:
    furnish(ui)
    server = ui.start()
    found: dict[str, list[dict[str, Any]]] = {}
    for path, (show, _) in VIEWS.items():
        go(page, server, path)
        show(page)
        found[path] = axe(page)
    ask_for_approval(page, server, ui.workspace / "ran.txt")
    found["approval"] = axe(page)
    page.set_viewport_size({"width": 360, "height": 800})
    found["approval at 360"] = axe(page)
    assert {k: v for k, v in found.items() if v} == {}


def test_each_view_has_its_title_one_h1_and_landmarks(ui: UiSetup, page: Any) -> None:
    server = ui.start()
    for path, title in TITLES.items():
        go(page, server, path)
        assert page.title() == f"{title} - kairox"
        assert page.locator("h1").all_inner_texts() == [title]
        assert page.locator("header").count() == 1 and page.locator("main").count() == 1
        assert page.locator("nav").get_attribute("aria-label")
        assert page.locator('nav a[aria-current="page"]').inner_text() == title


def test_controls_are_named_for_what_they_act_on(ui: UiSetup, page: Any) -> None:
    furnish(ui)
    server = ui.start()
    go(page, server, "/")
    open_status(page)
    # (the name a screen reader announces, from the browser's accessibility tree)
    expect(page.locator('[data-server="echo"] [data-action="restart"]')).to_have_accessible_name("Restart echo")
    expect(page.locator('[data-server="echo"] [data-action="stop"]')).to_have_accessible_name("Stop echo")
    expect(page.locator('[data-server="crash"] [data-action="restart"]')).to_have_accessible_name(
        re.compile(r"^(Restart|Start) crash$")
    )
    for path, selectors in (
        ("/marketplace", ('input[name="q"]', 'select[name="kind"]')),
        ("/events", ('select[name="kind"]', 'input[name="server"]')),
        ("/skills", ('select[name="scope"]',)),
        ("/plugins", ('select[name="scope"]',)),
    ):
        go(page, server, path)
        for selector in selectors:
            expect(page.locator(selector)).to_have_accessible_name(re.compile(r"\w"))


def test_the_failed_pill_opens_its_diagnostic_by_keyboard(ui: UiSetup, page: Any) -> None:
    ui.mcp_server("crash", "crash_on_start")
    ui.trust()
    server = ui.start()
    go(page, server, "/")
    row = page.locator('[data-server="crash"][data-state="failed"]')
    row.wait_for(timeout=60_000)
    diagnostic = row.locator("details.diagnostic")
    badge = row.locator(".pill")
    badge.focus()
    assert badge.get_attribute("aria-expanded") == "false"
    page.keyboard.press("Enter")
    assert diagnostic.evaluate("d => d.open") and badge.get_attribute("aria-expanded") == "true"
    page.keyboard.press("Space")
    assert not diagnostic.evaluate("d => d.open")
    page.keyboard.press(" ")
    assert diagnostic.evaluate("d => d.open")


def test_a_live_status_update_keeps_the_keyboard_focus(ui: UiSetup, page: Any) -> None:
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    ui.mcp_server("other", "well_behaved", "--name", "other")
    ui.trust()
    server = ui.start()
    go(page, server, "/")
    page.locator('[data-server="other"][data-state="ready"]').wait_for(timeout=60_000)
    page.locator('[data-server="echo"][data-state="ready"]').wait_for(timeout=60_000)
    page.locator('[data-server="echo"] [data-action="stop"]').focus()
    generation = page.locator(".status").get_attribute("data-generation")
    # another server's state changes: a status event re-renders the list
    status, text = server.request("/api/servers/other/stop", method="POST", body={"kind": "mcp"})
    assert status == 200, text
    page.locator('[data-server="other"][data-state="stopped"]').wait_for()
    assert page.locator(".status").get_attribute("data-generation") == generation
    focused = page.evaluate(
        "[document.activeElement.dataset.action, document.activeElement.closest('[data-server]')?.dataset.server]"
    )
    assert focused == ["stop", "echo"]
    # the focused server itself stops: its Stop goes, focus stays in its row
    page.keyboard.press("Enter")
    page.locator('[data-server="echo"][data-state="stopped"]').wait_for()
    page.wait_for_timeout(300)
    assert page.evaluate("document.activeElement.closest('[data-server]')?.dataset.server") == "echo"


def test_the_approval_question_is_a_modal_dialog_escape_denies(ui: UiSetup, page: Any) -> None:
    marker = ui.workspace / "ran.txt"
    server = ui.start()
    dialog = ask_for_approval(page, server, marker)
    call = page.locator('.tool-detail [data-action="call"]')
    assert dialog.evaluate("d => d.open && d.matches(':modal')")
    # focus is inside it, on the answer that runs nothing
    assert page.evaluate("document.activeElement.dataset.answer") == "deny"
    assert dialog.evaluate("d => d.contains(document.activeElement)")
    for _ in range(6):  # Tab stays inside the modal
        page.keyboard.press("Tab")
        assert dialog.evaluate("d => d.contains(document.activeElement) || document.activeElement === document.body")
    page.keyboard.press("Escape")
    page.locator('pre.result[data-outcome="denied"]').wait_for()
    dialog.locator("[data-approval]").wait_for(state="detached")
    assert not dialog.evaluate("d => d.open")
    assert not marker.exists()
    # focus is back where it was before the question
    assert call.evaluate("b => b === document.activeElement")


def test_failures_and_denials_stand_out_in_the_trace(ui: UiSetup, page: Any) -> None:
    ui.mcp_server("crash", "crash_on_start")
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    ui.trust()
    server = ui.start()
    dialog = ask_for_approval(page, server, ui.workspace / "ran.txt")
    dialog.locator('[data-answer="deny"]').click()
    page.locator('pre.result[data-outcome="denied"]').wait_for()
    go(page, server, "/events")
    failed = page.locator('tr[data-kind="McpServerFailed"][data-server="crash"]')
    failed.wait_for(timeout=60_000)
    assert failed.get_attribute("data-severity") == "failed"
    assert failed.locator("td.kind .tag").inner_text() == "failed"  # a word, not only a colour
    denied = page.locator('tr[data-kind="ToolCallFinished"][data-server="shell.exec"]')
    denied.wait_for()
    assert denied.get_attribute("data-severity") == "denied"
    assert denied.locator("td.kind .tag").inner_text() == "denied"
    ready = page.locator('tr[data-kind="McpServerReady"][data-server="echo"]')
    ready.wait_for(timeout=60_000)
    assert ready.get_attribute("data-severity") is None
    assert axe(page) == []  # the highlighted rows keep their contrast


def test_an_answer_that_fails_is_said_in_the_dialog(ui: UiSetup, page: Any) -> None:
    """The page behind a modal dialog is inert (its notices unheard): the error goes in the card,
    which stays open to answer again."""
    marker = ui.workspace / "ran.txt"
    server = ui.start()
    dialog = ask_for_approval(page, server, marker)
    # the dashboard answering 500 once (a stand-in for a runtime that fails to take the answer)
    page.route("**/api/approvals/**", lambda route: route.fulfill(status=500, body='{"error": "runtime busy"}'))
    dialog.locator('[data-answer="allow_once"]').click()
    alert = dialog.locator('[role="alert"]')
    alert.wait_for()
    assert alert.inner_text() == "could not answer: runtime busy"
    assert dialog.evaluate("d => d.open") and dialog.locator('[data-answer="deny"]').is_enabled()
    page.unroute("**/api/approvals/**")
    dialog.locator('[data-answer="deny"]').click()
    page.locator('pre.result[data-outcome="denied"]').wait_for()
    assert not marker.exists()


NATIVE_CONTROLS = "button, a[href], input, select, textarea, summary, label"


def clicked_but_not_controls(page: Any) -> list[str]:
    """Elements with a click (or mouse) listener that are not native controls, which a
    keyboard cannot operate (the browser's own listing of listeners, through the devtools
    protocol)."""
    cdp = page.context.new_cdp_session(page)
    try:
        every = cdp.send("Runtime.evaluate", {"expression": "Array.from(document.querySelectorAll('body *'))"})
        props = cdp.send("Runtime.getProperties", {"objectId": every["result"]["objectId"], "ownProperties": True})
        found = []
        for prop in props["result"]:
            if not prop["name"].isdigit():
                continue
            element = prop["value"]["objectId"]
            listeners = cdp.send("DOMDebugger.getEventListeners", {"objectId": element})["listeners"]
            if not any(li["type"] in ("click", "mousedown", "mouseup", "pointerdown") for li in listeners):
                continue
            shown = cdp.send(
                "Runtime.callFunctionOn",
                {
                    "objectId": element,
                    "functionDeclaration": f"function () {{ return this.matches({json.dumps(NATIVE_CONTROLS)})"
                    " ? '' : this.outerHTML.slice(0, 160); }",
                    "returnByValue": True,
                },
            )["result"]["value"]
            if shown:
                found.append(shown)
        return found
    finally:
        cdp.detach()


def test_everything_that_takes_a_click_is_a_keyboard_control(ui: UiSetup, page: Any) -> None:
    furnish(ui)
    server = ui.start()
    found: dict[str, list[str]] = {}
    for path, (show, _) in VIEWS.items():
        go(page, server, path)
        show(page)
        found[path] = clicked_but_not_controls(page)
    assert {k: v for k, v in found.items() if v} == {}


@pytest.mark.parametrize(
    ("path", "item", "panel"),
    [
        ("/tools", '[data-tool="fs.read"] a', ".tool-detail"),
        ("/skills", '[data-skill="hello"] a.name', ".skill-detail"),
        ("/marketplace", '[data-entry="echo-server"]', ".entry-detail"),
    ],
)
def test_opening_an_item_by_keyboard_takes_the_focus_to_its_detail(
    ui: UiSetup, page: Any, path: str, item: str, panel: str
) -> None:
    """At phone width the detail is under the whole list: the focus (and so the screen and a
    screen reader) goes to its heading."""
    furnish(ui)
    server = ui.start()
    page.set_viewport_size({"width": 360, "height": 800})
    go(page, server, path)
    page.locator(item).focus()
    page.keyboard.press("Enter")
    heading = page.locator(f"{panel} h2").first
    heading.wait_for()
    page.wait_for_timeout(200)
    assert heading.evaluate("h => h === document.activeElement")
    box = heading.bounding_box()
    assert box is not None and 0 <= box["y"] < 800


#: how many lines the text of an element takes (the distinct tops of its line boxes)
LINES = "(el) => { const r = document.createRange(); r.selectNodeContents(el); return new Set([...r.getClientRects()].map((b) => Math.round(b.top))).size; }"


def test_trace_times_and_server_names_read_whole_at_both_widths(ui: UiSetup, page: Any) -> None:
    """Found using the page: at 1280 px each time wrapped as "1:00:3" over "9 AM" (long details
    squeezed its column), and at 360 px a failed row's server name broke a letter or two a line."""
    ui.mcp_server("warehouse-inventory", "crash_on_start")
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    ui.trust()
    server = ui.start()
    go(page, server, "/events")
    failed = page.locator('tr[data-kind="McpServerFailed"][data-server="warehouse-inventory"]')
    failed.wait_for(timeout=60_000)
    page.locator('tr[data-kind="ToolsChanged"][data-server="mcp:echo"]').wait_for(timeout=60_000)
    ready = page.locator('tr[data-kind="McpServerReady"][data-server="echo"] td.details')
    assert re.search(r"startup_s=\d+(?:\.\d{1,3})?(?![\d.])", ready.inner_text())  # not every digit of a float
    times = page.locator("table.trace tbody tr td:first-child")
    assert [times.nth(i).evaluate(LINES) for i in range(times.count())] == [1] * times.count()
    page.set_viewport_size({"width": 360, "height": 740})
    assert failed.locator("td").nth(2).evaluate(LINES) == 1
    assert failed.locator("td").nth(0).evaluate(LINES) == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 360


ACTIVE = "() => { const e = document.activeElement; return e ? e.tagName + (e.id ? '#' + e.id : '') + ' ' + (e.getAttribute('aria-label') || e.textContent) : null; }"


def test_a_button_pressed_by_keyboard_keeps_the_focus_while_its_request_runs(ui: UiSetup, page: Any) -> None:
    """Found using the page by keyboard: a button disabled while its request ran lost the focus to
    <body> (Chrome blurs a disabled control), so after *Disable greet* or *Trust this workspace*
    the next Tab started again at the top of the page."""
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    write_skill(ui, "hello")
    server = ui.start()
    go(page, server, "/")
    page.locator('[data-action="trust-workspace"]').focus()
    page.keyboard.press("Enter")
    page.locator('[data-server="echo"][data-state="ready"]').wait_for(timeout=60_000)
    assert page.locator("section.trust").count() == 0
    assert page.evaluate(ACTIVE) == "H1#title Status"  # its box is gone: the page's heading, not <body>
    go(page, server, "/skills")
    page.locator('[data-skill="hello"] [data-action="toggle"]').focus()
    page.keyboard.press("Enter")
    page.locator('[data-skill="hello"][data-enabled="false"]').wait_for()
    expect(page.locator('[data-skill="hello"] [data-action="toggle"]')).to_be_enabled()
    assert page.evaluate(ACTIVE) == "BUTTON Enable hello"


def test_every_view_loads_without_a_console_error_and_counts_read_right(ui: UiSetup, page: Any) -> None:
    """Found using the page: each view logged a 404 (the browser's own /favicon.ico request) in
    the console, and the Status page said "1 skills"."""
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    write_skill(ui, "hello")
    ui.trust()
    server = ui.start()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    commands: dict[str, list[str]] = {}
    for path in TITLES:
        go(page, server, path)
        page.wait_for_timeout(300)  # the icon is asked for after the load
        # the page's own controls, not commands to type: "the same files as kairox skills enable"
        commands[path] = re.findall(
            r"\bkairox (?:skills|plugins?|trust|catalog|config|status|mcp|init) [a-z]+",
            page.locator("main").inner_text(),
        )
    assert errors == []
    assert commands == {path: [] for path in TITLES}
    go(page, server, "/")
    page.locator('[data-server="echo"][data-state="ready"]').wait_for(timeout=60_000)
    assert re.search(r"\b1 skill\b", page.locator(".status > p.muted").first.inner_text())


def test_a_long_server_detail_is_shown_whole_on_a_wide_screen(ui: UiSetup, page: Any) -> None:
    """Found using the page at 1280 px: a long detail ("...; 1 tool not offered (NAME: must run
    as tasks)") was cut with an ellipsis, and nothing on the page showed the rest."""
    name = "a-server-whose-name-is-long-enough-to-push-its-detail-past-the-edge-of-a-wide-window"
    ui.mcp_server(name, "crash_on_start")
    ui.trust()
    server = ui.start()
    go(page, server, "/")
    detail = page.locator(f'[data-server="{name}"][data-state="failed"] .detail')
    detail.wait_for(timeout=60_000)
    assert "(exit code 3)" in detail.inner_text()
    assert detail.evaluate("(el) => el.scrollWidth <= el.clientWidth")
