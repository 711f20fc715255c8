"""kairox-lsp hook implementations (only hookimpls; the work lives in sibling modules,
imported when kairox calls the hook)."""

from __future__ import annotations

from kairox.declare import servers

kairox_register_config_sections, kairox_register_tool_providers = servers(
    "lsp_servers",
    "kairox_lsp._config:LspServerConfig",
    "kairox_lsp._provider:LspToolProvider",
    whole_environment=True,  # the server gets kairox's whole environment
    description="language servers whose definition/references/hover/symbols/diagnostics become lsp.* tools",
)
