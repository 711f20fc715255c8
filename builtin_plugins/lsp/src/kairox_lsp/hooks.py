"""kairox-lsp hook implementations (only hookimpls; the work lives in sibling modules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.hookspecs import hookimpl

if TYPE_CHECKING:
    from kairox import ConfigSection, Registrar, Runtime
    from kairox.protocols import ToolProvider


@hookimpl
def kairox_register_config_sections(registrar: Registrar[ConfigSection]) -> None:
    from kairox import ConfigSection

    from ._config import LspServerConfig

    registrar.add(
        ConfigSection(
            name="lsp_servers",
            schema=LspServerConfig,
            entries=True,
            needs_trust=True,
            description="language servers whose definition/references/hover/symbols/diagnostics become lsp.* tools",
        )
    )


@hookimpl
def kairox_register_tool_providers(registrar: Registrar[ToolProvider], runtime: Runtime) -> None:
    from ._provider import LspToolProvider

    registrar.add(LspToolProvider(runtime))
