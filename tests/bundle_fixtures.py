"""Fixtures of the tests that run bundles (``tests/plugins``, ``tests/philont``): runtimes with
kairox-manifests and kairox-philont registered inline, and a private HOME (so
``~/.philont/plugins`` of the machine is never read).

A ``conftest.py`` imports them: ``from bundle_fixtures import kairox_env, kairox_plugins, user_home``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

__all__ = ["kairox_env", "kairox_plugins", "user_home"]


@pytest.fixture
def kairox_plugins() -> list[object]:
    import kairox_manifests.hooks
    import kairox_philont.hooks

    return [kairox_manifests.hooks, kairox_philont.hooks]


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    path = tmp_path / "user-home"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture
def kairox_env(kairox_env: dict[str, str], user_home: Path) -> dict[str, str]:
    kairox_env["HOME"] = str(user_home)
    return kairox_env
