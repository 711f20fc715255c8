"""Issue 9 at runtime level: a ready server stops reading its stdin (``threaded.py``'s
``freeze``). A small call to it times out at ``tool_timeout``; a call too big for the
pipe ends the connection after the transport's ``write_stall_timeout`` with that
diagnostic, and the server is restarted; the other servers answer all along."""

from __future__ import annotations

import re
import sys
import time
from typing import Any

import anyio
import pytest
from fault_helpers import open_runtime, script, wait_ready

from kairox import hookimpl
from kairox_mcp.client import McpCallTimeout, McpConnectionClosed
from kairox_mcp.manager import manager_of
from kairox_stdio import StdioTransport

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]

STALL = 0.5
#: the frozen server's tool_timeout, waited out once (test-sized)
FROZEN_TIMEOUT = 1


class QuickStallStdio(StdioTransport):
    """The stdio transport with a one-second ``write_stall_timeout`` (default 60 s)."""

    name = "stdio_quick_stall"


class QuickStallPlugin:
    @hookimpl
    def kairox_register_transports(self, registrar: Any) -> None:
        registrar.add(QuickStallStdio(write_stall_timeout=STALL))


async def keep_calling(rt: Any, name: str, stop: anyio.Event, answered: list[float]) -> None:
    """Call ``name.echo`` in a loop until ``stop``; note each latency (a failure fails the test)."""
    i = 0
    while not stop.is_set():
        t0 = time.monotonic()
        with anyio.fail_after(5):
            text = (await rt.call_tool(f"{name}.echo", {"message": f"{name} {i}"})).text
        assert text == f"{name} {i}"
        answered.append(time.monotonic() - t0)
        i += 1
        await anyio.sleep(0.01)


async def test_a_server_that_stops_reading_never_blocks_the_others(tmp_path: Any) -> None:
    servers = {
        "frozen": script(
            "threaded",
            "--name",
            "frozen",
            type="stdio_quick_stall",
            tool_timeout=FROZEN_TIMEOUT,
            max_restarts=1,
            restart_backoff=0.1,
        ),
        "good": script("well_behaved", "--name", "good"),
        "busy": script("threaded", "--name", "busy"),
    }
    answered: dict[str, list[float]] = {"good": [], "busy": []}
    with anyio.fail_after(90):
        async with open_runtime(tmp_path, servers, plugins=(QuickStallPlugin(),)) as rt:
            mcp = manager_of(rt)
            first_pid = mcp.server("frozen").diagnostics.pid
            assert (await rt.call_tool("frozen.freeze", {})).text == "frozen"
            stop = anyio.Event()
            async with anyio.create_task_group() as tg:
                for name in answered:
                    tg.start_soon(keep_calling, rt, name, stop, answered[name])

                # a small request fits in the pipe: nobody answers, tool_timeout ends it
                t0 = time.monotonic()
                with pytest.raises(McpCallTimeout) as timeout_err:
                    await rt.call_tool("frozen.echo", {"message": "hello?"})
                small_s = time.monotonic() - t0
                timed_out = str(timeout_err.value)
                assert "MCP server frozen" in timed_out and f"timed out after {FROZEN_TIMEOUT} s" in timed_out

                # a request bigger than the pipe blocks the write: the connection ends
                t0 = time.monotonic()
                with pytest.raises(McpConnectionClosed) as closed_err:
                    await rt.call_tool("frozen.echo", {"message": "x" * 1_000_000})
                big_s = time.monotonic() - t0
                message = str(closed_err.value)
                assert "MCP server frozen closed the connection during tools/call echo" in message
                assert re.search(
                    rf"the server stopped reading its stdin \(a 100\d{{4}}-byte write blocked for {STALL:g} s\)",
                    message,
                )
                assert "frozen: not reading stdin any more" in message  # its stderr, in the diagnostic

                # restarted (a crash after ready), on a new process that serves
                server = await wait_ready(rt, "frozen", not_pid=first_pid)
                assert server.restarts == 1
                assert (await rt.call_tool("frozen.echo", {"message": "back"})).text == "back"
                stop.set()
    for name, latencies in answered.items():
        assert len(latencies) >= 10, (name, len(latencies))
        assert max(latencies) < 1.0, (name, max(latencies))  # never waited for the frozen server
    print(
        f"[reliability] server stopped reading stdin: small call timed out in {small_s:.2f} s, "
        f"1 MB call ended the connection in {big_s:.2f} s (write_stall_timeout {STALL:g} s); meanwhile "
        + ", ".join(f"{n} answered {len(v)} calls (slowest {max(v) * 1000:.0f} ms)" for n, v in answered.items()),
        file=sys.stderr,
    )


async def test_a_call_that_cannot_be_sent_is_bounded_by_tool_timeout(tmp_path: Any) -> None:
    """With the default transport (``write_stall_timeout`` 60 s) a call whose request
    cannot be written still ends at ``tool_timeout`` + 1 s (+ the SDK's bounded courtesy
    cancel), and the connection is re-opened."""
    servers = {
        "frozen": script("threaded", "--name", "frozen", tool_timeout=1, max_restarts=1, restart_backoff=0.1),
        "good": script("well_behaved", "--name", "good"),
    }
    answered: list[float] = []
    with anyio.fail_after(60):
        async with open_runtime(tmp_path, servers) as rt:
            first_pid = manager_of(rt).server("frozen").diagnostics.pid
            assert (await rt.call_tool("frozen.freeze", {})).text == "frozen"
            stop = anyio.Event()
            async with anyio.create_task_group() as tg:
                tg.start_soon(keep_calling, rt, "good", stop, answered)
                t0 = time.monotonic()
                with pytest.raises(McpCallTimeout) as info:
                    await rt.call_tool("frozen.echo", {"message": "x" * 1_000_000})
                elapsed = time.monotonic() - t0
                assert str(info.value) == (
                    "tools/call echo timed out after 1 s (MCP server frozen; "
                    "the request could not be sent: the server is not taking input)"
                )
                assert elapsed < 1 + 1 + 5 + 1.5
                server = await wait_ready(rt, "frozen", not_pid=first_pid)
                assert server.restarts == 1
                assert "could not be sent within 2 s" in "\n".join(server.stderr_tail())
                assert (await rt.call_tool("frozen.echo", {"message": "back"})).text == "back"
                stop.set()
    assert len(answered) >= 10 and max(answered) < 1.0
    print(
        f"[reliability] call to a server not reading stdin (tool_timeout 1 s, default write_stall_timeout): "
        f"failed in {elapsed:.2f} s, then the server was restarted",
        file=sys.stderr,
    )
