"""kairox-agents hook implementations (the work lives in sibling modules, imported
when kairox calls the hook)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kairox.declare import adds, config_section
from kairox.hookspecs import hookimpl
from kairox_cli import command

if TYPE_CHECKING:
    from pathlib import Path

    from kairox import Session

kairox_register_commands = command(
    "agents", "kairox_agents._cli:agents", "Agents (Claude Code subagents) the host can run."
)


kairox_register_config_sections = config_section(
    "instructions",
    "kairox_agents._instructions:InstructionsConfig",
    description="instructions for every session: inline text, files, AGENTS.md/CLAUDE.md discovery",
    # a workspace's instructions are added to the user's, its files read inside the workspace,
    # and the user's own files read with the user's settings: nothing of the user's changes
    needs_trust=False,
)
kairox_register_tool_providers = adds("kairox_agents._provider:AgentsProvider", runtime=True)


@hookimpl
def kairox_instructions(session: Session, cwd: Path) -> list[Any]:
    from ._instructions import turn_instructions

    return turn_instructions(session.runtime, cwd)


@hookimpl
def kairox_pre_turn(session: Session, prompt: str) -> list[Any]:
    from ._plugin import turn_pieces

    return turn_pieces(session)
