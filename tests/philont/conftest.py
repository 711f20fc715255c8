"""Philont plugin tests: runtimes with kairox-manifests and kairox-philont registered inline,
a private HOME (``~/.philont/plugins`` of the machine is never read; both from
``tests/bundle_fixtures.py``), the fixture plugins of ``tests/fixtures/philont`` (written from the Philont plugin.json format)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from bundle_fixtures import kairox_env, kairox_plugins, user_home
from philont_helpers import Install

from kairox_testing import KairoxHarness

__all__ = ["fast_restarts", "install", "kairox_env", "kairox_plugins", "user_home"]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "philont"


@pytest.fixture
def install(user_home: Path) -> Install:
    """``install("notes-js")``: copy a fixture plugin into ``~/.philont/plugins/<id>``."""

    def install(name: str, as_name: str | None = None) -> Path:
        dest = user_home / ".philont" / "plugins" / (as_name or name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(FIXTURES / name, dest)
        return dest

    return install


@pytest.fixture
def fast_restarts(kairox_harness: KairoxHarness) -> KairoxHarness:
    """Test-sized restart backoff."""
    kairox_harness.write_config("[philont]\nrestart_backoff = 0.05\nmax_restarts = 2\n", where="user")
    return kairox_harness
