"""Helpers shared by the DAP tests."""

from __future__ import annotations

from pathlib import Path

import psutil

SAMPLE = Path(__file__).with_name("sample_program.py")


def live_children() -> list[psutil.Process]:
    """Child processes of this test process (recursively) that have not exited."""
    out = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except psutil.NoSuchProcess:
            continue
    return out


def alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (zombies count as gone)."""
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out
