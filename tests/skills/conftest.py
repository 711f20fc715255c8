"""The skills tests' runtimes load kairox-skills (``kairox_testing``'s harness takes its plugins from here)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import kairox_skills.hooks


@pytest.fixture
def kairox_plugins() -> list[object]:
    return [kairox_skills.hooks]


@pytest.fixture(autouse=True)
def user_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``HOME`` is a temporary directory and ``CODEX_HOME`` unset before any harness copies
    the environment: the skill folders of other tools (``~/.claude/skills``, ...) are never
    the real ones."""
    home = tmp_path_factory.mktemp("user-home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("USERPROFILE", raising=False)
    yield home
