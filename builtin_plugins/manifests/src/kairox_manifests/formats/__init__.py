"""The manifest formats kairox-manifests registers."""

from __future__ import annotations

from ._meta import BaseFormat
from .claude import ClaudeDefaultLayout, ClaudeFormat
from .codex import CodexFormat
from .kairox import KairoxFormat

__all__ = ["BaseFormat", "ClaudeDefaultLayout", "ClaudeFormat", "CodexFormat", "KairoxFormat", "builtin_formats"]


def builtin_formats() -> list[BaseFormat]:
    """Kairox, Codex, Claude, then Claude's manifest-less layout (in probing order)."""
    return [KairoxFormat(), CodexFormat(), ClaudeFormat(), ClaudeDefaultLayout()]
