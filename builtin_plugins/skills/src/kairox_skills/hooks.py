"""kairox-skills hook implementations (the work lives in sibling modules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.hookspecs import hookimpl

if TYPE_CHECKING:
    import click

    from kairox import ConfigSection, Registrar, Runtime
    from kairox.protocols import SkillSource


@hookimpl
def kairox_register_config_sections(registrar: Registrar[ConfigSection]) -> None:
    from ._config import config_section

    registrar.add(config_section())


@hookimpl
def kairox_register_skill_sources(registrar: Registrar[SkillSource], runtime: Runtime) -> None:
    from ._plugin import register_sources

    register_sources(registrar, runtime)


@hookimpl
def kairox_register_commands(cli: click.Group) -> None:
    from kairox.cli import lazy_command

    cli.add_command(
        lazy_command("skills", "kairox_skills._cli:skills", "List, show, match, render, enable and disable skills.")
    )
