"""Turn context: what the model should see this turn, in one structured answer.

``await session.turn_context(prompt)`` gathers the instructions, the skills
index (progressive disclosure: names, descriptions, locations), the skills that
match the prompt, context injected by ``kairox_pre_turn`` hookimpls and plugin
``pre_turn`` hook scripts (each piece labelled with its source), and the tool
list in the shape model APIs take, optionally cut to a token budget (the rest
stay findable through the ``tools.search`` tool).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ._hooks import ContextPiece
from ._instructions import Instruction, load_instructions
from ._tools import FunctionTool, ToolSpec

if TYPE_CHECKING:
    from ._runtime import Runtime, Session

__all__ = ["SkillEntry", "SkillSuggestion", "TurnContext", "build_turn_context", "tools_search_tool"]

TOOLS_SEARCH_ID = "tools.search"


@attrs.frozen
class SkillEntry:
    """One line of the skills index."""

    name: str
    description: str
    location: str
    scope: str


@attrs.frozen
class SkillSuggestion:
    """A skill that matches the prompt, with its score and why."""

    name: str
    score: float
    why: str


@attrs.frozen
class TurnContext:
    prompt: str
    instructions: list[Instruction]
    skills: list[SkillEntry]
    matched_skills: list[SkillSuggestion]
    injected: list[ContextPiece]
    tools: list[dict[str, Any]]
    omitted_tools: int = 0
    problems: list[str] = attrs.field(factory=list)

    def available_skills_xml(self) -> str:
        """The Agent Skills ``<available_skills>`` block."""
        lines = ["<available_skills>"]
        for s in self.skills:
            lines += [
                "  <skill>",
                f"    <name>{escape(s.name)}</name>",
                f"    <description>{escape(s.description)}</description>",
                f"    <location>{escape(s.location)}</location>",
                "  </skill>",
            ]
        lines.append("</available_skills>")
        return "\n".join(lines)

    def render(self) -> str:
        """A plain-text rendering (a system prompt a host could use as it is)."""
        parts: list[str] = []
        for ins in self.instructions:
            parts.append(f"<!-- instructions from {ins.source} -->\n{ins.text}")
        if self.skills:
            parts.append(self.available_skills_xml())
        if self.matched_skills:
            parts.append(
                "Skills that match this request: " + ", ".join(f"{m.name} ({m.why})" for m in self.matched_skills)
            )
        for piece in self.injected:
            title = f" {piece.title}" if piece.title else ""
            parts.append(f"<!-- context from {piece.source}{title} -->\n{piece.text}")
        return "\n\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "instructions": [attrs.asdict(i) for i in self.instructions],
            "skills": [attrs.asdict(s) for s in self.skills],
            "matched_skills": [attrs.asdict(m) for m in self.matched_skills],
            "injected": [attrs.asdict(p) for p in self.injected],
            "tools": self.tools,
            "omitted_tools": self.omitted_tools,
            "problems": self.problems,
        }


def estimate_tokens(value: Any) -> int:
    """A rough token count (~4 characters a token), enough for budgeting."""
    return max(1, len(json.dumps(value, ensure_ascii=False)) // 4)


def _pieces(value: Any, source: str) -> list[ContextPiece]:
    if value is None:
        return []
    if isinstance(value, str):
        return [ContextPiece(value, source)] if value.strip() else []
    if isinstance(value, ContextPiece):
        return [value if value.source else attrs.evolve(value, source=source)]
    if isinstance(value, (list, tuple)):
        return [p for v in value for p in _pieces(v, source)]
    return [ContextPiece(str(value), source)]


def _skill_entries(runtime: Runtime, session: Session) -> list[SkillEntry]:
    return [
        SkillEntry(
            name=skill.name,
            description=skill.description,
            location=str(skill.path or ""),
            scope=skill.scope.value,
        )
        for skill in runtime.skills.skills(session_id=session.id)
    ]


def _skill_matches(runtime: Runtime, session: Session, prompt: str, limit: int) -> list[SkillSuggestion]:
    return [
        SkillSuggestion(m.skill.name, m.score, "; ".join(m.reasons))
        for m in runtime.skills.match(prompt, session_id=session.id, limit=limit)
    ]


def select_tools(specs: Sequence[ToolSpec], budget: int | None) -> tuple[list[dict[str, Any]], int]:
    """Tools in model shape, cut to ``budget`` tokens (``tools.search`` always kept first)."""
    shaped = [s.to_model_tool() for s in specs]
    if budget is None:
        return shaped, 0
    search = [t for s, t in zip(specs, shaped, strict=True) if s.id == TOOLS_SEARCH_ID]
    rest = [t for s, t in zip(specs, shaped, strict=True) if s.id != TOOLS_SEARCH_ID]
    chosen: list[dict[str, Any]] = []
    used = sum(estimate_tokens(t) for t in search)
    for tool in rest:
        cost = estimate_tokens(tool)
        if used + cost > budget:
            continue
        chosen.append(tool)
        used += cost
    omitted = len(rest) - len(chosen)
    return (search + chosen if omitted else chosen + [t for t in search if t not in chosen]), omitted


async def build_turn_context(
    session: Session, prompt: str, *, tool_budget: int | None = None, max_skills: int = 5, cwd: Path | None = None
) -> TurnContext:
    runtime = session.runtime
    instructions, problems = load_instructions(runtime, cwd=cwd)
    injected: list[ContextPiece] = []
    for outcome in await runtime.call_hooks("pre_turn", session=session, prompt=prompt):
        if outcome.error is None:
            injected.extend(_pieces(outcome.value, outcome.source))
        else:
            problems.append(f"pre_turn hook of {outcome.source} failed: {outcome.error}")
    tools, omitted = select_tools(runtime.tools.specs(), tool_budget)
    return TurnContext(
        prompt=prompt,
        instructions=instructions,
        skills=_skill_entries(runtime, session),
        matched_skills=_skill_matches(runtime, session, prompt, max_skills),
        injected=injected,
        tools=tools,
        omitted_tools=omitted,
        problems=problems,
    )


def tools_search_tool(runtime: Runtime) -> FunctionTool:
    """``tools.search``: find tools by words in their id, name or description."""

    def search(query: str, limit: int = 10) -> dict[str, Any]:
        words = [w for w in query.lower().split() if w]
        scored = []
        for spec in runtime.tools.specs():
            if spec.id == TOOLS_SEARCH_ID:
                continue
            hay_id = f"{spec.id} {spec.exported_name}".lower()
            hay = spec.description.lower()
            score = sum(3 if w in hay_id else 1 if w in hay else 0 for w in words)
            if score:
                scored.append((score, spec))
        scored.sort(key=lambda p: (-p[0], p[1].id))
        return {"tools": [s.to_model_tool() | {"id": s.id} for _, s in scored[: max(1, limit)]]}

    spec = ToolSpec(
        id=TOOLS_SEARCH_ID,
        description="Find tools that are available but not listed: search their names and descriptions. "
        "Returns each match's name, description and input schema.",
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "words to look for"},
                "limit": {"type": "integer", "minimum": 1, "default": 10},
            },
            "required": ["query"],
        },
        domain="local",
        capability="read",
        provider="kairox",
    )
    return FunctionTool(spec, search)
