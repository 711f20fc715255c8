"""The kernel's own hookimpls: it owns the ``[policy]`` section."""

from __future__ import annotations

from ._config import ConfigSection
from ._policy import PolicyConfig
from ._registrar import Registrar
from .hookspecs import hookimpl


@hookimpl
def kairox_register_config_sections(registrar: Registrar[ConfigSection]) -> None:
    registrar.add(
        ConfigSection(
            name="policy",
            schema=PolicyConfig,
            description="approval and sandbox policy, extra writable roots, per-tool rules",
        )
    )
