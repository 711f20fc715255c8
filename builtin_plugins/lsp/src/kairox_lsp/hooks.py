"""kairox-lsp hook implementations (only hookimpls; the work lives in sibling modules,
imported when kairox calls the hook)."""

from __future__ import annotations

from kairox.declare import adds, config_section

kairox_register_config_sections = config_section(
    "lsp_servers",
    "kairox_lsp._config:LspServerConfig",
    entries=True,
    needs_trust=True,
    description="language servers whose definition/references/hover/symbols/diagnostics become lsp.* tools",
)
kairox_register_tool_providers = adds("kairox_lsp._provider:LspToolProvider", runtime=True)
