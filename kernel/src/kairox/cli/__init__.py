"""The ``kairox`` command line (click). Plugins add subcommands through
``kairox_register_commands``."""

from __future__ import annotations

from ._main import cli, main

__all__ = ["cli", "main"]
