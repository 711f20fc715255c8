"""Issue 9 for streamable HTTP: a server that answers 500, forgets the session (404),
drops its connections or hangs, mid-session.

``remote`` is an SDK ``MCPServer`` (uvicorn, in-process) behind a switchable ASGI
middleware and a TCP proxy (``fault_http.py``); ``steady`` is a second HTTP server
without faults and ``local`` a stdio server. Each fault ends in a clear ``ToolError``
naming ``remote`` within a bound, ``steady`` and ``local`` keep answering, ``remote``
serves again once the fault is gone, and nothing is left running.

What recovery looks like, per fault:

- 500: that call fails (``MCP error -32603``, the status is in the server's logs);
  the session stays, the next call after the fault works. No restart.
- 404 to our ``Mcp-Session-Id`` (session expired / server restarted): the connection
  ends and the lifecycle re-initializes (a new session) after ``restart_backoff``.
- connections dropped mid-call: the call fails (``closed the connection``); when the
  server still accepts connections the session goes on, when it does not the lifecycle
  restarts it per its policy.
- hang: the call fails at ``tool_timeout``; a call that cannot even be sent (the
  session is wedged on the hung requests) fails at ``tool_timeout`` + 1 s (+ up to 5 s
  for the SDK's courtesy cancel) and the connection is re-opened.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from fault_helpers import open_runtime, script, wait_ready
from fault_http import FaultSwitch, TcpProxy, mcp_app, served

from kairox import Runtime
from kairox._types import ServerState
from kairox.errors import ToolError
from kairox_mcp.client import McpCallTimeout, McpConnectionClosed, McpRequestError
from kairox_mcp.events import McpServerFailed
from kairox_mcp.manager import manager_of

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]

TOOL_TIMEOUT = 2.0
#: the hang test waits its tool_timeout out twice: test-sized there
HANG_TIMEOUT = 0.5


@attrs.define
class World:
    rt: Runtime
    switch: FaultSwitch
    proxy: TcpProxy
    failed: list[McpServerFailed]

    async def echo(self, server: str, message: str, bound: float = 10.0) -> str:
        with anyio.fail_after(bound):
            return (await self.rt.call_tool(f"{server}.echo", {"message": message})).text

    async def others_serve(self) -> None:
        assert await self.echo("steady", "s") == "s"
        assert await self.echo("local", "l") == "l"

    async def failing(self, message: str, bound: float) -> tuple[ToolError, float]:
        """Call remote.echo, expecting a ToolError within ``bound`` s."""
        t0 = time.monotonic()
        with anyio.fail_after(bound), pytest.raises(ToolError) as info:
            await self.rt.call_tool("remote.echo", {"message": message})
        return info.value, time.monotonic() - t0


@contextlib.asynccontextmanager
async def world(tmp_path: Path, **remote: Any) -> AsyncIterator[World]:
    switch = FaultSwitch(mcp_app("remote"))
    async with served(switch) as port, served(mcp_app("steady")) as steady_port:
        proxy = TcpProxy(port)
        async with proxy.running():
            servers = {
                "remote": {
                    "type": "streamable_http",
                    "url": f"http://127.0.0.1:{proxy.port}/mcp",
                    "tool_timeout": TOOL_TIMEOUT,
                    "restart_backoff": 0.2,
                    # the faults are counted per initialize and per Mcp-Session-Id: the
                    # 2025-11-25 handshake (at 2026-07-28 there is neither)
                    "protocol": "2025-11-25",
                    **remote,
                },
                "steady": {"type": "http", "url": f"http://127.0.0.1:{steady_port}/mcp"},
                "local": script("well_behaved", "--name", "local"),
            }
            with anyio.fail_after(90):
                async with open_runtime(tmp_path, servers) as rt:
                    states = {s.name: s.state for s in manager_of(rt).status()}
                    assert set(states.values()) == {ServerState.READY}, states
                    w = World(rt, switch, proxy, [])
                    rt.events.subscribe(w.failed.append, McpServerFailed)
                    assert await w.echo("remote", "before") == "before"
                    yield w


def report(what: str, seconds: float) -> None:
    print(f"[reliability] http {what}: {seconds:.2f} s", file=sys.stderr)


async def test_500_fails_the_call_and_the_session_goes_on(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.switch.mode = "500"
        err, elapsed = await w.failing("during 500", bound=5)
        assert isinstance(err, McpRequestError) and err.code == -32603
        assert str(err).startswith("tools/call echo failed (MCP server remote): MCP error -32603")
        await w.others_serve()
        logs = manager_of(w.rt).logs("remote")
        assert any(line.endswith("/mcp -> 500") and line.startswith("[http] POST") for line in logs), logs
        w.switch.mode = "ok"
        assert await w.echo("remote", "after") == "after"
        server = manager_of(w.rt).server("remote")
        assert server.restarts == 0 and w.switch.initializes == 1 and not w.failed
    report("500 -> ToolError", elapsed)


async def test_404_for_the_session_reinitializes(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        mcp = manager_of(w.rt)
        w.switch.expire_sessions()
        t0 = time.monotonic()
        err, elapsed = await w.failing("expired", bound=5)
        assert isinstance(err, McpConnectionClosed), err
        assert "MCP server remote" in str(err)
        assert "no longer knows our session (HTTP 404 for its Mcp-Session-Id" in str(err)
        await w.others_serve()
        # in the backoff window, a call says why the server is not ready
        with pytest.raises(ToolError, match=r"MCP server remote is not ready .*(404|restart)"):
            await w.rt.call_tool("remote.echo", {"message": "too soon"})
        await wait_ready(w.rt, "remote")
        back = time.monotonic() - t0
        assert await w.echo("remote", "new session") == "new session"
        assert w.switch.initializes == 2 and mcp.server("remote").restarts == 1
        assert [e.will_restart for e in w.failed] == [True]
        assert "HTTP 404" in w.failed[0].error
    report("404 -> ToolError", elapsed)
    report("404 -> re-initialized (restart_backoff 0.2 s)", back)


async def test_404_without_restarts_left_is_a_clear_failure(tmp_path: Path) -> None:
    async with world(tmp_path, max_restarts=0) as w:
        w.switch.expire_sessions()
        await w.failing("expired", bound=5)
        server = manager_of(w.rt).server("remote")
        with anyio.fail_after(10):
            await server.wait_done()
        assert server.state is ServerState.FAILED and "HTTP 404" in server.detail
        await w.others_serve()


async def test_connections_dropped_mid_call(tmp_path: Path) -> None:
    async with world(tmp_path, max_restarts=5) as w:
        mcp = manager_of(w.rt)

        async def drop_soon() -> None:
            await anyio.sleep(0.3)
            w.proxy.drop()

        # the server still accepts connections: the call fails, the session goes on
        t0 = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(drop_soon)
            with anyio.fail_after(5), pytest.raises(McpConnectionClosed) as info:
                await w.rt.call_tool("remote.slow_echo", {"message": "mid", "delay": 3})
        in_flight_s = time.monotonic() - t0 - 0.3
        assert str(info.value).startswith(
            "MCP server remote closed the connection during tools/call slow_echo (SSE stream ended without a response)"
        )
        await w.others_serve()
        assert await w.echo("remote", "same session") == "same session"
        assert w.switch.initializes == 1

        # now every connection is cut at once and new ones are closed unanswered
        w.proxy.refusing = True
        async with anyio.create_task_group() as tg:
            tg.start_soon(drop_soon)
            with anyio.fail_after(5), pytest.raises(ToolError) as info:
                await w.rt.call_tool("remote.slow_echo", {"message": "mid", "delay": 3})
        assert "remote" in str(info.value)
        await w.others_serve()
        await anyio.sleep(0.5)
        w.proxy.refusing = False
        await wait_ready(w.rt, "remote")
        assert await w.echo("remote", "back") == "back"
        assert mcp.server("remote").restarts >= 1 and w.switch.initializes >= 2
        assert all(e.will_restart for e in w.failed)
    report("connection dropped mid-call -> ToolError", in_flight_s)


async def test_a_hung_server_times_out_and_is_reconnected(tmp_path: Path) -> None:
    async with world(tmp_path, max_restarts=3, tool_timeout=HANG_TIMEOUT) as w:
        w.switch.mode = "hang"
        err, first_s = await w.failing("hung", bound=HANG_TIMEOUT + 3)
        assert isinstance(err, McpCallTimeout)
        assert str(err) == (
            f"tools/call echo timed out after {HANG_TIMEOUT:g} s (MCP server remote; the request was cancelled)"
        )
        await w.others_serve()
        # the courtesy notifications/cancelled hangs too: the session can no longer send
        err, second_s = await w.failing("still hung", bound=HANG_TIMEOUT + 1 + 5 + 3)
        assert isinstance(err, McpCallTimeout) and "the request could not be sent" in str(err)
        await w.others_serve()
        w.switch.mode = "ok"
        await wait_ready(w.rt, "remote")
        assert await w.echo("remote", "unwedged") == "unwedged"
        assert w.failed and "could not be sent" in w.failed[0].error and w.failed[0].will_restart
        assert manager_of(w.rt).server("remote").restarts == 1
    report(f"hang -> timeout at tool_timeout {HANG_TIMEOUT:g} s", first_s)
    report("hang, wedged session -> timeout", second_s)
