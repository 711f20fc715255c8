"""Repository-wide test configuration."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import peers
import pytest
from hypothesis import HealthCheck, settings

# Hypothesis profiles: "default" for the normal run, "slow" (more examples) for -m slow / CI.
settings.register_profile("default", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    """The test must leave no process behind (children, grandchildren or orphans)."""
    with peers.no_leftover_processes():
        yield


@pytest.fixture(autouse=True, scope="session")
def _test_sized_stdio_graces() -> Iterator[None]:
    """Every ``StdioTransport()`` of the run, the one the stdio plugin registers included,
    waits ``peers.STDIO_TEST_GRACES`` for a server that ignores EOF or SIGTERM; an explicit
    ``StdioTransport(shutdown_grace=...)`` keeps its value."""
    from kairox_stdio import StdioTransport

    init = StdioTransport.__init__
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(init, "__kwdefaults__", {**(init.__kwdefaults__ or {}), **peers.STDIO_TEST_GRACES})
        yield


@pytest.fixture(autouse=True, scope="session")
def _entry_point_index_off_the_real_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``build_plugin_host(env={})`` keeps its entry point index in ``~/.kairox``; in the
    tests it goes to a temporary home unless the test chose one (``KAIROX_HOME``)."""
    import kairox._host as host

    home = tmp_path_factory.mktemp("entry-point-index-home")
    original = host.index_home

    def index_home(env: Mapping[str, str] | None) -> Path | None:
        return original(env) if env is not None and env.get("KAIROX_HOME") else home

    host.index_home = index_home
    yield
    host.index_home = original
