"""URL secrets stay out of every output, errors from the HTTP stack included.

The attack: a server URL with a userinfo password and a ``token`` query parameter,
``http://user:PASSWORD@127.0.0.1:PORT/sse?token=SECRET123``, pointing at a real local
HTTP server that answers 401 to everything. httpx2's ``HTTPStatusError`` names the
whole URL, the SDK logs it (``Connecting to SSE endpoint: ...``) and httpx2 logs each
request (``HTTP Request: GET ...``). Neither secret may appear in ``status``,
``status --json``, ``mcp status``, ``mcp logs``, the server's events, or ``-vv`` stderr.
"""

from __future__ import annotations

import http.server
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from security_helpers import cli_env, output_of
from shared_helpers import serve_http

from kairox import Runtime
from kairox_mcp import McpServerFailed
from kairox_testing import KairoxHarness

SECRETS = ("PASSWORD", "SECRET123")
#: a streamable HTTP 401 never put the URL into status or events (the SDK answers with
#: "Server returned an error response"), only into the debug log
TRANSPORTS = ["sse", "http"]


class _Deny(http.server.BaseHTTPRequestHandler):
    def _deny(self) -> None:
        self.send_response(401, "Unauthorized")
        self.send_header("WWW-Authenticate", 'Bearer realm="mcp"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_DELETE = _deny

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def denying_server() -> Iterator[int]:
    """A real HTTP server on 127.0.0.1 answering 401 to every request; yields its port."""
    with serve_http(_Deny) as port:
        yield port


def _url(port: int, kind: str) -> str:
    path = "sse" if kind == "sse" else "mcp"
    return f"http://user:PASSWORD@127.0.0.1:{port}/{path}?token=SECRET123"


def _write_config(home: Path, port: int, kind: str, *, oauth: bool = True) -> None:
    home.mkdir(parents=True, exist_ok=True)
    off = "" if oauth else "oauth = { enabled = false }\n"
    (home / "kairox.toml").write_text(
        f'[mcp_servers.remote]\ntype = "{kind}"\nurl = "{_url(port, kind)}"\nstartup_timeout = 10\n{off}',
        encoding="utf-8",
    )


def _assert_clean(text: str, what: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret} in {what}:\n{text}"


@pytest.fixture
def harness(tmp_path: Path) -> KairoxHarness:
    (tmp_path / "ws").mkdir()
    return KairoxHarness(tmp_path / "ws", tmp_path / "home", env=cli_env(tmp_path / "home"))


@pytest.mark.parametrize("kind", ["sse"])
def test_a_401_shows_no_url_secret_in_status_or_logs(harness: KairoxHarness, denying_server: int, kind: str) -> None:
    # without OAuth the 401 is the connection's error, which httpx2 words with the whole URL
    _write_config(harness.home, denying_server, kind, oauth=False)
    for args in (
        ("status",),
        ("status", "--json"),
        ("mcp", "status"),
        ("mcp", "status", "--json"),
        ("mcp", "logs", "remote"),
        ("mcp", "logs", "remote", "--json"),
    ):
        result = harness.cli(*args, load_entrypoints=True)
        out = output_of(result)
        assert "remote" in out and "401" in out, f"{args}: the failure is shown\n{out}"
        assert "<redacted>" in out
        _assert_clean(out, " ".join(args))


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["sse"])
async def test_the_failure_event_and_the_error_carry_no_url_secret(
    tmp_path: Path, denying_server: int, kind: str
) -> None:
    (tmp_path / "ws").mkdir()
    entry = {"type": kind, "url": _url(denying_server, kind), "oauth": {"enabled": False}}
    docs = [("user", {"mcp_servers": {"remote": entry}})]
    seen: list[Any] = []
    async with Runtime.open(tmp_path / "ws", home=tmp_path / "home", config_documents=docs, start=False) as rt:
        rt.events.subscribe(seen.append, McpServerFailed)
        await rt.start_providers()
        statuses = [s for s in rt.status().servers if s.name == "remote"]
    assert seen and statuses
    event = seen[0]
    _assert_clean(repr(event), "the McpServerFailed event")
    _assert_clean(repr(statuses), "the server status")
    assert "401" in event.error + " ".join(event.stderr_tail)


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, start_new_session=True
    )


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_debug_logging_shows_no_url_secret(tmp_path: Path, denying_server: int, kind: str) -> None:
    (tmp_path / "ws").mkdir()
    home = tmp_path / "home"
    _write_config(home, denying_server, kind)
    env = cli_env(home)
    # a DEBUG handler of the embedding program's own, set up before kairox's main() (so not
    # kairox's redacting one): every record of the SDK, httpx2 and kairox reaches it
    boot = (
        "import logging, sys; logging.basicConfig(level=logging.DEBUG, stream=sys.stderr); "
        "from kairox_cli._main import main; sys.exit(main())"
    )
    debug = _run([sys.executable, "-c", boot, "-vvv", "--workspace", str(tmp_path / "ws"), "status"], env)
    # the SDK's "Connecting to ... endpoint: URL" is printed (and httpx2's "HTTP Request: GET URL",
    # unless the CLI keeps httpx2 quiet at this level)
    assert "Connecting to" in debug.stderr, debug.stderr[-3000:]
    assert "401" in debug.stderr
    _assert_clean(output_of(debug), "DEBUG logging")
    # and the console script itself, with -vv
    real = _run(
        [str(Path(sys.executable).parent / "kairox"), "-vv", "--workspace", str(tmp_path / "ws"), "status"], env
    )
    # a server that answers 401 needs an OAuth login (docs/mcp.md), and says so
    assert "needs authorization" in real.stdout, real.stdout
    _assert_clean(output_of(real), "kairox -vv status")
