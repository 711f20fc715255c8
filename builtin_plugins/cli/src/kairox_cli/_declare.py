"""``command(...)``: a plugin's ``kairox_register_commands`` hook in one line, as
:mod:`kairox.declare` writes the other registration hooks.

Cheap to import (no click): a plugin's ``hooks`` module imports it at every open."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kairox import hookimpl
from kairox.declare import check_target

if TYPE_CHECKING:
    import click

__all__ = ["command"]


def command(name: str, target: str, help: str, *, hidden: bool = False) -> Callable[[click.Group], None]:
    """A ``kairox_register_commands`` hook adding ``kairox NAME``, imported from ``target``
    only when it runs or shows its own help (:func:`lazy_command`)."""
    check_target(target)

    def kairox_register_commands(cli: click.Group) -> None:
        from ._lazy import lazy_command

        cli.add_command(lazy_command(name, target, help, hidden=hidden))

    return hookimpl(kairox_register_commands)
