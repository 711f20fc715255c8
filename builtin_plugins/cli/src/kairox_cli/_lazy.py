"""Commands whose module is imported only when they run (or show their own help).

Every plugin's ``kairox_register_commands`` runs on every ``kairox`` call, so a
command module that imports much slows down ``kairox plugins`` and everything
else. Register a lazy command instead:

    @hookimpl
    def kairox_register_commands(cli):
        cli.add_command(lazy_command("catalog", "kairox_catalog.cli:catalog", "Find and install ..."))

``kairox --help`` lists it with that help line; ``kairox catalog ...`` imports
``kairox_catalog.cli`` and runs the real ``catalog`` group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

__all__ = ["LazyCommand", "lazy_command"]


class LazyCommand(click.Command):
    """A stand-in for a click command (or group) that lives in a module not imported yet."""

    def __init__(self, name: str, target: str, help: str = "", *, hidden: bool = False) -> None:
        super().__init__(name, help=help, short_help=help.split("\n")[0] if help else None, hidden=hidden)
        self.target = target
        self._command: click.Command | None = None

    def load(self) -> click.Command:
        """Import ``module:attribute`` (dotted attributes allowed) and return the real command;
        a target that does not load is a one-line error naming the command and the target."""
        if self._command is None:
            from kairox.declare import load_target

            try:
                command = load_target(self.target)
            except Exception as exc:
                raise click.ClickException(
                    f"command {self.name!r} cannot load {self.target}: {type(exc).__name__}: {exc}"
                ) from exc
            if not isinstance(command, click.Command):
                raise click.ClickException(f"command {self.name!r}: {self.target} is not a click command")
            self._command = command
        return self._command

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        # click runs ``ctx.command.invoke(ctx)``: the real command takes over from here
        return self.load().make_context(info_name, args, parent=parent, **extra)

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        return self.load().get_params(ctx)

    def invoke(self, ctx: click.Context) -> Any:
        return self.load().invoke(ctx)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        return self.load().shell_complete(ctx, incomplete)


def lazy_command(name: str, target: str, help: str = "", *, hidden: bool = False) -> click.Command:
    """A command named ``name`` whose implementation is ``target`` (``"package.module:attribute"``)."""
    return LazyCommand(name, target, help, hidden=hidden)
