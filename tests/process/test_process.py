"""kairox_process: the one process-group layer every feature uses (issue 16, item 3)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import anyio.abc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_process import (
    OutputTail,
    describe_exit,
    group_alive,
    kill_group,
    kill_session,
    open_group,
    reap,
    session_members,
    wait_group_gone,
    wait_session_gone,
)

#: a leader that starts a grandchild in its group, prints both pids, and ignores SIGTERM
FAMILY = (
    "import os, signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "print(os.getpid(), child.pid, flush=True)\n"
    "time.sleep(60)\n"
)


async def _line(process: anyio.abc.Process) -> bytes:
    """The first line the process prints (its pids)."""
    assert process.stdout is not None
    line = b""
    while not line.endswith(b"\n"):
        line += await process.stdout.receive()
    return line


def test_describe_exit() -> None:
    assert describe_exit(0) == "exited with code 0"
    assert describe_exit(3) == "exited with code 3"
    assert describe_exit(-signal.SIGKILL) == "was killed by SIGKILL"
    assert describe_exit(-200) == "was killed by signal 200"
    assert describe_exit(None) == "is still running"


def test_kill_group_reaches_the_grandchild_after_the_leader_is_gone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", FAMILY], stdout=subprocess.PIPE, start_new_session=True, text=True)
    assert proc.stdout is not None
    leader, grandchild = map(int, proc.stdout.readline().split())
    assert group_alive(leader)
    assert {leader, grandchild} <= set(session_members(leader))
    proc.kill()
    proc.wait()
    assert group_alive(leader)  # the grandchild holds the group
    assert kill_group(leader)
    deadline = time.monotonic() + 5
    while group_alive(leader) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not group_alive(leader)
    assert kill_group(2**22 + 12345) is False


@pytest.mark.anyio
async def test_reap_ends_a_leader_that_ignores_sigterm(tmp_path: Path) -> None:
    process = await anyio.open_process([sys.executable, "-c", FAMILY], stdout=subprocess.PIPE, start_new_session=True)
    assert process.stdout is not None
    leader, grandchild = map(int, (await _line(process)).split())
    started = time.monotonic()
    code = await reap(process, grace=0.3)
    assert code == -signal.SIGKILL
    assert time.monotonic() - started < 5
    # SIGKILL lands asynchronously; reap waits for the group, so nothing of it is left now
    assert not group_alive(leader)
    assert grandchild not in session_members(leader)


@pytest.mark.anyio
async def test_wait_group_gone_is_bounded_and_sees_the_kill_land(tmp_path: Path) -> None:
    process = await anyio.open_process([sys.executable, "-c", FAMILY], stdout=subprocess.PIPE, start_new_session=True)
    assert process.stdout is not None
    leader, _ = map(int, (await _line(process)).split())
    try:
        assert await wait_group_gone(leader, timeout=0.2) is False  # alive: gives up at the bound
        assert kill_group(leader)
        assert await wait_group_gone(leader, timeout=5) is True
        assert not group_alive(leader)
    finally:
        await reap(process, grace=0.3)


@pytest.mark.anyio
async def test_open_group_kills_and_reaps_on_cancel(tmp_path: Path) -> None:
    pids: list[int] = []
    with anyio.move_on_after(1):
        async with open_group([sys.executable, "-c", FAMILY], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}) as process:
            assert process.stdout is not None
            pids = [int(p) for p in (await _line(process)).split()]
            await anyio.sleep(30)
    assert pids and not group_alive(pids[0])


@pytest.mark.anyio
async def test_kill_session_reaches_a_member_that_left_the_group(tmp_path: Path) -> None:
    """debugpy's launcher moves the debuggee to a group of its own; the session still holds it."""
    code = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import os, time; os.setpgid(0, 0); time.sleep(60)'])\n"
        "time.sleep(0.3)\n"
        "print(os.getpid(), child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = await anyio.open_process([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None
    leader, moved = map(int, (await _line(proc)).split())
    assert moved in session_members(leader)
    kill_session(leader)
    assert await wait_session_gone(leader, 5)
    await proc.wait()
    await proc.aclose()
    assert moved not in session_members(leader)


@given(
    st.lists(st.binary(max_size=40), max_size=20),
    st.integers(8, 200),
    st.integers(1, 30),
    st.integers(0, 3),
)
def test_output_tail_is_the_same_however_the_bytes_are_chunked(
    chunks: list[bytes], limit: int, max_line: int, head: int
) -> None:
    chunked = OutputTail(limit, max_line, head_lines=head)
    for chunk in chunks:
        chunked.feed(chunk)
    whole = OutputTail(limit, max_line, head_lines=head)
    whole.feed(b"".join(chunks))
    assert chunked.lines() == whole.lines()
    assert chunked.total_bytes == whole.total_bytes == sum(map(len, chunks))
    kept = sum(len(line) + 1 for line in whole.lines()[head:] if not line.startswith("[..."))
    assert kept <= limit + 4 * max_line  # the tail's bound, and the unfinished line's


def test_output_tail_keeps_the_head_and_the_last_lines_and_counts_the_rest() -> None:
    tail = OutputTail(max_bytes=30, head_lines=2)
    for i in range(100):
        tail.append(f"line {i}\n")
    assert tail.lines() == ["line 0", "line 1", "[... 95 lines dropped ...]", "line 97", "line 98", "line 99"]
    assert tail.text(3) == "[... 97 earlier lines not shown]\nline 97\nline 98\nline 99"
    assert tail.total_lines == 100


def test_an_endless_line_is_cut_into_pieces_not_held_whole() -> None:
    tail = OutputTail(max_bytes=100, max_line=10)
    for _ in range(1000):
        tail.feed(b"x" * 100)
    assert tail.total_bytes == 100_000
    assert len(tail._partial) <= 10
    assert sum(len(line) + 1 for line in tail.lines()) <= 111


def test_output_tail_without_a_head_keeps_the_last_lines_of_whole_lines_cut_into_pieces() -> None:
    tail = OutputTail(max_bytes=20, max_line=10)
    tail.feed(b"first\r\nsecond\nthird line that is long\nlast")
    assert tail.lines() == [" that is l", "ong", "last"]  # \r dropped; pieces of 10 bytes; the rest dropped
    assert tail.dropped == 3
    assert tail.text(2).splitlines() == ["[... 4 earlier lines not shown]", "ong", "last"]


def test_a_flood_of_empty_lines_is_bounded_in_lines_too() -> None:
    tail = OutputTail(max_bytes=64 * 1024, max_lines=100)
    tail.feed(b"\n" * 1_000_000)
    assert len(tail.lines()) == 100
    assert tail.dropped == 1_000_000 - 100
    assert tail.total_lines == 1_000_000


def test_a_redacting_tail_hides_secrets_and_cuts_long_lines_instead_of_splitting() -> None:
    tail = OutputTail(max_line=40, redact=True)
    tail.feed(b"auth failed TOKEN=lspsecret-JJJ\n")
    tail.feed(b"x" * 30 + b" password=" + b"y" * 100)  # an endless line with a secret across the cut
    tail.feed(b"z" * 50 + b"\nafter\n")
    lines = tail.lines()
    assert "lspsecret-JJJ" not in "\n".join(lines) and "lspsecret-JJJ" not in tail.text()
    assert lines[0] == "auth failed TOKEN=<redacted>"
    assert lines[1].endswith(OutputTail.CUT) and len(lines[1].encode()) <= 40
    assert "y" * 10 not in "\n".join(lines)  # no piece of the cut line's rest is kept
    assert lines[2:] == ["after"]
    plain = OutputTail(max_line=40)
    plain.feed(b"auth failed TOKEN=lspsecret-JJJ\n")
    assert plain.lines() == ["auth failed TOKEN=lspsecret-JJJ"]  # redaction is asked for, not implied


@given(st.lists(st.binary(max_size=60), max_size=15), st.integers(10, 40))
def test_a_redacting_tail_is_the_same_however_the_bytes_are_chunked(chunks: list[bytes], max_line: int) -> None:
    chunked = OutputTail(200, max_line, redact=True)
    for chunk in chunks:
        chunked.feed(chunk)
    whole = OutputTail(200, max_line, redact=True)
    whole.feed(b"".join(chunks))
    assert chunked.lines() == whole.lines()


@pytest.mark.parametrize(
    "line",
    [
        b"connecting to https://user:" + b"S3CRETPASSWORD" * 10 + b"@db.example/x",
        b"retrying with Authorization: Bearer " + b"T0KENVALUE" * 10,
        b"config: " + b"x" * 20 + b' {"token":"' + b"JS0NSECRET" * 10 + b'"}',
    ],
)
def test_a_redacting_tail_never_shows_the_first_half_of_a_secret_it_cuts(line: bytes) -> None:
    """A cut through a URL's password leaves ``https://user:S3CR...``, which redaction
    cannot tell from a URL without one: the word the cut splits is dropped."""
    tail = OutputTail(max_line=60, redact=True)
    tail.feed(line + b"\n")
    [shown] = tail.lines()
    assert shown.endswith(OutputTail.CUT) and len(shown.encode()) <= 60
    for secret in ("S3CRET", "T0KENV", "JS0NSE"):
        assert secret not in shown, shown
