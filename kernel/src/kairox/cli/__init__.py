"""The ``kairox`` command line (click). Plugins add subcommands through
``kairox_register_commands``; the helpers here are for their commands:
``run_with_runtime(ctx, fn)`` opens a runtime over the CLI's workspace (a
denied call or failed tool in ``fn`` ends the command with a one-line error,
exit 1),
``want_json(ctx, flag)`` and ``echo_json(data)`` follow the global ``--json``,
``tty_approver(yes)`` asks the user on a terminal, ``lazy_command(name,
"module:attr", help)`` defers importing a command's module until it runs."""

from __future__ import annotations

from ._lazy import LazyCommand, lazy_command
from ._main import build_cli, cli, main
from ._util import CommandFailed, echo_json, run_with_runtime, tty_approver, want_json

__all__ = [
    "CommandFailed",
    "LazyCommand",
    "build_cli",
    "cli",
    "echo_json",
    "lazy_command",
    "main",
    "run_with_runtime",
    "tty_approver",
    "want_json",
]
