"""``group_alive`` scans ``/proc`` only for a group that still has a member.

At close, every server's group is checked once its leader is reaped; with 100
servers, a scan of every process for each of them made the close quadratic.
A group with no member at all (not even a zombie) is known dead from
``killpg(pgid, 0)`` alone; a group with only zombies still needs the scan.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import kairox_process._children
from kairox_process import group_alive


def _no_scan() -> None:
    raise AssertionError("/proc was scanned")


def test_a_group_with_no_member_is_dead_without_a_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    proc.wait()  # reaped: the group is gone
    monkeypatch.setattr(kairox_process._children, "_proc_stats", _no_scan)
    assert not group_alive(proc.pid)


def test_a_group_of_zombies_is_dead_and_a_live_group_alive() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # exited, not reaped: a zombie holds the group
        with open(f"/proc/{proc.pid}/stat", "rb") as fh:
            if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                break
        time.sleep(0.01)
    os.killpg(proc.pid, 0)  # the group exists
    assert not group_alive(proc.pid)
    proc.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        assert group_alive(live.pid)
    finally:
        live.kill()
        live.wait()
