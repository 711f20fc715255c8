"""StdioPeer: framing over a real child, process groups, grace + kill, bounded stderr.

The stderr record itself (:class:`kairox_process.OutputTail`) is tested in tests/process/test_process.py.
"""

from __future__ import annotations

import sys
import time

import anyio
import pytest
from peers import alive

from kairox_peer import CommandNotFound, StdioPeer
from kairox_process import OutputTail

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


async def _started(script: str, says: str) -> StdioPeer:
    """A python child running ``script``, once it wrote ``says`` to stderr."""
    peer = await StdioPeer.spawn(sys.executable, ["-c", script])
    async with anyio.create_task_group() as tg:
        tg.start_soon(peer.drain_stderr)
        await _wait_for_stderr(peer, says)
        tg.cancel_scope.cancel()
    return peer


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
    peer = await _started(GRANDCHILD, "grandchild")
    words = next(line for line in peer.stderr.lines() if "grandchild" in line).split()
    pids = [peer.pid, int(words[1]), int(words[2])]
    assert alive(pids) == pids
    await peer.aclose(grace=0.2)
    assert alive(pids) == []


@pytest.mark.anyio
async def test_a_process_that_ignores_stdin_and_sigterm_is_hard_killed() -> None:
    peer = await _started(STUBBORN, "ready")
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
    assert isinstance(peer.stderr, OutputTail)  # the kernel's bounded record
    assert peer.stderr.total_bytes > 4_000_000
    assert sum(len(line) + 1 for line in peer.stderr.lines()) <= 4096
    assert "earlier lines not shown" in peer.stderr.text(5)


@pytest.mark.anyio
async def test_missing_command() -> None:
    with pytest.raises(CommandNotFound):
        await StdioPeer.spawn("kairox-no-such-language-server")
    with pytest.raises(CommandNotFound):
        await StdioPeer.spawn("./no/such/server")


@pytest.mark.anyio
async def test_a_server_s_stderr_is_read_back_redacted() -> None:
    # a language server (or debug adapter) may echo a token it was given: status shows this tail
    script = "import sys; sys.stderr.write('auth failed TOKEN=lspsecret-JJJ via https://u:pw-KKK@example.com\\n')"
    peer = await StdioPeer.spawn(sys.executable, ["-c", script])
    try:
        with anyio.fail_after(30):
            await peer.drain_stderr()
    finally:
        await peer.aclose(grace=1)
    shown = peer.stderr.text()
    assert "auth failed" in shown
    assert "lspsecret-JJJ" not in shown and "pw-KKK" not in shown
