"""kairox-lsp hook implementations (only hookimpls; the work lives in sibling modules,
imported when kairox calls the hook)."""

from __future__ import annotations

from kairox.declare import servers

kairox_register_config_sections, kairox_register_tool_providers = servers(
    "lsp_servers",
    "kairox_lsp._config:LspServerConfig",
    "kairox_lsp._provider:LspToolProvider",
    name="lsp",  # dormant (not imported, built or started) while no [lsp_servers.*] is set
    whole_environment=True,  # the server (and what it debugs) gets kairox's environment
    description="language servers whose definition/references/hover/symbols/diagnostics become lsp.* tools",
)
