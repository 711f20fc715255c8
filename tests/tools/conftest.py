"""Fixtures of the built-in tools' tests: a real workspace, the tools' environment, a runtime."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tools_helpers import NO_TEMP_DIR, open_tools_runtime

from kairox import Runtime
from kairox_tools import ToolEnv, ToolsConfig


@pytest.fixture
def ws(kairox_workspace: Path) -> Path:
    return kairox_workspace.resolve()


@pytest.fixture
def tool_env(ws: Path) -> ToolEnv:
    return ToolEnv.create(ws, ToolsConfig(), dict(os.environ))


@pytest.fixture
async def rt(ws: Path, home: Path) -> AsyncIterator[Runtime]:
    """A runtime over ``ws`` with only the built-in tools (no other plugin, no user config)."""
    async with open_tools_runtime(ws, home, [NO_TEMP_DIR]) as runtime:
        yield runtime
