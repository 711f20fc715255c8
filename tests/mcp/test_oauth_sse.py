"""OAuth 2.1 for servers on the legacy SSE transport, against the same real local authorization
server as ``test_oauth.py`` (``tests/fixtures/mcp_servers/oauth_server.py``, the SDK's
server-side auth pieces), served over the SDK's SSE transport instead: :data:`SSE_LAUNCHER`
runs the fixture with ``MCPServer.run`` switched to ``"sse"`` (the event stream's GET on
``/mcp``, so the protected resource metadata's URL is the endpoint's, message POSTs on
``/messages/``; both behind the SDK's ``RequireAuthMiddleware``). The helpers (the browser,
the login, the admin controls) are ``test_oauth``'s."""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import peers
import pytest
from mcp_helpers import open_runtime
from test_oauth import WAIT, _fixture_on, admin, do_login, envs, needs_login, no_secret_in_any_output, stats, wait_state

from kairox._types import ServerState
from kairox.errors import KairoxError
from kairox_mcp import manager_of
from kairox_mcp.auth import token_path

pytestmark = pytest.mark.integration

#: ``python -c SSE_LAUNCHER FIXTURE ARGS...``: the fixture, served over SSE
SSE_LAUNCHER = """
import runpy, sys
from mcp.server.mcpserver import MCPServer

run = MCPServer.run

def run_sse(self, transport="stdio", **kwargs):
    return run(self, "sse", host=kwargs["host"], port=kwargs["port"], sse_path="/mcp")

MCPServer.run = run_sse
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

#: ``kairox mcp login`` probes with an ``initialize`` POST, which an SDK SSE server answers
#: 405 (its endpoint is GET only), so the login finds nothing to log in to; it needs a GET
#: for ``type = "sse"`` (kairox_mcp/auth.py, see the report)


@contextlib.contextmanager
def sse_oauth_server(*args: str) -> Iterator[str]:
    """The OAuth fixture over SSE; yields its base URL (``http://127.0.0.1:PORT``)."""
    port = peers.free_port()
    fixture = peers.fixture_server("oauth_server")[1]
    with _fixture_on(port, [sys.executable, "-c", SSE_LAUNCHER, fixture, "--port", str(port), *args]):
        yield f"http://127.0.0.1:{port}"


def sse_entry(base: str, **extra: Any) -> dict[str, Any]:
    return {"type": "sse", "url": f"{base}/mcp", "startup_timeout": WAIT, **extra}


def seen_hash(path: Path) -> str:
    """The SHA-256 of the stored access token (what the fixture lists as seen)."""
    token = json.loads(path.read_text())["tokens"]["access_token"]
    return hashlib.sha256(token.encode()).hexdigest()


@pytest.mark.anyio
async def test_sse_server_without_login_needs_authorization(tmp_path: Path, events_of: Any, no_leftovers: None) -> None:
    def answered_401(server: Any) -> None:
        # the diagnostics say what the server answered (no opaque HTTPStatusError)
        assert any("GET" in line and "-> 401" in line for line in server.stderr_tail())

    with sse_oauth_server() as base:
        await needs_login(tmp_path, events_of, base, sse_entry(base), answered_401)


@pytest.mark.anyio
async def test_sse_static_authorization_header_is_not_oauth(tmp_path: Path, no_leftovers: None) -> None:
    """An entry with its own ``Authorization`` header sends it and never asks for a login: the
    server's 401 is a plain failure (the header is the user's to fix)."""
    env = {**envs(tmp_path), "TOKEN": "not-a-token"}
    entry = sse_entry(base="", headers={"Authorization": "Bearer ${TOKEN}"})
    with sse_oauth_server() as base:
        entry["url"] = f"{base}/mcp"
        async with open_runtime(tmp_path, {"s": entry}, env=env) as rt:
            server = manager_of(rt).server("s")
            assert server.state is not ServerState.NEEDS_AUTHORIZATION
            assert "kairox mcp login" not in server.detail
            assert "not-a-token" not in server.detail
            assert not any("not-a-token" in line for line in server.stderr_tail())
    assert not token_path("s", env).exists()


@pytest.mark.anyio
async def test_sse_login_use_refresh_revoke_and_login_again(tmp_path: Path, no_leftovers: None) -> None:
    env = envs(tmp_path)
    with sse_oauth_server("--lifetime", "2") as base:
        path = await do_login("s", base, env, type="sse")
        client_id = json.loads(path.read_text())["client_info"]["client_id"]
        assert stats(base)["registrations"] == 1 and stats(base)["exchanges"] == 1

        async with open_runtime(tmp_path, {"s": sse_entry(base)}, env=env) as rt:
            assert manager_of(rt).server("s").state is ServerState.READY
            # the call's POST carried the stored token (the fixture records its hash)
            assert (await rt.call_tool("s.whoami", {})).text == client_id
            assert stats(base)["seen"][-1] == seen_hash(path)

            # the token expires (lifetime 2 s): the next message POST refreshes it first
            before = json.loads(path.read_text())["tokens"]["access_token"]
            await anyio.sleep(2.5)
            assert (await rt.call_tool("s.whoami", {})).text == client_id
            assert stats(base)["refreshes"] >= 1
            assert json.loads(path.read_text())["tokens"]["access_token"] != before
            assert stats(base)["seen"][-1] == seen_hash(path)

            # the server forgets the access token: the POST's 401 is fixed by a refresh
            refreshes = stats(base)["refreshes"]
            admin(base, "revoke")
            assert (await rt.call_tool("s.whoami", {})).text == client_id
            assert stats(base)["refreshes"] == refreshes + 1

            # the refresh token goes too: the call fails at once (the watch ends the
            # connection; the SDK's POST writer would only log), and a login is needed
            admin(base, "revoke-all")
            with anyio.fail_after(WAIT), pytest.raises(KairoxError, match="kairox mcp login s"):
                await rt.call_tool("s.whoami", {})
            await wait_state(rt, "s", ServerState.NEEDS_AUTHORIZATION)
            assert "kairox mcp login s" in manager_of(rt).server("s").detail
            assert stats(base)["authorizations"] == 1  # no interactive flow from the runtime

            # logging in brings it back by itself
            await do_login("s", base, env, type="sse")
            await wait_state(rt, "s", ServerState.READY)
            assert (await rt.call_tool("s.whoami", {})).text == client_id
            assert stats(base)["seen"][-1] == seen_hash(path)
            assert stats(base)["registrations"] == 1


def test_sse_no_secret_in_any_output(tmp_path: Path, no_leftovers: None) -> None:
    """The real CLI (a subprocess, -vvv) against the SSE server: status, login, a tool call,
    logs, logout. No access token, refresh token, code or client secret in any output."""
    with sse_oauth_server() as base:
        no_secret_in_any_output(tmp_path, base, "sse")
