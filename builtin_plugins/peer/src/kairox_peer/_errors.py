"""The error a peer tool's caller can fix (light: the providers import it with the plugin)."""

from __future__ import annotations

__all__ = ["ToolInputError"]


class ToolInputError(ValueError):
    """Bad arguments, or nothing to act on: shown to the caller as an error result (its text as is)."""
