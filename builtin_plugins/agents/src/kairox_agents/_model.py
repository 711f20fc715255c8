"""Agents and output styles: the models, their errors and events.

An **agent** (Claude Code's subagent: ``agents/*.md``, ``.claude/agents/``,
``~/.claude/agents/``) is a prompt with a name, a description saying when to use
it, the tools it may use and the model it pins. An **output style**
(``output-styles/*.md``, ``.claude/output-styles/``) is text added to what the model
sees when it is selected (``[instructions] output_style``, or
:func:`kairox_agents.use_output_style` for one session).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from kairox import Event
from kairox.ext import PlacedError

if TYPE_CHECKING:
    from kairox import ToolSpec

__all__ = [
    "AgentDef",
    "AgentError",
    "AgentPrepared",
    "AgentRun",
    "DefinitionError",
    "DefinitionsChanged",
    "OutputStyle",
    "OutputStyleError",
    "claude_tool_ids",
]


#: Claude Code's names of kairox's built-in tools
CLAUDE_TOOLS: dict[str, tuple[str, ...]] = {
    "Read": ("fs.read",),
    "Write": ("fs.write",),
    "Edit": ("fs.write",),
    "MultiEdit": ("fs.write",),
    "LS": ("fs.list",),
    "Glob": ("fs.list",),
    "Grep": ("search.grep",),
    "Bash": ("shell.exec",),
}


# -- errors and events ------------------------------------------------------------


class DefinitionError(PlacedError):
    """An agent or output style file cannot be read; ``file``, ``line``, ``field`` say where."""

    kind = "definition"
    bare_line = False


class AgentError(DefinitionError):
    """An agent file cannot be read or an agent cannot be used; ``file``, ``line``, ``field`` say where."""


class OutputStyleError(DefinitionError):
    """An output style file cannot be read; ``file``, ``line``, ``field`` say where."""


@attrs.frozen
class DefinitionsChanged(Event):
    """Agents or output styles came or went (``kind`` is ``agent`` or ``output_style``)."""

    kind: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


@attrs.frozen
class AgentPrepared(Event):
    """A session got an agent's definition to run (:func:`kairox_agents.prepare`)."""

    session_id: str
    agent: str
    model: str | None = None
    unknown_tools: tuple[str, ...] = ()


# -- the models --------------------------------------------------------------------


class _Named:
    """A bundle's item is named ``<plugin>:<name>``; another its own name."""

    __slots__ = ()  # the attrs classes below keep slots
    own_name: str
    namespace: str | None

    @property
    def name(self) -> str:
        return f"{self.namespace}:{self.own_name}" if self.namespace else self.own_name


@attrs.frozen
class AgentDef(_Named):
    """One agent: ``name`` (``<plugin>:<name>`` for a bundle's), ``description``, ``prompt``
    (the body), ``tools`` as written (``None``: every tool, as in Claude Code when the
    field is omitted), ``disallowed_tools``, ``model`` (``None``: the host's, also for
    ``inherit``), and every other frontmatter key in ``extra``."""

    own_name: str
    description: str
    prompt: str
    scope: str  # "plugin" | "user" | "workspace"
    source: str = ""
    file: str | None = None
    namespace: str | None = None
    tools: tuple[str, ...] | None = None
    disallowed_tools: tuple[str, ...] = ()
    model: str | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict)
    warnings: tuple[str, ...] = ()


@attrs.frozen
class OutputStyle(_Named):
    """One output style: ``name`` (the frontmatter's, else the file name; ``<plugin>:<name>``
    for a bundle's), ``description``, the ``text`` added to the instructions, and
    ``keep_coding_instructions`` (Claude Code's ``keep-coding-instructions``, for hosts
    that have coding instructions of their own)."""

    own_name: str
    description: str
    text: str
    scope: str
    source: str = ""
    file: str | None = None
    namespace: str | None = None
    keep_coding_instructions: bool = False
    extra: Mapping[str, Any] = attrs.field(factory=dict)
    warnings: tuple[str, ...] = ()


@attrs.frozen
class AgentRun:
    """An agent ready to run: its ``prompt``, the ``tool_specs`` it may use (registered
    tools only; all of the runtime's when the agent lists none), the pinned ``model``
    and the tools it lists that no registered tool is (``unknown_tools``)."""

    agent: AgentDef
    prompt: str
    model: str | None
    tool_specs: tuple[ToolSpec, ...]
    unknown_tools: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.agent.name

    @property
    def tools(self) -> tuple[str, ...]:
        """The canonical ids of the tools the agent may use."""
        return tuple(s.id for s in self.tool_specs)

    def model_tools(self) -> list[dict[str, Any]]:
        """The tools in the shape model APIs take (``name``, ``description``, ``input_schema``)."""
        return [s.to_model_tool() for s in self.tool_specs]


# -- tools --------------------------------------------------------------------------


def claude_tool_ids(name: str, tools: Iterable[str], *, namespace: str | None = None) -> list[str]:
    """The canonical ids of ``tools`` (the registered ids) that a tool name in an agent's
    or skill's list stands for: the id or exported name itself, Claude Code's name of a
    built-in (``Read`` is ``fs.read``, ``Bash`` ``shell.exec``; ``Bash(git:*)`` is ``Bash``),
    ``mcp__server__tool`` (``server.tool``, or ``<plugin>.server.tool`` for a bundle's own
    server) and ``mcp__server`` (each tool of that server)."""
    ids = list(tools)
    known = set(ids)
    base = name.split("(", 1)[0].strip()
    if base in known:
        return [base]
    if base in CLAUDE_TOOLS:
        return [t for t in CLAUDE_TOOLS[base] if t in known]
    if base.startswith("mcp__"):
        server, _, tool = base[5:].partition("__")
        prefixes = [server.replace("__", ".")]
        if namespace:
            prefixes.insert(0, f"{namespace}.{prefixes[0]}")
        for prefix in prefixes:
            if tool:
                if f"{prefix}.{tool}" in known:
                    return [f"{prefix}.{tool}"]
            else:
                found = [t for t in ids if t.startswith(f"{prefix}.")]
                if found:
                    return found
    return []
