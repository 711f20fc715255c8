"""Catalog test fixtures: the catalog server and runtimes with kairox-catalog registered."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from catalog_server import CatalogServer

import kairox_catalog.hooks
import kairox_manifests.hooks
from kairox_testing import KairoxHarness


@pytest.fixture
def catalog_server() -> Iterator[CatalogServer]:
    with CatalogServer() as server:
        yield server


@pytest.fixture
def kairox_plugins() -> list[object]:
    # kairox-manifests: its formats are what a plugin install is checked against
    return [kairox_catalog.hooks, kairox_manifests.hooks]


@pytest.fixture
def harness(kairox_harness: KairoxHarness) -> KairoxHarness:
    return kairox_harness
