"""kairox-serve's hookimpls: the ``[serve]`` section and ``kairox serve``.

Cheap to import: the MCP SDK, starlette and uvicorn load when the command runs.
"""

from __future__ import annotations

from kairox.declare import config_section
from kairox_cli import command

kairox_register_config_sections = config_section(
    "serve",
    "kairox_serve.config:ServeConfig",
    # a workspace's deny lists add to the user's; the rest of its [serve] waits for trust
    narrows=("deny_tools", "deny_skills"),
    description="kairox serve: the tools (allow/deny globs) and skills exposed, the name, version and instructions; "
    "[serve.auth] tokens, [serve.principals] rules, [serve.audit], [serve.limits], [serve.state] (Redis)",
)
kairox_register_commands = command(
    "serve",
    "kairox_serve.cli:serve",
    "Serve the workspace as one MCP server (stdio or streamable HTTP).",
)
