"""Helpers shared by the DAP tests."""

from __future__ import annotations

from pathlib import Path

from peers import alive, live_descendants

SAMPLE = Path(__file__).with_name("sample_program.py")


# process checks live in tests/peers.py, shared by every suite
live_children = live_descendants
__all__ = ["SAMPLE", "alive", "live_children"]
