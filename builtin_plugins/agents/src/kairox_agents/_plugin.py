"""The plugin's runtime side: the registries of one runtime, agents to run, the output
style of a session, and what each turn shows the model.

The registries live on a tool provider named ``agents`` (it adds no tools): found with
``runtime.providers.get("agents")``, as the other plugins find each other's managers.
Its discover stage reads the Claude folders (files only: a definition runs nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

import attrs

from kairox import ConfigError, ContextPiece

from ._model import AgentError, AgentPrepared, AgentRun, OutputStyle
from ._provider import PROVIDER_NAME, AgentsProvider
from ._registry import AgentRegistry, OutputStyleRegistry

if TYPE_CHECKING:
    from kairox import Runtime, Session

__all__ = [
    "AGENT_BUDGET",
    "AgentEntry",
    "agents_index",
    "agents_of",
    "available_agents_xml",
    "output_style_of",
    "output_styles_of",
    "prepare",
    "turn_pieces",
    "use_output_style",
]

#: tokens the agents index may take in a turn (a bundle may ship dozens of agents)
AGENT_BUDGET = 2_000
#: the Agent Skills limit on a description; a longer one is cut in the index
MAX_DESCRIPTION = 1024
#: where a session's output style is kept (``session.state``)
STYLE_KEY = "kairox_agents.output_style"


def _provider(runtime: Runtime) -> AgentsProvider:
    provider = runtime.providers.get(PROVIDER_NAME)
    if not isinstance(provider, AgentsProvider):
        raise AgentError("kairox-agents is not loaded in this runtime (see `kairox plugins`)")
    return provider


def agents_of(runtime: Runtime) -> AgentRegistry:
    """Every agent ``runtime``'s host may run (the Claude folders read on first use)."""
    registry = _provider(runtime).agents
    registry.ensure_scanned(runtime)
    return registry


def output_styles_of(runtime: Runtime) -> OutputStyleRegistry:
    """Every output style of ``runtime`` (the Claude folders read on first use)."""
    registry = _provider(runtime).output_styles
    registry.ensure_scanned(runtime)
    return registry


def prepare(session: Session, name: str, *, strict: bool = False) -> AgentRun:
    """The definition of agent ``name`` to run in ``session``: its prompt, pinned model and the
    registered tools it may use (every tool when it lists none). Tools it lists that are not
    registered are in ``unknown_tools`` (``strict``: an :class:`AgentError` naming them). An
    unknown agent is an :class:`AgentError` naming the close match. Publishes :class:`AgentPrepared`."""
    runtime = session.runtime
    run = agents_of(runtime).prepare(name, runtime.tools)
    if strict and run.unknown_tools:
        raise AgentError(
            f"agent {run.name} lists tools that are not registered: {', '.join(run.unknown_tools)}",
            file=run.agent.file,
            field="tools",
        )
    runtime.events.publish(
        AgentPrepared(session_id=session.id, agent=run.name, model=run.model, unknown_tools=run.unknown_tools)
    )
    return run


def use_output_style(session: Session, name: str) -> OutputStyle | None:
    """Give ``session`` the output style ``name`` in place of ``[instructions] output_style``
    (``"default"``: none). A name that is no style raises :class:`~kairox.ConfigError` naming
    the known styles, and the session keeps what it had."""
    style = output_styles_of(session.runtime).selected(session.runtime.config, name)
    session.state[STYLE_KEY] = name
    return style


def output_style_of(session: Session) -> OutputStyle | None:
    """The output style of ``session``: its own (:func:`use_output_style`), else the configured
    one; ``None`` for none. A configured name that is no style raises :class:`~kairox.ConfigError`."""
    override = session.state.get(STYLE_KEY)
    return output_styles_of(session.runtime).selected(session.runtime.config, override)


@attrs.frozen
class AgentEntry:
    """One line of the agents index: ``tools`` as the agent lists them (``None``: every tool),
    ``model`` pinned (``None``: the host's)."""

    name: str
    description: str
    tools: list[str] | None
    model: str | None
    scope: str


def _tokens(value: Any) -> int:
    from kairox.ext import estimate_tokens

    return estimate_tokens(value)


def agents_index(runtime: Runtime, budget: int | None = AGENT_BUDGET) -> tuple[list[AgentEntry], int]:
    """The agents index in name order, each agent while it fits ``budget`` tokens (``None``:
    all); returns the entries and how many were left out."""
    entries = []
    for agent in agents_of(runtime).all():
        description = agent.description
        if len(description) > MAX_DESCRIPTION:
            description = description[: MAX_DESCRIPTION - 1] + "\u2026"
        tools = None if agent.tools is None else list(agent.tools)
        entries.append(AgentEntry(agent.name, description, tools, agent.model, agent.scope))
    if budget is None:
        return entries, 0
    chosen: list[AgentEntry] = []
    used = 0
    for entry in entries:
        cost = _tokens(attrs.astuple(entry))
        if used + cost > budget:
            continue
        chosen.append(entry)
        used += cost
    return chosen, len(entries) - len(chosen)


def available_agents_xml(entries: Sequence[AgentEntry], omitted: int = 0) -> str:
    """The ``<available_agents>`` block: each agent's name, description, tools and model."""
    lines = ["<available_agents>"]
    for a in entries:
        lines += ["  <agent>", f"    <name>{escape(a.name)}</name>"]
        lines.append(f"    <description>{escape(a.description)}</description>")
        tools = "all" if a.tools is None else ", ".join(a.tools) or "none"
        lines.append(f"    <tools>{escape(tools)}</tools>")
        if a.model:
            lines.append(f"    <model>{escape(a.model)}</model>")
        lines.append("  </agent>")
    lines.append("</available_agents>")
    if omitted:
        lines.append(f"({omitted} more agents are available)")
    return "\n".join(lines)


def turn_pieces(session: Session) -> list[Any]:
    """What a turn shows the model (the ``kairox_pre_turn`` answer): the session's output style
    (titled ``output style NAME``), the agents index within :data:`AGENT_BUDGET`; a file that was
    not read, or a style name that is none, is a problem of the turn (an exception in the list)."""
    runtime = session.runtime
    out: list[Any] = []
    try:
        style = output_style_of(session)
    except ConfigError as exc:
        out.append(exc)
    else:
        if style is not None:
            source = style.file or style.source
            out.append(ContextPiece(style.text, source, f"output style {style.name}"))
    entries, omitted = agents_index(runtime)
    if entries or omitted:
        out.append(ContextPiece(available_agents_xml(entries, omitted), PROVIDER_NAME, "available agents"))
    out.extend(agents_of(runtime).errors)
    out.extend(output_styles_of(runtime).errors)
    return out
