"""Repository-wide test configuration.

``uv run pytest`` runs on several pytest-xdist workers (``-n auto --dist loadgroup`` in
pyproject.toml; the number is :func:`pytest_xdist_auto_num_workers`). Most tests wait on
real peer processes (npm and PyPI MCP servers, language servers, debugpy) rather than
compute, so more workers than cores pay off. Every test gets its own ``tmp_path`` (per
worker), ports come from ``peers.free_port``, and ``no_leftovers`` looks only at the
worker's own descendants. :func:`pytest_collection_modifyitems` starts the long tests
first so that none of them is the tail of the run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import peers
import pytest
from hypothesis import HealthCheck, settings

if sys.dont_write_bytecode and not sys.pycache_prefix:
    # PYTHONDONTWRITEBYTECODE (some sandboxes set it) would have every xdist worker rewrite
    # the asserts of every test module and compile it again, each run (about 5 s of CPU per
    # worker): this process writes its bytecode to the test cache instead, never beside the
    # sources. The processes the tests start keep the environment as it is.
    sys.pycache_prefix = str(peers.cache_dir() / "pycache")
    sys.dont_write_bytecode = False

# Hypothesis profiles: "default" for the normal run, "slow" (more examples) for -m slow / CI.
settings.register_profile("default", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

#: workers of ``-n auto`` per CPU core (the tests mostly wait on peer processes), and at most
WORKERS_PER_CORE = 2
MAX_WORKERS = 16


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: ``$PYTEST_XDIST_AUTO_NUM_WORKERS`` if set, else ``WORKERS_PER_CORE`` per
    core (up to ``MAX_WORKERS``); no workers (one process) with ``-s``, whose output the
    workers would swallow."""
    if env := os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(env)
    if config.getoption("capture") == "no":
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(WORKERS_PER_CORE * cores, MAX_WORKERS)


def _start_rank(item: pytest.Item) -> int:
    """Lower starts earlier: the lint and type checks, ``slow`` tests, tests sharing a
    module-scoped fixture, tests talking to real servers or processes, then the rest
    (mostly quick in-process tests, which fill the workers up at the end)."""
    if item.path.name == "test_quality.py":
        return 0
    if item.get_closest_marker("slow"):
        return 1
    if _module_fixture(item):
        return 2
    if item.get_closest_marker("integration") or "no_leftovers" in getattr(item, "fixturenames", ()):
        return 3
    return 4


def _module_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a module-, class- or package-scoped fixture (built once per
    module, e.g. the virtual environments of tests/contrib)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        defs and defs[-1].scope in ("module", "class", "package")
        for name, defs in info.name2fixturedefs.items()
        if name != "anyio_backend"  # anyio's own is module-scoped and costs nothing
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order and group the run for the xdist workers (deterministic: every worker must
    collect the same list). Tests of a module that share a module-scoped fixture get one
    ``xdist_group`` per module, so the fixture is built once, on one worker. The quality
    checks (one group of their own, tests/test_quality.py) go first, mypy first of all."""
    for item in items:
        if _module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(config.rootpath).as_posix()))
    order = {id(item): n for n, item in enumerate(items)}
    items.sort(key=lambda item: (_start_rank(item), "[mypy]" not in item.name, order[id(item)]))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def home(kairox_home: Path) -> Path:
    """kairox.testing's ``kairox_home`` (a directory may define its own ``home``)."""
    return kairox_home


@pytest.fixture
def ws(kairox_workspace: Path) -> Path:
    """kairox.testing's ``kairox_workspace`` (a directory may define its own ``ws``)."""
    return kairox_workspace


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
