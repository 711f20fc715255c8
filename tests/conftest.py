"""Repository-wide test configuration."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# Hypothesis profiles: "default" for the normal run, "slow" (more examples) for -m slow / CI.
settings.register_profile("default", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
