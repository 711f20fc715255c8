"""The top-level group, global options and plugin-contributed commands."""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Any

import click

from .._host import LoadFailure, PluginHost, build_plugin_host, registration_order, trace_hook_call
from ._core import register_core_commands
from ._logging import configure_logging
from ._util import CliState

__all__ = ["build_cli", "cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--workspace",
    "-w",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    envvar="KAIROX_WORKSPACE",
    help="Workspace directory (default: the current directory).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")
@click.option(
    "--verbose", "-v", count=True, help="Log more to stderr: -v info, -vv debug, -vvv also HTTP internals (redacted)."
)
@click.pass_context
def cli(ctx: click.Context, workspace: Path | None, as_json: bool, verbose: int) -> None:
    """Kairox: MCP servers, skills, plugins, LSP/DAP as tools, under one policy."""
    configure_logging(verbose)
    state: CliState = ctx.ensure_object(CliState)
    state.workspace = (workspace or Path.cwd()).resolve()
    state.json = as_json


def build_cli(host: PluginHost | None = None) -> click.Group:
    """The CLI with core and plugin commands. Each call builds a fresh group."""
    group = click.Group(
        name="kairox",
        callback=cli.callback,
        params=list(cli.params),
        help=cli.help,
        context_settings=cli.context_settings,
    )
    register_core_commands(group)
    host = host or build_plugin_host()
    _add_plugin_commands(group, host)
    group.context_settings = {**(group.context_settings or {}), "obj": CliState(host=host)}
    return group


def _add_plugin_commands(group: click.Group, host: PluginHost) -> None:
    """Call each ``kairox_register_commands`` on its own, in registration order.

    A plugin that raises is recorded (``kairox plugins`` shows it) and its
    half-added commands are taken back; one that replaces a command another
    plugin (or the core) added is refused, naming both, and the first keeps it.
    """
    owners = dict.fromkeys(group.commands, "kairox")
    for impl in registration_order(host.pm.hook.kairox_register_commands.get_hookimpls()):
        plugin = host.pm.get_name(impl.plugin) or impl.plugin_name
        label = host.label(plugin)
        dist, version = host.distribution_of(plugin)
        before = dict(group.commands)
        call_args = {"cli": group} if "cli" in impl.argnames else {}
        trace_hook_call(host.pm, "kairox_register_commands", plugin, call_args)
        try:
            impl.function(**call_args)
        except Exception as exc:  # one plugin's broken command never breaks the CLI
            group.commands = before
            error = f"{type(exc).__name__}: {exc}"
            click.echo(f"kairox: plugin {label} failed to add its commands: {error}", err=True)
            host.record(
                LoadFailure(plugin, dist, version, "kairox_register_commands", error, traceback.format_exc()), exc
            )
            continue
        for name, command in before.items():
            if group.commands.get(name) is not command:
                group.commands[name] = command
                error = f'command "{name}" is registered twice: by {owners[name]} and by {label}'
                click.echo(f"kairox: {error}", err=True)
                host.record(LoadFailure(plugin, dist, version, "kairox_register_commands", error))
        for name in group.commands.keys() - before.keys():
            owners[name] = label


def main(argv: list[str] | None = None) -> Any:
    from .._text import SafeStream

    # every text kairox prints passes one guard: no escape sequence from a server, bundle
    # or file reaches the terminal (per-field escaping also stops forged lines)
    sys.stdout = SafeStream(sys.stdout)
    sys.stderr = SafeStream(sys.stderr)
    configure_logging(0)  # the group's callback raises it for -v/-vv
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    return build_cli().main(args=argv, prog_name="kairox")
