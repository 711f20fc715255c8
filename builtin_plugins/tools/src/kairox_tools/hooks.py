"""Hook implementations of kairox-tools (nothing else lives here; the work is imported
when kairox calls the hook)."""

from __future__ import annotations

from kairox.declare import adds, config_section

kairox_register_tool_providers = adds("kairox_tools._provider:BuiltinToolsProvider")
kairox_register_config_sections = config_section(
    "tools",
    "kairox_tools._config:ToolsConfig",
    # `shell` names the program shell.exec runs: a workspace's [tools] waits for trust;
    # its `disabled` only adds to the user's (a workspace never brings a tool back)
    needs_trust=True,
    narrows=("disabled",),
    description="limits of the built-in tools (output caps, shell timeout, disabled tools)",
)
