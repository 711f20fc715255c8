"""kairox-ui's hookimpls: ``kairox ui`` (the web dashboard) and ``kairox watch`` (the terminal view).

Cheap to import: starlette, uvicorn and the commands load when one of them runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox import hookimpl

if TYPE_CHECKING:
    import click


@hookimpl
def kairox_register_commands(cli: click.Group) -> None:
    from kairox_cli import lazy_command

    cli.add_command(
        lazy_command(
            "ui", "kairox_ui.cli:ui", "Dashboard: the workspace's servers, catalog, skills, plugins and tools."
        )
    )
    cli.add_command(
        lazy_command("watch", "kairox_ui.watch:watch", "Terminal live view: server states and the event trace.")
    )
