"""The ``kairox`` command line (click). Plugins add subcommands through the kernel's
``kairox_register_commands`` hook; the helpers here are for their commands:
``run_with_runtime(ctx, fn)`` opens a runtime over the CLI's workspace (a
denied call or failed tool in ``fn`` ends the command with a one-line error,
exit 1),
``want_json(ctx, flag)`` and ``echo_json(data)`` follow the global ``--json``,
``tty_approver(yes)`` asks the user on a terminal, ``config_secrets(rt)`` and
``mask_secrets(value, secrets)`` mask the config's secret values in what a command prints,
``parse_pairs(values,
option=)`` reads repeated ``KEY=VALUE`` options, ``lazy_command(name,
"module:attr", help)`` defers importing a command's module until it runs, and
``command(name, "module:attr", help)`` is a whole ``kairox_register_commands``
hook adding one such command.

The names are listed once, in ``__init__.pyi``."""

from __future__ import annotations

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
