"""Shared helpers for CLI commands: state, runtime opening, output, approval prompt."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import click

from .._host import PluginHost, build_plugin_host

if TYPE_CHECKING:  # imported when a command runs: `kairox plugins` and `--help` never load the runtime
    from .._runtime import ApprovalAnswer, ApprovalRequest, Approver, Runtime, StartMode

__all__ = ["CliState", "CommandFailed", "echo_json", "parse_pairs", "run_with_runtime", "tty_approver", "want_json"]

T = TypeVar("T")


@attrs.define
class CliState:
    host: PluginHost | None = None
    workspace: Path = attrs.field(factory=Path.cwd)
    json: bool = False

    def get_host(self) -> PluginHost:
        if self.host is None:
            self.host = build_plugin_host()
        return self.host


def state_of(ctx: click.Context) -> CliState:
    return ctx.ensure_object(CliState)


def want_json(ctx: click.Context, local: bool) -> bool:
    return local or state_of(ctx).json


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


class CommandFailed(click.ClickException):
    """A kairox error that ends a command: ``kairox: <kind>: <message>`` on stderr, exit 1."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    def show(self, file: Any = None) -> None:
        click.echo(f"kairox: {self.kind}: {self.format_message()}", err=True, file=file)


def parse_pairs(values: Iterable[str], *, option: str, metavar: str = "KEY") -> dict[str, str]:
    """``KEY=VALUE`` option values (``--arg a=1 --arg b=2``) as a dict; the value may hold
    ``=``; a value without ``=`` or with an empty key is a usage error naming ``option``."""
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected {metavar}=VALUE, got {item!r}", param_hint=option)
        out[key] = value
    return out


def _as_command_failure(exc: Exception) -> Exception:
    """A :class:`~kairox.KairoxError` as a clean CLI error; anything else unchanged."""
    from ..errors import KairoxError, PolicyDenied, ToolError

    if isinstance(exc, click.ClickException) or not isinstance(exc, KairoxError):
        return exc
    kind = "denied" if isinstance(exc, PolicyDenied) else "failed" if isinstance(exc, ToolError) else "error"
    return CommandFailed(kind, str(exc))


def run_with_runtime(
    ctx: click.Context,
    fn: Callable[[Runtime], Awaitable[T]],
    *,
    start: StartMode = True,
    approver: Approver | None = None,
    warn_config: bool = True,
) -> T:
    """Open a runtime over the CLI's workspace, run ``fn`` in it, close it.

    A :class:`~kairox.KairoxError` out of ``fn`` (a denied call, a failed tool)
    ends the command with ``kairox: denied: ...`` / ``kairox: failed: ...`` on
    stderr and exit code 1, not a traceback. With ``warn_config`` (the default),
    config errors are written to stderr first: the part of the config they are in
    does not apply, which the user must not miss (``status`` and ``config show``
    report them themselves).

    ``start`` is the runtime's :data:`~kairox.StartMode`. When it activates
    something and stdin and stderr are a terminal, an untrusted (or changed)
    workspace is shown and the user asked once whether to trust it; without a
    terminal nobody is asked and the workspace's servers stay untrusted.

    SIGTERM and SIGHUP cancel the work like Ctrl-C does, so the runtime closes
    (every server's process group is reaped) before the CLI exits with 128+signal.
    A signal that was ignored when the CLI started (``nohup`` ignores SIGHUP) stays
    ignored, as it does for Python's own SIGINT handling.
    """
    import anyio

    from .._runtime import Runtime
    from .._text import terminal_safe
    from .._trust import TrustState
    from ._trust import tty_trust_prompt

    state = state_of(ctx)
    results: list[T] = []
    received: list[int] = []
    errors: list[Exception] = []

    async def go() -> None:
        async with anyio.create_task_group() as tg:

            async def watch_signals() -> None:
                if sys.platform == "win32":  # no SIGHUP, and no signal receivers on Windows' event loops
                    return
                watched = [s for s in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(s) is not signal.SIG_IGN]
                if not watched:
                    return
                with anyio.open_signal_receiver(*watched) as signals:
                    async for signum in signals:
                        received.append(signum)
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch_signals)
            try:
                prompt = tty_trust_prompt() if start is not False else None
                async with Runtime.open(
                    state.workspace, host=state.get_host(), start=start, approver=approver, trust_prompt=prompt
                ) as rt:
                    if warn_config:
                        for error in rt.config.errors:
                            click.echo(f"kairox: config problem: {terminal_safe(str(error))}", err=True)
                        pending = rt.trust.pending
                        if start is not False and pending:
                            n = len(pending)
                            click.echo(
                                f"kairox: {n} item{'s' if n != 1 else ''} of this workspace "
                                f"{'do' if n != 1 else 'does'} not run: "
                                f"{rt.trust.hint(TrustState.CHANGED if rt.trust.trusted else None)}",
                                err=True,
                            )
                    results.append(await fn(rt))
            except Exception as exc:  # re-raised as is below, not inside an ExceptionGroup
                errors.append(exc)
            tg.cancel_scope.cancel()

    anyio.run(go)
    if errors and not received:
        raise _as_command_failure(errors[0]) from errors[0]
    if received or not results:
        signum = received[0] if received else signal.SIGTERM
        click.echo(f"kairox: stopped by {signal.Signals(signum).name}; every server was shut down", err=True)
        raise SystemExit(128 + signum)
    return results[0]


def tty_approver(assume_yes: bool) -> Approver | None:
    """``--yes`` approves every Ask; on a TTY the user is asked; otherwise no approver (Ask = Deny)."""
    import anyio

    from .._runtime import ApprovalAnswer

    if assume_yes:
        return lambda request: ApprovalAnswer.ALLOW_ONCE
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    async def ask(request: ApprovalRequest) -> ApprovalAnswer:
        def prompt() -> ApprovalAnswer:
            args = json.dumps(request.arguments, ensure_ascii=False)
            if len(args) > 400:
                args = args[:400] + "..."
            click.echo(f"\nkairox: {request.tool.id} asks for approval: {request.reason}", err=True)
            click.echo(f"  arguments: {args}", err=True)
            choice = click.prompt(
                "  allow [o]nce, allow for this [s]ession, or [d]eny?",
                type=click.Choice(["o", "s", "d"]),
                default="d",
                err=True,
            )
            return {"o": ApprovalAnswer.ALLOW_ONCE, "s": ApprovalAnswer.ALLOW_SESSION}.get(choice, ApprovalAnswer.DENY)

        return await anyio.to_thread.run_sync(prompt)

    return ask
