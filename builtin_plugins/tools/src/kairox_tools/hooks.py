"""Hook implementations of kairox-tools (nothing else lives here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.hookspecs import hookimpl

if TYPE_CHECKING:
    from kairox import ConfigSection, Registrar, Runtime
    from kairox.protocols import ToolProvider


@hookimpl
def kairox_register_tool_providers(registrar: Registrar[ToolProvider], runtime: Runtime) -> None:
    from ._provider import BuiltinToolsProvider

    registrar.add(BuiltinToolsProvider())


@hookimpl
def kairox_register_config_sections(registrar: Registrar[ConfigSection]) -> None:
    from kairox import ConfigSection

    from ._config import ToolsConfig

    registrar.add(
        ConfigSection(
            name="tools",
            schema=ToolsConfig,
            # `shell` names the program shell.exec runs: a workspace's value waits for trust
            needs_trust=True,
            description="limits of the built-in tools (output caps, shell timeout, disabled tools)",
        )
    )
