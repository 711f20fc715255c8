"""The manifest formats kairox-manifests registers, and what a format is built with
(another package's format, e.g. kairox-philont's, uses the same pieces)."""

from __future__ import annotations

from ._common import Collector, check_name
from ._meta import (
    BaseFormat,
    RawCompatibility,
    RawPermissions,
    compatibility_from,
    manifest_present,
    permissions_from,
    person_from,
)
from .agent_plugins import AgentPluginsFormat
from .claude import ClaudeDefaultLayout, ClaudeFormat
from .codex import CodexFormat
from .kairox import KairoxFormat

__all__ = [
    "AgentPluginsFormat",
    "BaseFormat",
    "ClaudeDefaultLayout",
    "ClaudeFormat",
    "CodexFormat",
    "Collector",
    "KairoxFormat",
    "RawCompatibility",
    "RawPermissions",
    "builtin_formats",
    "check_name",
    "compatibility_from",
    "manifest_present",
    "permissions_from",
    "person_from",
]


def builtin_formats() -> list[BaseFormat]:
    """Agent Plugins, Kairox, Codex, Claude, then Claude's manifest-less layout (in probing
    order; the hooks register them as :data:`kairox_manifests.lazyformat.BUILTIN_FORMATS`,
    imported when probed)."""
    return [AgentPluginsFormat(), KairoxFormat(), CodexFormat(), ClaudeFormat(), ClaudeDefaultLayout()]
