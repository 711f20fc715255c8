"""Fixtures for the LSP tests: a copy of the fixture project, process-leak checks."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh copy of tests/fixtures/lsp_project."""
    dest = tmp_path / "project"
    shutil.copytree(FIXTURE, dest)
    return dest


@pytest.fixture
def no_leaked_children() -> Iterator[None]:
    """Fail when the test leaves a child process running."""
    before = {p.pid for p in live_children()}
    yield
    left = [p for p in live_children() if p.pid not in before]
    for proc in left:
        proc.kill()
    assert not left, f"processes left running: {[(p.pid, p.cmdline()) for p in left]}"


def server_command(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found
