"""kairox-philont hookimpls: the Philont ``plugin.json`` manifest format."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox import hookimpl

if TYPE_CHECKING:
    from kairox import ConfigSection, Registrar
    from kairox.protocols import ManifestFormat


@hookimpl
def kairox_register_manifest_formats(registrar: Registrar[ManifestFormat]) -> None:
    from .manifest import PhilontFormat

    registrar.add(PhilontFormat())


@hookimpl
def kairox_register_config_sections(registrar: Registrar[ConfigSection]) -> None:
    from kairox import ConfigSection

    from .config import SECTION, PhilontConfig

    registrar.add(ConfigSection(name=SECTION, schema=PhilontConfig, description="Philont plugin.json code plugins"))
