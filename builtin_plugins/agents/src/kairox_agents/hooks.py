"""kairox-agents hook implementations (the work lives in sibling modules, imported
when kairox calls the hook)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kairox.declare import adds
from kairox.hookspecs import hookimpl
from kairox_cli import command

if TYPE_CHECKING:
    from kairox import Session

kairox_register_commands = command(
    "agents", "kairox_agents._cli:agents", "Agents (Claude Code subagents) the host can run."
)


kairox_register_tool_providers = adds("kairox_agents._provider:AgentsProvider", runtime=True)


@hookimpl
def kairox_pre_turn(session: Session, prompt: str) -> list[Any]:
    from ._plugin import turn_pieces

    return turn_pieces(session)
