"""Fixtures for the DAP tests: a workspace with the sample program."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .helpers import SAMPLE


@pytest.fixture
def dap_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(SAMPLE, ws / "sample.py")
    return ws
