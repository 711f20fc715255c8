"""kairox-mcp's hook implementations (only these; the work lives in sibling modules).

Cheap to import: nothing here (or in what it imports at load) imports ``mcp``.
"""

from __future__ import annotations

from typing import Any

from kairox import hookimpl
from kairox.declare import servers
from kairox_cli import command


@hookimpl
def kairox_addhooks(pluginmanager: Any) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


kairox_register_config_sections, kairox_register_tool_providers = servers(
    "mcp_servers",
    "kairox_mcp.config:McpServerConfig",
    "kairox_mcp.manager:McpServerManager",
    description="MCP servers (stdio, sse, streamable_http), one [mcp_servers.NAME] table each",
)
kairox_register_commands = command("mcp", "kairox_mcp.cli:mcp", "List MCP servers, their state, tools and stderr logs.")
# skills an MCP server offers (the io.modelcontextprotocol/skills extension), as <server>:<name>,
# are a skill source the manager adds when its first server starts (McpServerManager._add_skill_source)
