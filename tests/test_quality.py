"""Lint, format and type checks are part of the test run: ``uv run pytest`` fails when they do.

Each runs from the repository root with the configuration in pyproject.toml, as
``ruff check .``, ``ruff format --check .`` and ``mypy``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

# one worker runs the three, first of the whole run (tests/conftest.py sorts them to the
# front, mypy first): mypy is the longest single CPU-bound step and must not be the tail
pytestmark = pytest.mark.xdist_group("quality")

CHECKS = {
    "ruff check": [str(BIN / "ruff"), "check", "--no-cache", "."],
    "ruff format": [str(BIN / "ruff"), "format", "--check", "--no-cache", "."],
    "mypy": [sys.executable, "-m", "mypy"],
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_quality(name: str) -> None:
    out = subprocess.run(CHECKS[name], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, f"`{name}` failed:\n{out.stdout[-20000:]}\n{out.stderr[-5000:]}"
