"""Fixtures for the LSP tests: a copy of the fixture project."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .helpers import FIXTURE


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh copy of tests/fixtures/lsp_project."""
    dest = tmp_path / "project"
    shutil.copytree(FIXTURE, dest)
    return dest
