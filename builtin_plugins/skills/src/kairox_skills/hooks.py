"""kairox-skills hook implementations (the work lives in sibling modules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.hookspecs import hookimpl

if TYPE_CHECKING:
    import click

    from kairox._config import ConfigSection
    from kairox._hooks import ContextPiece
    from kairox._registrar import Registrar
    from kairox._runtime import Runtime, Session
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
def kairox_pre_turn(session: Session, prompt: str) -> ContextPiece | None:
    from ._plugin import suggest

    return suggest(session, prompt)


@hookimpl
def kairox_register_commands(cli: click.Group) -> None:
    from ._cli import skills

    cli.add_command(skills)
