"""kairox-mcp's hook implementations (only these; the work lives in sibling modules).

Cheap to import: nothing here (or in what it imports at load) imports ``mcp``.
"""

from __future__ import annotations

from kairox.declare import command, servers

kairox_register_config_sections, kairox_register_tool_providers = servers(
    "mcp_servers",
    "kairox_mcp.config:McpServerConfig",
    "kairox_mcp.manager:McpServerManager",
    # dormant (not imported, built or started) while no [mcp_servers.*] is set and no .mcp.json
    # or Philont mcp.json declares one; a bundle's servers wake it
    name="mcp",
    needed="kairox_mcp._declared:declared_elsewhere",
    description="MCP servers (stdio, sse, streamable_http), one [mcp_servers.NAME] table each",
)
kairox_register_commands = command("mcp", "kairox_mcp.cli:mcp", "List MCP servers, their state, tools and stderr logs.")
