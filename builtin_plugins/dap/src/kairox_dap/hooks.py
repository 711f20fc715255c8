"""kairox-dap hook implementations (only hookimpls; the work lives in sibling modules,
imported when kairox calls the hook)."""

from __future__ import annotations

from kairox.declare import adds, config_section

kairox_register_config_sections = config_section(
    "dap_servers",
    "kairox_dap._config:DapServerConfig",
    entries=True,
    needs_trust=True,
    description="debug adapters started by dap.launch (breakpoints, stepping, variables as dap.* tools)",
)
kairox_register_tool_providers = adds("kairox_dap._provider:DapToolProvider", runtime=True)
