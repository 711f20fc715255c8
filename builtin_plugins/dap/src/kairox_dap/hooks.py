"""kairox-dap hook implementations (only hookimpls; the work lives in sibling modules,
imported when kairox calls the hook)."""

from __future__ import annotations

from kairox.declare import servers

kairox_register_config_sections, kairox_register_tool_providers = servers(
    "dap_servers",
    "kairox_dap._config:DapServerConfig",
    "kairox_dap._provider:DapToolProvider",
    whole_environment=True,  # the server (and what it debugs) gets kairox's whole environment
    description="debug adapters started by dap.launch (breakpoints, stepping, variables as dap.* tools)",
)
