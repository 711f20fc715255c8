"""The manifest formats kairox-manifests registers, and what a format is built with
(another package's format, e.g. kairox-philont's, uses the same pieces)."""

from __future__ import annotations

from ._common import Collector, add_components, check_name, default_inside, lsp_servers, mcp_servers, path_list
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
    "add_components",
    "KairoxFormat",
    "RawCompatibility",
    "RawPermissions",
    "builtin_formats",
    "check_name",
    "compatibility_from",
    "default_inside",
    "lsp_servers",
    "mcp_servers",
    "path_list",
    "manifest_present",
    "permissions_from",
    "person_from",
]


def builtin_formats() -> list[BaseFormat]:
    """Agent Plugins, Kairox, Codex, Claude, then Claude's manifest-less layout (in probing
    order; the hooks register them as :data:`kairox_manifests.lazyformat.BUILTIN_FORMATS`,
    imported when probed)."""
    return [AgentPluginsFormat(), KairoxFormat(), CodexFormat(), ClaudeFormat(), ClaudeDefaultLayout()]
