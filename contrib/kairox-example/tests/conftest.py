"""Every runtime the kairox fixtures open registers this plugin (kairox-testing is a pytest plugin:
kairox_harness, kairox_runtime and friends need no import)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

try:
    import kairox_example.hooks
except ImportError:  # running from a checkout where the package is not installed yet
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import kairox_example.hooks


@pytest.fixture
def kairox_plugins() -> list[object]:
    return [kairox_example.hooks]
