"""kairox-catalog's hookimpls: the ``[catalog]`` section, the catalog sources, ``kairox catalog``.

Cheap to import: the sources, the HTTP code and the CLI load when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kairox import hookimpl
from kairox.declare import config_section
from kairox_cli import command

if TYPE_CHECKING:
    from kairox import Runtime
    from kairox.ext import Registrar

kairox_register_config_sections = config_section(
    "catalog",
    "kairox_catalog.config:CatalogConfig",
    needs_trust=True,
    description="marketplace catalog: remote sources (URL, kind), cache TTL, HTTP timeout",
)
kairox_register_commands = command(
    "catalog",
    "kairox_catalog.cli:catalog",
    "Browse and install MCP servers, plugins and skills from the catalog sources.",
)


@hookimpl
def kairox_register_catalog_sources(registrar: Registrar[Any], runtime: Runtime) -> None:
    from .sources import register_sources

    register_sources(registrar, runtime)
