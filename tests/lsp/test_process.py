"""StdioPeer: framing over a real child, process groups, grace + kill, bounded stderr."""

from __future__ import annotations

import sys
import time

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_lsp._process import CommandNotFound, StderrTail, StdioPeer

from .helpers import alive

pytestmark = pytest.mark.usefixtures("no_leftovers")

ECHO = r"""
import json, sys
inp, out = sys.stdin.buffer, sys.stdout.buffer
while True:
    header = b""
    while not header.endswith(b"\r\n\r\n"):
        ch = inp.read(1)
        if not ch:
            sys.exit(0)
        header += ch
    length = int(header.split(b":")[1].split(b"\r\n")[0])
    msg = json.loads(inp.read(length))
    body = json.dumps({"echo": msg}).encode()
    out.write(b"Content-Length: %d\r\nContent-Type: application/json\r\n\r\n" % len(body) + body)
    out.flush()
"""

GRANDCHILD = r"""
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
# like debugpy's launcher: a process group of its own, in the same session
other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], preexec_fn=os.setpgrp)
sys.stderr.write(f"grandchild {child.pid} {other.pid}\n"); sys.stderr.flush()
time.sleep(600)
"""

STUBBORN = r"""
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdin.close()
sys.stderr.write("ready\n"); sys.stderr.flush()
while True:
    time.sleep(1)
"""

FLOOD = r"""
import sys
for i in range(300_000):
    sys.stderr.write(f"noise line {i}\n")
sys.stderr.flush()
sys.stdout.buffer.write(b'Content-Length: 2\r\n\r\n{}'); sys.stdout.flush()
sys.stdin.read()
"""


async def _wait_for_stderr(peer: StdioPeer, text: str, timeout: float = 10) -> None:
    with anyio.fail_after(timeout):
        while not any(text in line for line in peer.stderr.lines()):  # noqa: ASYNC110 - no event to wait on
            await anyio.sleep(0.02)


@pytest.mark.anyio
async def test_echo_round_trip_with_non_ascii() -> None:
    peer = await StdioPeer.spawn(sys.executable, ["-c", ECHO])
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.drain_stderr)
            await peer.send({"id": 1, "text": "héllo 😀"})
            await peer.send({"id": 2})
            got = []
            async for message in peer.messages():
                got.append(message)
                if len(got) == 2:
                    break
            tg.cancel_scope.cancel()
        assert got == [{"echo": {"id": 1, "text": "héllo 😀"}}, {"echo": {"id": 2}}]
    finally:
        code = await peer.aclose(grace=2)
    assert code == 0  # it exited on its own when stdin closed


@pytest.mark.anyio
async def test_the_whole_group_and_session_is_killed() -> None:
    peer = await StdioPeer.spawn(sys.executable, ["-c", GRANDCHILD])
    async with anyio.create_task_group() as tg:
        tg.start_soon(peer.drain_stderr)
        await _wait_for_stderr(peer, "grandchild")
        tg.cancel_scope.cancel()
    words = next(line for line in peer.stderr.lines() if "grandchild" in line).split()
    pids = [peer.pid, int(words[1]), int(words[2])]
    assert alive(pids) == pids
    await peer.aclose(grace=0.2)
    assert alive(pids) == []


@pytest.mark.anyio
async def test_a_process_that_ignores_stdin_and_sigterm_is_hard_killed() -> None:
    peer = await StdioPeer.spawn(sys.executable, ["-c", STUBBORN])
    async with anyio.create_task_group() as tg:
        tg.start_soon(peer.drain_stderr)
        await _wait_for_stderr(peer, "ready")
        tg.cancel_scope.cancel()
    started = time.monotonic()
    code = await peer.aclose(grace=0.3)
    assert time.monotonic() - started < 5
    assert code is not None and code < 0  # killed by a signal
    assert alive([peer.pid]) == []


@pytest.mark.anyio
async def test_aclose_in_a_cancelled_scope_still_reaps() -> None:
    peer = await StdioPeer.spawn(sys.executable, ["-c", STUBBORN])
    with anyio.CancelScope() as scope:
        scope.cancel()
        await peer.aclose(grace=0.1)
    assert alive([peer.pid]) == []


@pytest.mark.anyio
async def test_stderr_flood_is_drained_and_bounded() -> None:
    peer = await StdioPeer.spawn(sys.executable, ["-c", FLOOD], stderr_bytes=4096)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.drain_stderr)
            with anyio.fail_after(30):
                async for message in peer.messages():
                    assert message == {}
                    break
            await _wait_for_stderr(peer, "noise line 299999")
            tg.cancel_scope.cancel()
    finally:
        await peer.aclose(grace=1)
    assert peer.stderr.total_bytes > 4_000_000
    assert sum(len(line) + 1 for line in peer.stderr.lines()) <= 4096
    assert "earlier lines not shown" in peer.stderr.text(5)


@pytest.mark.anyio
async def test_missing_command() -> None:
    with pytest.raises(CommandNotFound):
        await StdioPeer.spawn("kairox-no-such-language-server")
    with pytest.raises(CommandNotFound):
        await StdioPeer.spawn("./no/such/server")


@given(st.lists(st.binary(max_size=50), max_size=30), st.integers(4, 64), st.integers(16, 400))
def test_stderr_tail_is_bounded_and_does_not_depend_on_chunking(chunks: list[bytes], max_line: int, limit: int) -> None:
    chunked = StderrTail(max_bytes=limit, max_line=max_line)
    for chunk in chunks:
        chunked.feed(chunk)
    whole = StderrTail(max_bytes=limit, max_line=max_line)
    whole.feed(b"".join(chunks))
    assert chunked.lines() == whole.lines()
    assert chunked.total_bytes == whole.total_bytes == sum(map(len, chunks))
    assert sum(len(line.encode("utf-8", "replace")) for line in chunked._lines) <= limit * 3


def test_stderr_tail_keeps_the_last_lines() -> None:
    tail = StderrTail(max_bytes=20, max_line=10)
    tail.feed(b"first\r\nsecond\nthird line that is long\nlast")
    assert tail.lines() == [" that is l", "ong", "last"]  # pieces of 10 bytes; the rest dropped
    assert tail.dropped == 3
    assert tail.text(2).splitlines() == ["[... 4 earlier lines not shown]", "ong", "last"]
