"""The top-level group, global options and plugin-contributed commands."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import click

from kairox.ext import PluginHost, build_plugin_host

from ._core import register_core_commands
from ._logging import configure_logging
from ._util import CliState

__all__ = ["build_cli", "cli", "main"]


# -- the guard on everything the CLI prints --------------------------------------------------

# what a stream guard escapes: C0 but tab, newline and carriage return (CR is what
# click's own prompts and progress redraws use), DEL, C1 and the bidi controls
_STREAM_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _stream_escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    # C0 as \xNN (json.dumps never leaves one raw); DEL, C1 and bidi as \uXXXX, which
    # inside a JSON string still means the same character
    return f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}"


def stream_safe(text: str) -> str:
    """What :class:`SafeStream` writes for ``text``: escape sequences and bidi controls
    visible, newlines, tabs and carriage returns kept."""
    return _STREAM_UNSAFE.sub(_stream_escape, text)


class SafeStream:
    """A text stream wrapper for the CLI's stdout and stderr: nothing a server, bundle or
    file put in a string kairox prints can drive the terminal (kairox itself writes no
    escape sequences). JSON output stays valid JSON."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(stream_safe(text) if isinstance(text, str) else text)
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True, no_args_is_help=True
)
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
@click.option("--version", is_flag=True, help="Print kairox's version (with -v, every plugin package's too) and exit.")
@click.pass_context
def cli(ctx: click.Context, workspace: Path | None, as_json: bool, verbose: int, version: bool) -> None:
    """Kairox: MCP servers, skills, plugins, LSP/DAP as tools, under one policy."""
    state: CliState = ctx.ensure_object(CliState)
    if version:
        _print_version(state, as_json=as_json, verbose=verbose > 0)
        ctx.exit(0)
    if ctx.invoked_subcommand is None:
        ctx.fail("Missing command.")  # what click says when a group runs with options only
    ctx.call_on_close(configure_logging(verbose))
    state.workspace = (workspace or Path.cwd()).resolve()
    state.json = as_json


def _print_version(state: CliState, *, as_json: bool, verbose: bool) -> None:
    from kairox.ext import kernel_version

    from ._util import echo_json

    kernel = kernel_version() or "unknown"
    packages: dict[str, str] = {}
    if verbose:
        for info in state.get_host().plugins():
            if info.distribution and info.distribution != "kairox":
                packages.setdefault(info.distribution, info.version or "unknown")
    if as_json:
        echo_json({"kairox": kernel, **({"plugin_packages": dict(sorted(packages.items()))} if verbose else {})})
        return
    click.echo(f"kairox {kernel} (Python {sys.version.split()[0]})")
    for name, ver in sorted(packages.items()):
        click.echo(f"  {name} {ver}")


class _KairoxGroup(click.Group):
    """The top-level group: a command that is missing says which package provides it and why
    it is not loaded (not installed, left out by the distribution or the environment, failed)."""

    def __init__(self, host: PluginHost, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.host = host

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            name = click.utils.make_str(args[0]) if args else ""
            if not name or name.startswith("-") or self.get_command(ctx, name) is not None:
                raise
            raise click.UsageError(_missing_command(self.host, name, exc.message), ctx) from None


def _missing_command(host: PluginHost, name: str, message: str) -> str:
    """click's "No such command" for ``name``, with what kairox knows of it."""
    from kairox.ext import missing_feature_message

    why = missing_feature_message("command", name, host)
    if why is not None:
        return f"No such command {name!r}: {why}."
    # a command of a package no table knows: the installed packages that are not loaded may have it
    left_out = sorted({dist or plugin: why for plugin, (dist, why) in host.not_loaded.items()}.items())
    if not left_out:
        return message
    listed = "; ".join(f"{package} ({why})" for package, why in left_out)
    return f"{message} Installed plugin packages that are not loaded (one may provide it): {listed}."


def build_cli(host: PluginHost | None = None) -> click.Group:
    """The CLI with core and plugin commands. Each call builds a fresh group."""
    host = host or build_plugin_host()
    group = _KairoxGroup(
        host,
        name="kairox",
        callback=cli.callback,
        params=list(cli.params),
        help=cli.help,
        context_settings=cli.context_settings,
        invoke_without_command=True,
        no_args_is_help=True,
    )
    register_core_commands(group)
    _add_plugin_commands(group, host)
    group.context_settings = {**(group.context_settings or {}), "obj": CliState(host=host)}
    return group


def _add_plugin_commands(group: click.Group, host: PluginHost) -> None:
    """Let each plugin add its commands (``host.dispatch.register_commands``) and say
    on stderr which could not: ``kairox plugins`` shows the failures too.

    One plugin's broken or clashing commands never break the CLI: the dispatcher
    takes back a failing plugin's half-added commands and refuses one that
    replaces a command the core or an earlier plugin added.
    """
    for failure in host.dispatch.register_commands(group):
        click.echo(f"kairox: plugin {host.label(failure.plugin)} failed to add its commands: {failure.error}", err=True)


def main(argv: list[str] | None = None) -> Any:
    """The ``kairox`` console script: the command line with every plugin's commands, run on ``argv``."""
    from kairox_process import protect_environment

    # a server or worker this process starts must not read its environment from /proc
    protect_environment()

    # every text kairox prints passes one guard: no escape sequence from a server, bundle
    # or file reaches the terminal (per-field escaping also stops forged lines)
    sys.stdout = SafeStream(sys.stdout)
    sys.stderr = SafeStream(sys.stderr)
    configure_logging(0)  # the group's callback raises it for -v/-vv
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if sys.version_info >= (3, 11):
        return build_cli().main(args=argv, prog_name="kairox")
    import asyncio

    try:
        return build_cli().main(args=argv, prog_name="kairox")
    except asyncio.CancelledError:
        # Python 3.10: anyio's backport of asyncio.Runner answers Ctrl-C by cancelling the
        # main task, but without Task.uncancel() it cannot turn that back into the
        # KeyboardInterrupt 3.11+ raises, so a bare CancelledError (and its traceback) would
        # end the program. Nothing else cancels the main task; say what click says for
        # Ctrl-C on 3.11+ (every server was shut down by the time the cancellation got here).
        click.echo("Aborted!", err=True)
        sys.exit(1)
