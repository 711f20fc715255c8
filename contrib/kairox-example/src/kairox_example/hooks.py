"""Hook implementations of kairox-example: only hookimpls live here.

kairox imports this module for every command (``kairox plugins`` included), so it stays
cheap: each registration is one line (``kairox.declare``, ``kairox_cli.command``) that
imports its module when kairox calls the hook, and the guard imports its module inside the
hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox import hookimpl
from kairox.declare import config_section, tools
from kairox_cli import command

if TYPE_CHECKING:
    from kairox import Block, ToolCall

kairox_register_config_sections = config_section(
    "example",
    "kairox_example.config:ExampleConfig",
    # a guard's list: a workspace adds to the user's protected files, never replaces them
    # (its other keys wait for the user's trust, as every section's do by default)
    narrows=("protected",),
    description="kairox-example: files its tools and guard protect, largest file its tools read",
)
kairox_register_tool_providers = tools("kairox_example.tools:tools")
kairox_register_commands = command(
    "example", "kairox_example.cli:example", "kairox-example: count words, check protected files."
)


@hookimpl
def kairox_pre_tool_call(call: ToolCall) -> Block | None:
    from .guard import check_call

    return check_call(call)
