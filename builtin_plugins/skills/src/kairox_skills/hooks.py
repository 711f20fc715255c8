"""kairox-skills hook implementations (the work lives in sibling modules, imported
when kairox calls the hook)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.declare import config_section
from kairox.hookspecs import hookimpl
from kairox_cli import command

if TYPE_CHECKING:
    from kairox import Runtime
    from kairox.ext import Registrar
    from kairox.protocols import SkillSource

kairox_register_config_sections = config_section(
    "skills",
    "kairox_skills._config:SkillsConfig",
    # a workspace's `user_dirs` or `import_from` would replace the user's: it waits for trust
    needs_trust=True,
    description="Skill directories and the scan cache (kairox-skills).",
)
kairox_register_commands = command(
    "skills", "kairox_skills._cli:skills", "List, show, match, render, enable and disable skills."
)


@hookimpl
def kairox_register_skill_sources(registrar: Registrar[SkillSource], runtime: Runtime) -> None:
    from ._plugin import register_sources

    register_sources(registrar, runtime)
