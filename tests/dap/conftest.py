"""Fixtures for the DAP tests: a workspace with the sample program, process-leak checks."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import SAMPLE, live_children


@pytest.fixture
def dap_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(SAMPLE, ws / "sample.py")
    return ws


@pytest.fixture
def no_leaked_processes() -> Iterator[None]:
    """Fail when the test leaves a child process running."""
    before = {p.pid for p in live_children()}
    yield
    left = [p for p in live_children() if p.pid not in before]
    for proc in left:
        proc.kill()
    assert not left, f"processes left running: {[(p.pid, p.cmdline()) for p in left]}"
