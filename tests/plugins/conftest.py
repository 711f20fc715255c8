"""The plugin tests run runtimes with kairox-manifests and kairox-philont registered inline."""

from __future__ import annotations

import pytest


@pytest.fixture
def kairox_plugins() -> list[object]:
    import kairox_manifests.hooks
    import kairox_philont.hooks

    return [kairox_manifests.hooks, kairox_philont.hooks]
