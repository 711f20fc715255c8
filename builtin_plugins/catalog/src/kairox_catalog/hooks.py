"""kairox-catalog's hookimpls: the ``[catalog]`` section, the catalog sources, ``kairox catalog``.

Cheap to import: the sources, the HTTP code and the CLI load when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kairox import hookimpl

if TYPE_CHECKING:
    import click

    from kairox import ConfigSection, Registrar, Runtime


@hookimpl
def kairox_register_config_sections(registrar: Registrar[ConfigSection]) -> None:
    from kairox import ConfigSection

    from .config import CatalogConfig

    registrar.add(
        ConfigSection(
            name="catalog",
            schema=CatalogConfig,
            needs_trust=True,
            description="marketplace catalog: remote sources (URL, kind), cache TTL, HTTP timeout",
        )
    )


@hookimpl
def kairox_register_catalog_sources(registrar: Registrar[Any], runtime: Runtime) -> None:
    from .sources import register_sources

    register_sources(registrar, runtime)


@hookimpl
def kairox_register_commands(cli: click.Group) -> None:
    from kairox.cli import lazy_command

    cli.add_command(
        lazy_command(
            "catalog",
            "kairox_catalog.cli:catalog",
            "Browse and install MCP servers, plugins and skills from the catalog sources.",
        )
    )
