"""Hook implementations of kairox-example: only hookimpls live here.

kairox imports this module for every command (``kairox plugins`` included), so
it stays cheap: the real work is imported inside each function, when the hook
is first called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox import hookimpl

if TYPE_CHECKING:
    import click

    from kairox import Block, ConfigSection, Registrar, Runtime, ToolCall
    from kairox.protocols import ToolProvider


@hookimpl
def kairox_register_config_sections(registrar: Registrar[ConfigSection]) -> None:
    from kairox import ConfigSection

    from .config import ExampleConfig

    registrar.add(
        ConfigSection(
            name="example",
            schema=ExampleConfig,
            description="kairox-example: files its tools and guard protect, largest file its tools read",
        )
    )


@hookimpl
def kairox_register_tool_providers(registrar: Registrar[ToolProvider], runtime: Runtime) -> None:
    from .tools import ExampleToolsProvider

    registrar.add(ExampleToolsProvider())


@hookimpl
def kairox_pre_tool_call(call: ToolCall) -> Block | None:
    from .guard import check_call

    return check_call(call)


@hookimpl
def kairox_register_commands(cli: click.Group) -> None:
    # lazy: the command's module is imported only when `kairox example ...` runs,
    # so this plugin costs nothing on every other kairox command
    from kairox.cli import lazy_command

    cli.add_command(
        lazy_command("example", "kairox_example.cli:example", "kairox-example: count words, check protected files.")
    )
