"""Helpers of the dashboard tests: the dashboard as a real process (``kairox ui --no-browser``) and a real browser (Debian's
chromium driven by Playwright; never ``playwright install``).

Browser tests skip when chromium is missing, unless ``CI`` is set (then they fail).
With ``KAIROX_UI_SCREENSHOTS=docs/images/ui`` the tests write one PNG per page there
(a fixed viewport; times and temporary paths masked), the images docs/ui.md shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import peers
from shared_helpers import serve_http

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
VIEWPORT = {"width": 1280, "height": 820}
PY = sys.executable


def chromium_path() -> str | None:
    env = os.environ.get("KAIROX_CHROMIUM")
    for candidate in (env, *CHROMIUM_CANDIDATES, shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@contextlib.contextmanager
def html_site(page: Callable[[], str]) -> Iterator[int]:
    """Serve the HTML document ``page()`` returns (at the time of each request) at every
    path of a free 127.0.0.1 port, on a thread; yields the port."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = page().encode()
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with serve_http(Handler) as port:
        yield port


def warm_up(browser: Any) -> None:
    """Load a page over HTTP once: chromium starts its network, storage and GPU helper
    processes on first use, and they live as long as the browser (not a test's leftovers)."""
    warm = "<!doctype html><script>localStorage.setItem('k', '1'); fetch('/x')</script><p>warm</p>"
    with html_site(lambda: warm) as port:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_timeout(500)
        context.close()


def open_page(page: Any, server: Any, path: str = "/") -> None:
    """Load the printed URL (the page keeps the token of its fragment in the tab's
    sessionStorage), then go to ``path`` in the same tab."""
    page.goto(server.url)
    page.wait_for_selector('#conn[data-connected="true"]')
    if path != "/":
        page.goto(server.base + path)
        page.wait_for_selector('#conn[data-connected="true"]')


def render_skill(page: Any, row: Any, skill: str, field: str, value: str) -> str:
    """Open the skill of the list row ``row`` (its name), fill its argument ``field`` with
    ``value`` and render it; returns the rendered text."""
    row.locator("a.name").click()
    page.locator(f'.skill-detail[data-skill="{skill}"]').wait_for()
    page.locator(f'.skill-detail input[name="{field}"]').fill(value)
    page.locator('.skill-detail [data-action="render"]').click()
    rendered = page.locator('pre.rendered[data-rendered="true"]')
    rendered.wait_for()
    return str(rendered.inner_text()).strip()


class UiServer:
    """One ``kairox ui`` process: its URL (the token in its fragment), base address and token."""

    def __init__(self, workspace: Path, home: Path, env: dict[str, str], port: int = 0) -> None:
        self.port = port
        self.workspace = workspace
        self.home = home
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.base = ""
        self.token = ""
        self.stderr_path = home.parent / "ui-stderr.txt"

    def start(self) -> UiServer:
        argv = [*peers.KAIROX_TEST_GRACES, "-w", str(self.workspace), "ui", "--no-browser", "--port", str(self.port)]
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=self._stderr, env=self.env, start_new_session=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith("http://"):
            self.stop()
            raise AssertionError(f"kairox ui printed {line!r} first; stderr: {self.stderr()}")
        self.url = line
        self.base, _, self.token = line.partition("/#token=")
        return self

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def request(
        self,
        path: str,
        *,
        method: str = "GET",
        body: Any = None,
        headers: dict[str, str] | None = None,
        token: bool = True,
    ) -> tuple[int, str]:
        data = json.dumps(body).encode() if body is not None else (b"{}" if method != "GET" else None)
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if token:
            req.add_header("Authorization", f"Bearer {self.token}")
        if method != "GET":
            req.add_header("Origin", self.base)
            req.add_header("X-Kairox-UI", "1")
            req.add_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            req.add_header(key, value)
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def json(self, path: str) -> Any:
        status, text = self.request(path)
        assert status == 200, text
        return json.loads(text)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()
        self.proc = None


class UiSetup:
    """A workspace and a home for one dashboard, and the kairox CLI over them."""

    def __init__(self, root: Path) -> None:
        self.workspace = root / "ws"
        self.home = root / "home"
        self.workspace.mkdir(parents=True)
        self.home.mkdir(parents=True)
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")},
            "KAIROX_HOME": str(self.home),
            "NO_COLOR": "1",
        }
        self.servers: list[UiServer] = []

    def write(self, rel: str, text: str, *, where: str = "workspace") -> Path:
        base = self.workspace if where == "workspace" else self.home
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def mcp_server(self, name: str, fixture: str, *args: str, where: str = "workspace") -> None:
        argv = peers.fixture_server(fixture)
        line = f"\n[mcp_servers.{name}]\ncommand = {json.dumps(argv[0])}\nargs = {json.dumps([argv[1], *args])}\n"
        path = (self.workspace if where == "workspace" else self.home) / "kairox.toml"
        path.write_text((path.read_text() if path.exists() else "") + line, encoding="utf-8")

    def catalog(self, document: dict[str, Any], *, config: str = "") -> Path:
        """``document`` as the home's only catalog source ``team`` (``config``: more of the
        home's ``kairox.toml`` before it); the catalog file's path."""
        path = self.home / "team-catalog.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        source = f'[catalog]\nbuiltin = false\n\n[[catalog.sources]]\nname = "team"\nurl = "{path.as_uri()}"\n'
        self.write("kairox.toml", config + source, where="home")
        return path

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*peers.KAIROX_TEST_GRACES, "-w", str(self.workspace), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            start_new_session=True,
        )

    def trust(self) -> None:
        """What ``kairox trust`` records, in process (tests/security runs the command)."""
        from kairox_testing import trust_workspace

        trust_workspace(self.workspace, self.home, env=self.env)

    def start(self, port: int = 0) -> UiServer:
        """``kairox ui`` on ``port`` (0: any free one)."""
        server = UiServer(self.workspace, self.home, self.env, port).start()
        self.servers.append(server)
        return server

    def close(self) -> None:
        for server in self.servers:
            server.stop()


#: a workspace skill with one required argument, ``who`` (``str.format`` fields: name, description)
GREETING_SKILL = """---
name: {name}
description: {description}
scope: workspace
arguments:
  who:
    type: string
    required: true
    description: whom to greet
---
Say hello to {{{{who}}}}.
"""


def write_skill(ui: UiSetup, name: str, description: str = "Greets someone") -> None:
    """:data:`GREETING_SKILL` as the workspace skill ``name``."""
    ui.write(f".kairox/skills/{name}.md", GREETING_SKILL.format(name=name, description=description))


#: the usual description of :func:`echo_entry`'s entry
ECHO_DESCRIPTION = "A small local MCP server that echoes (the test fixture)"
#: a catalog entry needing a program no machine has
NEVER_HERE = {
    "name": "never-here",
    "description": "Needs a program this machine does not have",
    "requirements": [{"runtime": "kairox-no-such-program"}],
    "launch": {"command": "kairox-no-such-program"},
}


def echo_entry(name: str = "echo-server", **fields: Any) -> dict[str, Any]:
    """A catalog entry ``name`` launching the ``well_behaved`` fixture server as ``--name name``
    (``fields``: the entry's other fields)."""
    argv = peers.fixture_server("well_behaved")
    return {"name": name, **fields, "launch": {"command": argv[0], "args": [argv[1], "--name", name]}}


def install(server: UiServer, body: dict[str, Any]) -> dict[str, Any]:
    """Start an install job and wait for its outcome (the job's last message)."""
    status, text = server.request("/api/marketplace/install", method="POST", body=body)
    assert status == 200, text
    job = json.loads(text)["job"]
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        log = server.json(f"/api/marketplace/jobs/{job}")["log"]
        if log and log[-1]["type"] == "finished":
            return dict(log[-1])
        assert server.proc is not None and server.proc.poll() is None, server.stderr()
        time.sleep(0.1)
    raise AssertionError(f"install job {job} did not finish; stderr {server.stderr()}")


def screenshot(page: Any, name: str) -> None:
    """``docs/images/ui/<name>.png`` when ``KAIROX_UI_SCREENSHOTS`` names the directory."""
    target = os.environ.get("KAIROX_UI_SCREENSHOTS")
    if not target:
        return
    directory = Path(target)
    if not directory.is_absolute():
        directory = peers.REPO / directory
    directory.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(300)  # let the last live update paint
    page.evaluate("document.getElementById('notice').replaceChildren()")
    page.screenshot(
        path=str(directory / f"{name}.png"),
        animations="disabled",
        caret="hide",
        mask=[page.locator("[data-mask]"), page.locator("[data-message]"), page.locator("table.trace td.mono")],
        mask_color="#d9dce1",
    )
