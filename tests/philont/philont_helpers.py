"""Shared by the Philont tests (conftest.py cannot be imported by name: tests/conftest.py is one too)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

#: the ``install`` fixture: ``install("notes-js")`` copies a fixture plugin into ``~/.philont/plugins``
Install = Callable[..., Path]
