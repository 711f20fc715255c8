"""Helpers shared by the LSP tests (process checks, finding real servers)."""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "lsp_project"


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


def server_command(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found
