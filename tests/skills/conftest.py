"""The skills tests' runtimes load kairox-skills (``kairox.testing``'s harness takes its plugins from here)."""

from __future__ import annotations

import pytest

import kairox_skills.hooks


@pytest.fixture
def kairox_plugins() -> list[object]:
    return [kairox_skills.hooks]
