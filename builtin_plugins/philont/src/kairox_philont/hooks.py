"""kairox-philont hookimpls: the Philont ``plugin.json`` manifest format."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox import hookimpl

if TYPE_CHECKING:
    from kairox import Registrar
    from kairox.protocols import ManifestFormat


@hookimpl
def kairox_register_manifest_formats(registrar: Registrar[ManifestFormat]) -> None:
    from .manifest import PhilontFormat

    registrar.add(PhilontFormat())
