"""Fixtures for the LSP tests: a copy of the fixture project, process-leak checks."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import FIXTURE, live_children


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
