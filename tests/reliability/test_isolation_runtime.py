"""Issue 9 at runtime level: a kairox.toml with good and faulty stdio servers.

Every server starts in parallel through the MCP manager and the stdio
transport; the faulty ones fail with a diagnostic, and none of them ever takes
down the others: the good server answers before and after each crash, and
closing the runtime leaves no process behind.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from peers import FIXTURE_SERVERS

from kairox import Runtime
from kairox._types import ServerState
from kairox.errors import ToolError
from kairox_mcp.events import McpServerFailed
from kairox_mcp.manager import manager_of

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]


def entry(script: str, *args: str, **extra: Any) -> str:
    argv = [str(FIXTURE_SERVERS / f"{script}.py"), *args]
    lines = [f"command = {json.dumps(sys.executable)}", f"args = {json.dumps(argv)}"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    return "\n".join(lines)


def write_config(workspace: Path) -> None:
    servers = {
        "good": entry("well_behaved", "--name", "good"),
        "crash_start": entry("crash_on_start", max_restarts=0),
        "hang": entry("hang_initialize", "--ignore-eof", "--ignore-sigterm", startup_timeout=1),
        "garbage": entry("garbage_stdout"),
        "flood": entry("stderr_flood", "--mb", "5"),
        "crasher": entry("crash_mid_call", max_restarts=0),
        "grandkid": entry("grandchild", max_restarts=0),
        "stuck": entry("stop_reading", startup_timeout=2),
        "ghost": 'command = "kairox-no-such-command-xyz"',
    }
    text = "\n\n".join(f"[mcp_servers.{name}]\n{body}" for name, body in servers.items())
    (workspace / "kairox.toml").write_text(text + "\n")


async def test_faulty_servers_never_take_down_the_good_one(tmp_path: Path) -> None:
    write_config(tmp_path)
    seen: list[Any] = []
    started = time.monotonic()
    with anyio.fail_after(60):
        async with Runtime.open(  # trusted: the test's own workspace, whose servers must run
            tmp_path, home=tmp_path / "home", env=dict(os.environ), approver=lambda request: True, trusted=True
        ) as rt:
            startup = time.monotonic() - started
            rt.events.subscribe(seen.append)
            status = {s.name: s for s in manager_of(rt).status()}
            states = {name: s.state for name, s in status.items()}
            assert states == {
                "good": ServerState.READY,
                "crash_start": ServerState.FAILED,
                "hang": ServerState.FAILED,
                "garbage": ServerState.READY,
                "flood": ServerState.READY,
                "crasher": ServerState.READY,
                "grandkid": ServerState.READY,
                "stuck": ServerState.FAILED,
                "ghost": ServerState.FAILED,
            }, {n: (s.state, s.detail) for n, s in status.items()}
            assert "exit code 3" in status["crash_start"].detail
            assert "within 1 s" in status["hang"].detail
            assert "command not found: 'kairox-no-such-command-xyz'" in status["ghost"].detail
            crash_diag = manager_of(rt).server("crash_start").diagnostics
            assert "crash_on_start: fatal: cannot open /nonexistent/config.toml" in crash_diag.stderr.tail()

            async def good_echo(text: str) -> None:
                assert (await rt.call_tool("good.echo", {"message": text})).text == text

            await good_echo("first")
            assert (await rt.call_tool("garbage.echo", {"message": "g"})).text == "g"
            assert (await rt.call_tool("flood.echo", {"message": "f"})).text == "f"

            # a server dying mid-call fails that call with its diagnostic, nothing else
            t0 = time.monotonic()
            with pytest.raises(ToolError) as err:
                await rt.call_tool("crasher.crash", {"code": 9})
            crash_latency = time.monotonic() - t0
            assert "about to die" in str(err.value) and "exit code 9" in str(err.value)
            await good_echo("after crasher")

            with pytest.raises(ToolError):
                await rt.call_tool("grandkid.crash", {})
            await good_echo("after grandkid")

            # concurrent calls on the good server while another one crashes
            async with anyio.create_task_group() as tg:
                for i in range(5):
                    tg.start_soon(good_echo, f"parallel {i}")
            status = {s.name: s.state for s in manager_of(rt).status()}
            assert status["good"] is ServerState.READY
            assert status["crasher"] is ServerState.FAILED and status["grandkid"] is ServerState.FAILED
            assert not rt.tools.by_provider("mcp:crasher")
    failed = {e.server: e for e in seen if isinstance(e, McpServerFailed)}
    assert failed["crasher"].exit_code == 9 and not failed["crasher"].will_restart
    print(
        f"[reliability] runtime with 9 servers (5 good, 4 faulty): ready in {startup:.2f} s, "
        f"crash mid-call surfaced in {crash_latency:.3f} s",
        file=sys.stderr,
    )


async def test_a_crashing_server_restarts_and_serves_again(tmp_path: Path) -> None:
    (tmp_path / "kairox.toml").write_text(
        "[mcp_servers.phoenix]\n" + entry("crash_mid_call", max_restarts=2, restart_backoff=0.1) + "\n"
    )
    with anyio.fail_after(60):
        async with Runtime.open(  # trusted: the test's own workspace, whose servers must run
            tmp_path, home=tmp_path / "home", env=dict(os.environ), approver=lambda request: True, trusted=True
        ) as rt:
            server = manager_of(rt).server("phoenix")
            first_pid = server.diagnostics.pid
            with pytest.raises(ToolError):
                await rt.call_tool("phoenix.crash", {})
            for _ in range(100):
                if server.state is ServerState.READY and server.diagnostics.pid != first_pid:
                    break
                await anyio.sleep(0.05)
            assert server.state is ServerState.READY and server.restarts == 1
            assert (await rt.call_tool("phoenix.echo", {"message": "again"})).text == "again"
