"""kairox-dap hook implementations (only hookimpls; the work lives in sibling modules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.hookspecs import hookimpl

if TYPE_CHECKING:
    from kairox import ConfigSection, Registrar, Runtime
    from kairox.protocols import ToolProvider


@hookimpl
def kairox_register_config_sections(registrar: Registrar[ConfigSection]) -> None:
    from kairox import ConfigSection

    from ._config import DapServerConfig

    registrar.add(
        ConfigSection(
            name="dap_servers",
            schema=DapServerConfig,
            entries=True,
            needs_trust=True,
            description="debug adapters started by dap.launch (breakpoints, stepping, variables as dap.* tools)",
        )
    )


@hookimpl
def kairox_register_tool_providers(registrar: Registrar[ToolProvider], runtime: Runtime) -> None:
    from ._provider import DapToolProvider

    registrar.add(DapToolProvider(runtime))
