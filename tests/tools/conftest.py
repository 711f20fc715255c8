"""Fixtures of the built-in tools' tests: a real workspace, the tools' environment, a runtime."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import kairox_tools.hooks
from kairox._runtime import Runtime
from kairox_tools import ToolEnv, ToolsConfig


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def tool_env(ws: Path) -> ToolEnv:
    return ToolEnv.create(ws, ToolsConfig(), dict(os.environ))


@pytest.fixture
async def rt(ws: Path, home: Path) -> AsyncIterator[Runtime]:
    """A runtime over ``ws`` with only the built-in tools (no other plugin, no user config)."""
    documents = [("test", {"policy": {"include_temp_dir": False}})]
    async with Runtime.open(
        ws,
        home=home,
        env=dict(os.environ),
        plugins=[kairox_tools.hooks],
        load_entrypoints=False,
        config_documents=documents,
    ) as runtime:
        yield runtime
