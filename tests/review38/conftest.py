"""Review 38's reproductions: each runs real ``kairox`` processes over a cloned workspace
(see :mod:`review38_lab`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from review38_lab import Lab


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path)
