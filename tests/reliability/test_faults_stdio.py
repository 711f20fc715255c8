"""Issue 9, stdio: every fault server gives the expected error with a diagnostic,
nothing hangs (bounded waits) and no process is left behind (grandchildren included).

The fault servers are in tests/fixtures/mcp_servers/ (raw JSON lines, so they
start in milliseconds). Measured numbers are printed (``pytest -s``) and
recorded in docs/reliability.md.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import psutil
import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from stdio_helpers import FAST, Recorder, context, open_session, server

from kairox_stdio import InvalidServerMessage, StdioTransport

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]


def report(what: str, value: str) -> None:
    print(f"[reliability] {what}: {value}", file=sys.stderr)


def gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


async def wait_until_gone(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for _ in range(int(timeout / 0.05) + 1):
        if gone(pid) or time.monotonic() > deadline:
            break
        await anyio.sleep(0.05)
    assert gone(pid), f"pid {pid} still running after {timeout} s"


async def crash_fails_the_call_within_a_second(session: ClientSession, code: int) -> float:
    """Call the server's ``crash`` tool (it exits with ``code`` mid-call): the pending call
    fails as a closed connection in under a second. Returns the seconds it took."""
    started = time.monotonic()
    with pytest.raises(MCPError) as err:
        await session.call_tool("crash", {"code": code})
    elapsed = time.monotonic() - started
    assert err.value.error.code == CONNECTION_CLOSED
    assert elapsed < 1.0
    return elapsed


async def test_crash_on_start(tmp_path: Path) -> None:
    ctx = context(tmp_path, name="crashy")
    started = time.monotonic()
    with anyio.fail_after(10):
        async with FAST.connect(server("crash_on_start"), ctx) as (read, write), ClientSession(read, write) as s:
            with pytest.raises(MCPError) as err:
                await s.initialize()
    assert err.value.error.code == CONNECTION_CLOSED
    diag = ctx.diagnostics
    assert diag.exit_code == 3
    assert diag.error == "the server process exited unexpectedly"
    assert "crash_on_start: fatal: cannot open /nonexistent/config.toml" in diag.stderr.tail()
    summary = diag.summary()
    assert "exit code 3" in summary and "fatal: cannot open" in summary
    report("crash on start -> error", f"{time.monotonic() - started:.2f} s")


async def test_crash_mid_call_fails_the_pending_call_within_a_second(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    with anyio.fail_after(20):
        async with open_session(server("crash_mid_call"), ctx) as session:
            assert (await session.call_tool("echo", {"message": "before"})).content[0].text == "before"
            elapsed = await crash_fails_the_call_within_a_second(session, 7)
            # later calls fail at once too
            with pytest.raises(MCPError):
                await session.call_tool("echo", {"message": "after"})
            assert ctx.diagnostics.exit_code == 7
    assert "crash_mid_call: about to die in the middle of a call" in ctx.diagnostics.stderr.tail()
    assert ctx.diagnostics.error == "the server process exited unexpectedly"
    report("crash mid-call -> pending call failed", f"{elapsed:.3f} s")


@pytest.mark.parametrize("stubborn", [False, True], ids=["exits-on-eof", "ignores-eof-and-sigterm"])
async def test_hang_in_initialize_times_out_and_is_killed(tmp_path: Path, stubborn: bool) -> None:
    args = ["--ignore-eof", "--ignore-sigterm"] if stubborn else []
    ctx = context(tmp_path)
    transport = StdioTransport(shutdown_grace=0.3, term_grace=0.3, kill_wait=2.0)
    started = time.monotonic()
    with anyio.fail_after(15):
        async with (
            transport.connect(server("hang_initialize", *args), ctx) as (read, write),
            ClientSession(read, write, read_timeout_seconds=1.0) as s,
        ):
            with pytest.raises(MCPError) as err:
                await s.initialize()
            assert err.value.error.code == REQUEST_TIMEOUT
            assert "hang_initialize: waiting forever" in ctx.diagnostics.stderr.tail()
    elapsed = time.monotonic() - started
    if stubborn:
        assert ctx.diagnostics.exit_code == -9  # only SIGKILL could stop it
    else:
        assert ctx.diagnostics.exit_code == 0  # closing stdin was enough
    assert ctx.diagnostics.error is None  # stopped by us, not a crash
    report(f"hang in initialize ({'stubborn' if stubborn else 'plain'}) -> timeout + stop", f"{elapsed:.2f} s")


@pytest.mark.parametrize("newlines", [True, False], ids=["lines", "one-giant-line"])
async def test_fifty_megabytes_of_stderr_are_drained_and_kept_bounded(tmp_path: Path, newlines: bool) -> None:
    args = ["--mb", "50"] + ([] if newlines else ["--no-newline"])
    ctx = context(tmp_path)
    started = time.monotonic()
    with anyio.fail_after(60):
        async with open_session(server("stderr_flood", *args), ctx, read_timeout=50) as session:
            ready = time.monotonic() - started
            assert (await session.call_tool("echo", {"message": "alive"})).content[0].text == "alive"
    buf = ctx.diagnostics.stderr
    kept = buf.lines()
    kept_bytes = sum(len(line.encode()) for line in kept)
    assert buf.tail(2) == ["stderr_flood: done", "stderr_flood: stdin closed, exiting"]
    assert len(kept) <= 50 + 200 + 1
    assert kept_bytes < 600_000
    if newlines:
        assert buf.total_lines > 500_000 and buf.dropped > 500_000
        assert kept[0].startswith("stderr_flood: eee")
    else:
        assert kept[0].endswith(" [...]")  # the 50 MB line, cut
    report(
        f"50 MB stderr ({'100-byte lines' if newlines else 'one line'})",
        f"server ready after {ready:.2f} s, {buf.total_lines} lines seen, {len(kept)} lines / {kept_bytes // 1024} KB kept",
    )


async def test_garbage_on_stdout_is_reported_and_the_session_continues(tmp_path: Path) -> None:
    recorder = Recorder()
    with anyio.fail_after(20):
        async with open_session(
            server("garbage_stdout", "--long-garbage", "2000000"), context(tmp_path), message_handler=recorder
        ) as session:
            for i in range(5):
                assert (await session.call_tool("echo", {"message": f"m{i}"})).content[0].text == f"m{i}"
            tools = await session.list_tools()
            assert "echo" in {t.name for t in tools.tools}
    errors = recorder.errors()
    assert errors and all(isinstance(e, InvalidServerMessage) for e in errors)
    # per answer: text, {"foo":1}, [1,2,3], invalid UTF-8, a cut object, the 2 MB line (blank lines are
    # skipped); at least 7 answers: initialize, 5 calls, list_tools (the SDK may list tools once more)
    assert len(errors) % 6 == 0 and len(errors) >= 6 * 7
    texts = [str(e) for e in errors]
    assert any("not JSON" in t for t in texts) and any("not a JSON-RPC message" in t for t in texts)
    assert any("(2000000 bytes)" in t for t in texts)


async def test_grandchild_is_killed_on_close(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    with anyio.fail_after(20):
        async with open_session(server("grandchild"), ctx) as session:
            grandchild = int((await session.call_tool("grandchild_pid", {})).content[0].text)
            assert not gone(grandchild)
            assert psutil.Process(grandchild).cmdline() == ["sleep", "300"]
    assert gone(grandchild)
    assert ctx.diagnostics.error is None


async def test_server_crash_with_a_grandchild_holding_the_pipes(tmp_path: Path) -> None:
    """The grandchild keeps stdout open, so EOF never comes: the exit watcher must end the session,
    and kill the orphan while the connection is still open."""
    ctx = context(tmp_path)
    with anyio.fail_after(20):
        async with open_session(server("grandchild"), ctx) as session:
            grandchild = int((await session.call_tool("grandchild_pid", {})).content[0].text)
            elapsed = await crash_fails_the_call_within_a_second(session, 5)
            assert ctx.diagnostics.exit_code == 5
            # the exit watcher kills the orphan while the connection is still open
            await wait_until_gone(grandchild, FAST.term_grace + 2)
    assert "grandchild: server dies, its child lives on" in ctx.diagnostics.stderr.tail()
    report("crash with grandchild holding stdout -> pending call failed", f"{elapsed:.3f} s")


async def test_slow_start_is_waited_for(tmp_path: Path) -> None:
    started = time.monotonic()
    with anyio.fail_after(20):
        async with open_session(server("slow_start", "--delay", "0.5"), context(tmp_path)) as session:
            ready = time.monotonic() - started
            assert (await session.call_tool("echo", {"message": "late"})).content[0].text == "late"
    assert ready >= 0.5


async def test_server_that_stops_reading_stdin_ends_the_connection(tmp_path: Path) -> None:
    """Back-pressure: the write of a 1 MB request blocks on the full pipe. The SDK's request
    timeout does not cover the write, so the transport bounds it."""
    transport = StdioTransport(shutdown_grace=0.3, term_grace=0.5, write_stall_timeout=1.0)
    ctx = context(tmp_path)
    started = time.monotonic()
    with anyio.fail_after(20):
        async with open_session(server("stop_reading"), ctx, transport=transport, read_timeout=30) as session:
            with pytest.raises(MCPError) as err:
                await session.call_tool("echo", {"message": "x" * 1_000_000})
            failed = time.monotonic() - started
            assert err.value.error.code == CONNECTION_CLOSED
            assert ctx.diagnostics.error is not None
            assert "stopped reading its stdin" in ctx.diagnostics.error
            # every later request fails at once instead of blocking on the dead pipe
            with anyio.fail_after(2), pytest.raises(MCPError):
                await session.call_tool("echo", {"message": "y" * 1_000_000})
    assert ctx.diagnostics.stderr.tail() == ["stop_reading: answered initialize; not reading stdin any more"]
    assert ctx.diagnostics.exit_code == -15  # SIGTERM on close
    report("stopped reading stdin -> connection ended", f"{failed:.2f} s (write_stall_timeout=1 s)")


async def test_many_crashes_in_a_row_leave_nothing_behind(tmp_path: Path) -> None:
    for _ in range(5):
        ctx = context(tmp_path)
        with anyio.fail_after(10):
            async with open_session(server("grandchild"), ctx) as session:
                with pytest.raises(MCPError):
                    await session.call_tool("crash", {})
        assert ctx.diagnostics.exit_code == 5
