"""Fixtures of the security tests: the attack workspace and its 127.0.0.1 listener."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from security_helpers import Attack, Clone, Listener, build_attack, listening, make_clone

from kairox_testing import KairoxHarness


@pytest.fixture
def listener() -> Iterator[Listener]:
    """A 127.0.0.1 socket the workspace's HTTP server and catalog source point at."""
    with listening() as sock:
        yield sock


@pytest.fixture
def attack(tmp_path: Path, listener: Listener) -> Attack:
    return build_attack(tmp_path, listener)


@pytest.fixture
def harness(attack: Attack) -> KairoxHarness:
    """In-process CLI runs over the attack workspace, with the secret in the environment."""
    return KairoxHarness(attack.workspace, attack.home, env=attack.env())


@pytest.fixture
def clone(tmp_path: Path) -> Clone:
    """A small cloned repository of its own (see :class:`security_helpers.Clone`)."""
    return make_clone(tmp_path)
