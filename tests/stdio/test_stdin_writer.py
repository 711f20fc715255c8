"""The stdio transport's write stream (kairox_stdio._writer): a message the pipe takes is written in
the sender's task, the rest waits in order for the writer task. Every test writes into a real pipe.

The property: whatever the pipe takes at once or not, and however the reader lags, the reader
gets exactly the messages sent, each line whole, each sender's in the order it sent them, and
a send that returned means its message is in the pipe.
"""

from __future__ import annotations

import errno
import functools
import json
import math
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kairox_stdio._writer import StdinWriter, encode

pytestmark = pytest.mark.anyio


def message(sender: int, seq: int, size: int) -> object:
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCNotification

    params = {"sender": sender, "seq": seq, "pad": "x" * size}
    return SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/test", params=params))


@asynccontextmanager
async def pipe(**options: Any) -> AsyncIterator[tuple[StdinWriter, int, list[OSError]]]:
    """A writer on a new pipe (``options`` for it), its writer task running; yields (writer,
    read end, broken calls)."""
    r, w = os.pipe()
    broken: list[OSError] = []

    async def note(exc: OSError) -> None:
        broken.append(exc)

    writer = StdinWriter(w, on_broken=note, **options)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.run)
            yield writer, r, broken
            writer.close()
    finally:
        writer.close_fd()
        try:
            os.close(r)
        except OSError:
            pass


async def until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` (state of the writer no event announces) until it holds."""
    for _ in range(1000):
        if condition():
            return
        await anyio.sleep(0.01)
    raise AssertionError("the condition never held")


async def read_lines(fd: int, count: int, *, lag: float = 0.0, chunk: int = 65536) -> list[dict[str, object]]:
    """``count`` lines from ``fd``, parsed; ``lag`` seconds before each read (a slow server)."""
    os.set_blocking(fd, False)
    buf = b""
    lines: list[dict[str, object]] = []
    while len(lines) < count:
        if lag:
            await anyio.sleep(lag)
        await anyio.wait_readable(fd)
        data = os.read(fd, chunk)
        assert data, "EOF before every message arrived"
        buf += data
        *done, buf = buf.split(b"\n")
        lines.extend(json.loads(line) for line in done)
    assert buf == b""
    return lines


async def read_lines_into(
    got: list[dict[str, object]], fd: int, count: int, *, lag: float = 0.0, chunk: int = 65536
) -> None:
    """:func:`read_lines` as a task of its own: the lines go into ``got``."""
    got.extend(await read_lines(fd, count, lag=lag, chunk=chunk))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    plan=st.lists(st.lists(st.integers(0, 200_000), min_size=1, max_size=6), min_size=1, max_size=4),
    lag=st.sampled_from([0.0, 0.001]),
    chunk=st.sampled_from([4096, 65536]),
)
async def test_every_message_arrives_whole_and_each_senders_in_order(
    plan: list[list[int]], lag: float, chunk: int
) -> None:
    """Senders (tasks) write messages of the sizes in ``plan`` at once; some fit the pipe, some
    wait (up to 200 KB, over the 64 KiB pipe), the reader lags or not."""
    total = sum(len(sizes) for sizes in plan)
    got: list[dict[str, object]] = []
    with anyio.fail_after(30):
        async with pipe() as (writer, r, broken):

            async def sender(i: int, sizes: list[int]) -> None:
                for seq, size in enumerate(sizes):
                    await writer.send(message(i, seq, size))

            async with anyio.create_task_group() as tg:
                tg.start_soon(functools.partial(read_lines_into, got, r, total, lag=lag, chunk=chunk))
                for i, sizes in enumerate(plan):
                    tg.start_soon(sender, i, sizes)
    assert broken == []
    for i, sizes in enumerate(plan):
        mine = [m["params"] for m in got if m["params"]["sender"] == i]  # type: ignore[index]
        assert [(p["seq"], len(p["pad"])) for p in mine] == list(enumerate(sizes))  # type: ignore[index]


async def test_a_message_the_pipe_takes_is_written_before_send_nowait_returns() -> None:
    async with pipe() as (writer, r, _):
        writer.send_nowait(message(0, 0, 10))
        assert writer.writing is None
        data = os.read(r, 65536)  # no task ran in between
        assert data == encode(message(0, 0, 10))


async def test_what_the_pipe_cannot_take_waits_and_send_nowait_refuses_to_jump_it() -> None:
    big = message(0, 0, 300_000)
    async with pipe() as (writer, r, _):
        writer.send_nowait(big)  # accepted: its first 64 KiB are in the pipe, the rest waits
        assert writer.writing is not None and writer.writing[1] == len(encode(big))
        with pytest.raises(anyio.WouldBlock):
            writer.send_nowait(message(0, 1, 1))
        with anyio.fail_after(10):
            lines = await read_lines(r, 1)
            await until(lambda: writer.writing is None)
        assert lines[0]["params"]["seq"] == 0  # type: ignore[index]
        writer.send_nowait(message(0, 1, 1))
        assert os.read(r, 65536) == encode(message(0, 1, 1))


async def test_a_send_cancelled_before_any_byte_went_out_is_not_sent() -> None:
    async with pipe() as (writer, r, _):
        writer.send_nowait(message(0, 0, 300_000))  # the pipe is full: the next send waits
        with anyio.move_on_after(0.1):
            await writer.send(message(0, 1, 5))
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer.send, message(0, 2, 5))
                lines = await read_lines(r, 2)
    assert [m["params"]["seq"] for m in lines] == [0, 2]  # type: ignore[index]


async def test_a_send_cancelled_halfway_is_finished_so_the_framing_holds() -> None:
    first, second = message(0, 9, 100_000), message(0, 1, 1_000_000)
    async with pipe() as (writer, r, _):
        writer.send_nowait(first)  # the pipe takes 64 KiB of it; the rest waits
        scope = anyio.CancelScope()

        async def sending() -> None:
            with scope:
                await writer.send(second)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(sending)
                await anyio.sleep(0.05)  # waiting behind the first
                got = b""
                while len(got) < len(encode(first)) + 1000:  # the first is out, the second begun
                    await anyio.wait_readable(r)
                    got += os.read(r, 65536)
                await until(lambda: writer.writing is not None and writer.writing[1] == len(encode(second)))
                scope.cancel()
            assert scope.cancelled_caught
            os.set_blocking(r, False)
            while got.count(b"\n") < 2:
                await anyio.wait_readable(r)
                got += os.read(r, 65536)
    assert [json.loads(line)["params"]["seq"] for line in got.split(b"\n")[:2]] == [9, 1]


async def test_a_closed_pipe_drops_messages_and_calls_on_broken_once() -> None:
    async with pipe() as (writer, r, broken):
        os.close(r)  # the server closed its stdin (or died)
        writer.send_nowait(message(0, 0, 10))  # dropped: its call fails when the connection ends
        writer.send_nowait(message(0, 1, 10))
        await writer.send(message(0, 2, 10))
        with anyio.fail_after(5):
            await until(lambda: bool(broken))
        await anyio.sleep(0.05)
    assert len(broken) == 1 and broken[0].errno == errno.EPIPE


async def test_after_close_sends_fail_and_waiting_sends_fail_too() -> None:
    failures: list[type[BaseException]] = []
    async with pipe() as (writer, _r, _):
        writer.send_nowait(message(0, 0, 300_000))

        async def waiting() -> None:
            try:
                await writer.send(message(0, 1, 5))
            except anyio.BrokenResourceError as exc:
                failures.append(type(exc))

        async with anyio.create_task_group() as tg:
            tg.start_soon(waiting)
            await anyio.sleep(0.05)
            writer.close()  # the connection ended (the server died, a stall)
        with pytest.raises(anyio.BrokenResourceError):
            writer.send_nowait(message(0, 2, 5))
        with pytest.raises(anyio.BrokenResourceError):
            await writer.send(message(0, 2, 5))
    assert failures == [anyio.BrokenResourceError]


async def test_after_aclose_a_send_is_a_closed_resource() -> None:
    async with pipe() as (writer, _r, _):
        async with writer:
            pass
        with pytest.raises(anyio.ClosedResourceError):
            await writer.send(message(0, 0, 5))


async def test_writing_says_since_when_a_write_waits_for_the_watchdog() -> None:
    async with pipe() as (writer, r, _):
        before = time.monotonic()
        writer.send_nowait(message(0, 0, 200_000))
        assert writer.writing is not None
        since, size = writer.writing
        assert before <= since <= time.monotonic() and size == len(encode(message(0, 0, 200_000)))
        await anyio.sleep(0.05)
        assert writer.writing == (since, size)  # nothing read: the same write, the same start
        with anyio.fail_after(10):
            await read_lines(r, 1)
            await until(lambda: writer.writing is None)


async def test_close_fd_wakes_a_writer_waiting_on_the_pipe() -> None:
    r, w = os.pipe()

    async def note(exc: OSError) -> None:
        raise AssertionError("not broken: closed")

    writer = StdinWriter(w, on_broken=note)
    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer.run)
                writer.send_nowait(message(0, 0, 300_000))
                await anyio.sleep(0.05)  # the writer task waits for the pipe now
                writer.close_fd()
        assert writer.writing is None
    finally:
        os.close(r)


@pytest.mark.parametrize("stall_timeout", [math.inf, 0.4])
async def test_a_send_cancelled_while_first_in_line_for_a_full_pipe_leaves_the_writer_going(
    stall_timeout: float,
) -> None:
    """The waiting message at the head of the line, its sender cancelled while the writer task
    waits for the full pipe: it is not sent, its stall timer stops (the pipe stays full past
    the timeout: no stall), and the writer goes on when the server reads again (before: the
    writer task died and took the connection down)."""
    import fcntl

    page = 4096
    stalls: list[int] = []
    async with pipe(stall_timeout=stall_timeout, on_stall=stalls.append) as (writer, r, broken):
        fd = writer._fd
        assert fd is not None
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 16 * page)
        overhead = len(encode(message(0, 0, 0)))
        first = message(0, 0, 16 * page + page - overhead)  # one page more than the pipe holds
        writer.send_nowait(first)
        scope = anyio.CancelScope()

        async def sending() -> None:
            with scope:
                await writer.send(message(0, 1, 10))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(sending)
                await until(lambda: len(writer._queue) == 2)
                got = os.read(r, page)  # one page out: the first's last page goes in, the pipe is full again
                await until(lambda: len(writer._queue) == 1 and writer._queue[0].size != 17 * page)
                assert writer.writing is not None and writer.writing[1] < page  # the second waits for the pipe
                scope.cancel()
            assert scope.cancelled_caught
            assert writer.writing is None
            await anyio.sleep(0.6 if stall_timeout < 1 else 0)  # full past the stall timeout
            assert stalls == []
            os.set_blocking(r, False)
            while len(got) < 17 * page:
                await anyio.wait_readable(r)
                got += os.read(r, 65536)
            await anyio.sleep(0.05)  # the writer task sees the pipe writable again
            writer.send_nowait(message(0, 2, 10))
            lines = await read_lines(r, 1)
    assert got == encode(first)
    assert [m["params"]["seq"] for m in lines] == [2]  # type: ignore[index]
    assert broken == []


async def test_finish_lets_a_half_written_message_out_before_the_pipe_closes() -> None:
    big = message(0, 0, 200_000)
    async with pipe() as (writer, r, _):
        writer.send_nowait(big)  # the pipe takes 64 KiB of it
        got: list[dict[str, object]] = []
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(functools.partial(read_lines_into, got, r, 1, lag=0.01))
                await writer.finish(5)
                assert writer.writing is None
                writer.close_fd()
        assert os.read(r, 10) == b""  # EOF right after the line
    assert got[0]["params"]["seq"] == 0  # type: ignore[index]


async def test_finish_waits_no_longer_than_it_is_told() -> None:
    async with pipe() as (writer, _r, _):
        writer.send_nowait(message(0, 0, 200_000))  # nobody reads
        started = time.monotonic()
        await writer.finish(0.2)
        assert 0.15 < time.monotonic() - started < 2


async def test_a_write_that_waits_past_the_stall_timeout_ends_the_writer() -> None:
    """The connection's one write timer: armed while the pipe is full, from when the write began."""
    r, w = os.pipe()
    stalls: list[tuple[int, float]] = []

    async def note(exc: OSError) -> None:
        raise AssertionError("not broken: stalled")

    big = message(0, 0, 200_000)
    writer = StdinWriter(
        w, on_broken=note, stall_timeout=0.3, on_stall=lambda size: stalls.append((size, time.monotonic()))
    )
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer.run)
                began = time.monotonic()
                writer.send_nowait(big)  # nobody reads
                with pytest.raises(anyio.BrokenResourceError):
                    await writer.send(message(0, 1, 5))  # waits behind it, fails with the connection
        assert [size for size, _ in stalls] == [len(encode(big))]
        assert 0.25 < stalls[0][1] - began < 3
        assert writer.writing is None
        with pytest.raises(anyio.BrokenResourceError):
            writer.send_nowait(message(0, 2, 5))
    finally:
        writer.close_fd()
        os.close(r)


async def test_a_write_that_waits_less_than_the_stall_timeout_goes_through() -> None:
    r, w = os.pipe()

    async def note(exc: OSError) -> None:
        raise AssertionError("not broken")

    def stalled(size: int) -> None:
        raise AssertionError("not stalled")

    writer = StdinWriter(w, on_broken=note, stall_timeout=5, on_stall=stalled)
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer.run)
                writer.send_nowait(message(0, 0, 200_000))
                await anyio.sleep(0.3)  # the server reads late, well within the timeout
                lines = await read_lines(r, 1)
                await until(lambda: writer.writing is None)
                writer.close()
        assert lines[0]["params"]["seq"] == 0  # type: ignore[index]
    finally:
        writer.close_fd()
        os.close(r)


async def test_aclose_keeps_a_half_written_message_for_finish_and_drops_the_rest() -> None:
    """The SDK closes its write stream as the session ends, before the transport's shutdown."""
    big = message(0, 0, 200_000)
    async with pipe() as (writer, r, _):
        writer.send_nowait(big)  # 64 KiB of it in the pipe
        failures: list[type[BaseException]] = []

        async def waiting() -> None:
            try:
                await writer.send(message(0, 1, 5))
            except anyio.ClosedResourceError as exc:
                failures.append(type(exc))

        got: list[dict[str, object]] = []
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(waiting)
                await until(lambda: len(writer._queue) == 2)
                await writer.aclose()
                await until(lambda: bool(failures))
                assert failures == [anyio.ClosedResourceError]  # not started: dropped
                with pytest.raises(anyio.ClosedResourceError):
                    writer.send_nowait(message(0, 2, 5))
                tg.start_soon(functools.partial(read_lines_into, got, r, 1, lag=0.01))
                await writer.finish(5)
                writer.close_fd()
        assert os.read(r, 10) == b""  # EOF right after the line
    assert [m["params"]["seq"] for m in got] == [0]  # type: ignore[index]


async def test_a_line_half_written_when_the_session_closes_reaches_the_server_whole(tmp_path: Path) -> None:
    """Through the transport, in the SDK's order (the session closes its write stream, then the
    transport shuts down): a server that reads on within the grace gets the whole line, then EOF."""
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCNotification
    from stdio_helpers import context

    from kairox_mcp.config import McpServerConfig
    from kairox_stdio import StdioTransport

    report = tmp_path / "read.json"
    script = (
        "import json, os, sys, time\n"
        "time.sleep(0.2)\n"
        "data = b''\n"
        "while chunk := os.read(0, 65536):\n"
        "    data += chunk\n"
        "lines = data.split(b'\\n')\n"
        f"open({str(report)!r}, 'w').write(json.dumps([len(lines) - 1, len(lines[-1])]))\n"
    )
    config = McpServerConfig(command=sys.executable, args=["-c", script])
    note = SessionMessage(
        JSONRPCNotification(jsonrpc="2.0", method="notifications/big", params={"pad": "x" * 1_000_000})
    )
    transport = StdioTransport(shutdown_grace=5, term_grace=0.5)
    with anyio.fail_after(20):
        async with transport.connect(config, context(tmp_path)) as (_read, write):
            write.send_nowait(note)  # the pipe takes 64 KiB of it; the server is not reading yet
            await write.aclose()
    assert json.loads(report.read_text()) == [1, 0]  # one whole line, nothing cut after it
