"""kairox.process: the one process-group layer every feature uses (issue 16, item 3)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import anyio.abc
import pytest

from kairox.process import (
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
    assert await wait_group_gone(leader, timeout=5)
    assert grandchild not in session_members(leader)


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
