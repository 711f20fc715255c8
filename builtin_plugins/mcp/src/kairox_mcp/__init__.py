"""MCP client, server lifecycle, manager and tool adapter for Kairox.

``import kairox_mcp`` stays cheap: the SDK (``mcp``) is imported the first
time a server connects. The names below load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.lazy import lazy_exports

if TYPE_CHECKING:
    from .adapter import McpToolAdapter, build_spec, convert_result, normalize_schema
    from .config import McpServerConfig, ServerDefinition
    from .events import McpServerFailed, McpServerReady, McpServerStarting, McpServerStopped, McpToolsRefreshed
    from .lifecycle import ServerLifecycle
    from .manager import McpServerManager, McpStartupError, manager_of
    from .resources import McpPrompt, McpPromptResult, McpResource, McpResourceTemplate
    from .sources import UnavailableServer, parse_mcp_json
    from .transport import ConnectContext, Diagnostics, McpTransport, StderrBuffer

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["McpToolAdapter", "build_spec", "convert_result", "normalize_schema"], "adapter"),
    **dict.fromkeys(["McpServerConfig", "ServerDefinition"], "config"),
    **dict.fromkeys(
        ["McpServerFailed", "McpServerReady", "McpServerStarting", "McpServerStopped", "McpToolsRefreshed"], "events"
    ),
    "ServerLifecycle": "lifecycle",
    **dict.fromkeys(["McpServerManager", "McpStartupError", "manager_of"], "manager"),
    **dict.fromkeys(["McpPrompt", "McpPromptResult", "McpResource", "McpResourceTemplate"], "resources"),
    **dict.fromkeys(["UnavailableServer", "parse_mcp_json"], "sources"),
    **dict.fromkeys(["ConnectContext", "Diagnostics", "McpTransport", "StderrBuffer"], "transport"),
}

__all__ = [
    "ConnectContext",
    "Diagnostics",
    "McpPrompt",
    "McpPromptResult",
    "McpResource",
    "McpResourceTemplate",
    "McpServerConfig",
    "McpServerFailed",
    "McpServerManager",
    "McpServerReady",
    "McpServerStarting",
    "McpServerStopped",
    "McpStartupError",
    "McpToolAdapter",
    "McpToolsRefreshed",
    "McpTransport",
    "ServerDefinition",
    "ServerLifecycle",
    "StderrBuffer",
    "UnavailableServer",
    "build_spec",
    "convert_result",
    "manager_of",
    "normalize_schema",
    "parse_mcp_json",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
