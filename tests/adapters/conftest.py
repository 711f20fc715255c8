"""Fixtures of the framework adapters' tests: a harness whose user policy refuses one tool and
asks for another, and the recording tools of ``adapters_helpers.add_tools``."""

from __future__ import annotations

import pytest
from adapters_helpers import POLICY, add_tools

from kairox_testing import InMemoryToolProvider, KairoxHarness


@pytest.fixture
def harness(kairox_harness: KairoxHarness) -> KairoxHarness:
    kairox_harness.write_config(POLICY, where="user")
    return kairox_harness


@pytest.fixture
def calls(kairox_tool_provider: InMemoryToolProvider) -> list[str]:
    return add_tools(kairox_tool_provider)
