"""kairox-mcp's hook implementations (only these; the work lives in sibling modules).

Cheap to import: nothing here (or in what it imports at load) imports ``mcp``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.hookspecs import hookimpl

if TYPE_CHECKING:
    import click

    from kairox import ConfigSection, Registrar, Runtime
    from kairox.protocols import ToolProvider


@hookimpl
def kairox_register_config_sections(registrar: Registrar[ConfigSection]) -> None:
    from kairox import ConfigSection

    from .config import McpServerConfig

    registrar.add(
        ConfigSection(
            name="mcp_servers",
            schema=McpServerConfig,
            entries=True,
            needs_trust=True,
            description="MCP servers (stdio, sse, streamable_http), one [mcp_servers.NAME] table each",
        )
    )


@hookimpl
def kairox_register_tool_providers(registrar: Registrar[ToolProvider], runtime: Runtime) -> None:
    from .manager import McpServerManager

    registrar.add(McpServerManager(runtime))


@hookimpl
def kairox_register_commands(cli: click.Group) -> None:
    from kairox.cli import lazy_command

    cli.add_command(lazy_command("mcp", "kairox_mcp.cli:mcp", "List MCP servers, their state, tools and stderr logs."))
