"""Hook implementations of kairox-example: only hookimpls live here.

kairox imports this module for every command (``kairox plugins`` included), so
it stays cheap: the real work is imported when a hook is first called. The
registrations are one line each (``kairox.declare``); ``pre_tool_call`` does more
than add something, so it is written out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kairox import hookimpl
from kairox.declare import adds, config_section
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
kairox_register_tool_providers = adds("kairox_example.tools:ExampleToolsProvider")
# lazy: the command's module is imported only when `kairox example ...` runs,
# so this plugin costs nothing on every other kairox command
kairox_register_commands = command(
    "example", "kairox_example.cli:example", "kairox-example: count words, check protected files."
)


#: the guard's check, imported by the first call (an import statement in the hook would
#: look the module up again on every call)
_check_call: Callable[[ToolCall], Block | None] | None = None


@hookimpl
def kairox_pre_tool_call(call: ToolCall) -> Block | None:
    global _check_call
    check = _check_call
    if check is None:
        from .guard import check_call

        check = _check_call = check_call
    return check(call)
