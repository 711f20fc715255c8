"""Helpers of the built-in tools' tests, imported as ``from tools_helpers import ...`` (pytest
puts this directory on ``sys.path``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import kairox_tools.hooks
from kairox import Runtime

__all__ = ["NO_TEMP_DIR", "open_tools_runtime"]

#: a policy document that keeps the temp dir out of the writable roots: outside the workspace is outside
NO_TEMP_DIR = ("test", {"policy": {"include_temp_dir": False}})


def open_tools_runtime(
    ws: Path,
    home: Path,
    documents: list[tuple[str, dict[str, Any]]] | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> AbstractAsyncContextManager[Runtime]:
    """A runtime over ``ws`` with only the built-in tools: no other plugin, no entry point, and
    of the config only ``documents`` (the user's ``home`` has none)."""
    return Runtime.open(
        ws,
        home=home,
        env=dict(os.environ if env is None else env),
        plugins=[kairox_tools.hooks],
        load_entrypoints=False,
        config_documents=documents,
    )
