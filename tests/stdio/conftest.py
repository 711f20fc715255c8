"""Fixtures of the stdio transport tests."""

from __future__ import annotations

from collections.abc import Iterator

import peers
import pytest


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    """The test must leave no process behind (children, grandchildren or orphans)."""
    with peers.no_leftover_processes():
        yield
