"""Helpers shared by the DAP tests; those it shares with the LSP tests live in tests/lsp/helpers.py."""

from __future__ import annotations

from pathlib import Path

from lsp.helpers import MemoryPeer, alive, config_runtime, json_values, live_children, open_runtime, serving

SAMPLE = Path(__file__).with_name("sample_program.py")

__all__ = ["SAMPLE", "MemoryPeer", "alive", "config_runtime", "json_values", "live_children", "open_runtime", "serving"]
