"""Fixtures of the MCP tests: real peers (process hygiene is `no_leftovers` in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import peers
import pytest

from kairox._runtime import Runtime


@pytest.fixture(scope="session")
def everything_js() -> Path:
    return Path(peers.everything_server_js())


@pytest.fixture
def everything_sse(everything_js: Path) -> Iterator[str]:
    with peers.everything_http("sse") as url:
        yield url


@pytest.fixture
def everything_shttp(everything_js: Path) -> Iterator[str]:
    with peers.everything_http("streamableHttp") as url:
        yield url


@pytest.fixture
def events_of() -> Callable[[Runtime], list[Any]]:
    """``events_of(rt)`` subscribes and returns the live list of events published on ``rt``."""

    def subscribe(rt: Runtime) -> list[Any]:
        seen: list[Any] = []
        rt.events.subscribe(seen.append)
        return seen

    return subscribe
