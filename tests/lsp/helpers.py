"""Helpers shared by the LSP tests (process checks, finding real servers)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from peers import alive, live_descendants

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "lsp_project"


# process checks live in tests/peers.py, shared by every suite
live_children = live_descendants
__all__ = ["FIXTURE", "alive", "live_children", "server_command"]


def server_command(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found
