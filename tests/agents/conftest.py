"""The agents tests run runtimes with kairox-agents and kairox-manifests registered inline, and a
private HOME (so ``~/.claude`` of the machine is never read): ``kairox_env`` and ``user_home`` of
``tests/bundle_fixtures.py``."""

from __future__ import annotations

import pytest
from bundle_fixtures import kairox_env, user_home

__all__ = ["kairox_env", "kairox_plugins", "user_home"]


@pytest.fixture
def kairox_plugins() -> list[object]:
    import kairox_agents.hooks
    import kairox_manifests.hooks

    return [kairox_agents.hooks, kairox_manifests.hooks]
