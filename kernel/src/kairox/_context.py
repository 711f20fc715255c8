"""Turn context: what the model should see this turn, in one structured answer.

``await session.turn_context(prompt)`` gathers the instructions (what ``kairox_instructions``
hookimpls give, such as kairox-agents' ``AGENTS.md``, then tool providers' own), the skills
index (progressive disclosure: names, descriptions, locations), the skills that
match the prompt, context injected by ``kairox_pre_turn`` hookimpls and plugin
``pre_turn`` hook scripts (each piece labelled with its source), and the tool
list in the shape model APIs take, optionally cut to a token budget (the rest
stay findable through the ``tools.search`` tool). The skills index always fits a
budget (``skill_budget`` tokens, :data:`SKILL_BUDGET` by default): a workspace
with 100,000 skills must not become a 34 MB prompt; the skills left out stay
findable through ``skills.search``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from html import escape
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ._hooks import ContextPiece
from ._tool_index import ToolIndex, estimate_tokens
from ._tools import FunctionTool, ToolContext, ToolSpec
from .protocols import GivesInstructions

if TYPE_CHECKING:
    from ._runtime import Runtime
    from ._session import Session

__all__ = [
    "MAX_PROVIDER_INSTRUCTIONS",
    "MAX_SOURCE_INSTRUCTIONS",
    "SKILL_BUDGET",
    "Instruction",
    "SkillEntry",
    "SkillSuggestion",
    "TurnContext",
    "build_turn_context",
    "skills_search_tool",
    "tools_search_tool",
]

TOOLS_SEARCH_ID = "tools.search"
SKILLS_SEARCH_ID = "skills.search"
#: tokens the skills index may take by default (~16,000 characters; Claude Code
#: gives its skill listing a budget of the same order)
SKILL_BUDGET = 4_000
#: the Agent Skills limit on a description; a longer one is cut in the index
MAX_DESCRIPTION = 1024
#: tools in a row a tool budget passes over (each too big for what is left) before it stops looking
MAX_PASSED_OVER = 32
#: characters of one provider source's own instructions (an MCP server's ``instructions``)
#: in the turn context; a longer text is cut with a note
MAX_SOURCE_INSTRUCTIONS = 8_000
#: characters of all providers' instructions together; sources past it are left out, with a problem
MAX_PROVIDER_INSTRUCTIONS = 32_000


@attrs.frozen
class Instruction:
    """One piece of instructions and where it came from (a ``kairox_instructions`` answer)."""

    text: str
    source: str  # a file path, or "<file> [instructions].text"
    scope: str  # "user" | "workspace" | "directory" | "provider"


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
    #: skills left out of ``skills`` by the budget (findable through ``skills.search``)
    omitted_skills: int = 0

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
        if self.omitted_skills:
            lines.append(f"({self.omitted_skills} more skills are available: find them with the skills_search tool)")
        return "\n".join(lines)

    def render(self) -> str:
        """A plain-text rendering (a system prompt a host could use as it is)."""
        parts: list[str] = []
        for ins in self.instructions:
            parts.append(f"<!-- instructions from {ins.source} -->\n{ins.text}")
        if self.skills or self.omitted_skills:
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
            "omitted_skills": self.omitted_skills,
            "problems": self.problems,
        }


def _pieces(value: Any, source: str, problems: list[str]) -> list[ContextPiece]:
    if value is None:
        return []
    if isinstance(value, Exception):  # a problem the hook met (a file it could not read), not raised
        problems.append(str(value))
        return []
    if isinstance(value, str):
        return [ContextPiece(value, source)] if value.strip() else []
    if isinstance(value, ContextPiece):
        return [value if value.source else attrs.evolve(value, source=source)]
    if isinstance(value, (list, tuple)):
        return [p for v in value for p in _pieces(v, source, problems)]
    return [ContextPiece(str(value), source)]


def _instructions(value: Any, source: str, problems: list[str]) -> list[Instruction]:
    if value is None:
        return []
    if isinstance(value, Instruction):
        return [value]
    if isinstance(value, Exception):  # a problem the hook met (a file it could not read), not raised
        problems.append(str(value))
        return []
    if isinstance(value, (list, tuple)):
        return [i for v in value for i in _instructions(v, source, problems)]
    problems.append(f"instructions hook of {source} answered {type(value).__name__}, not an Instruction")
    return []


def provider_instructions(runtime: Runtime, problems: list[str]) -> list[Instruction]:
    """What tool providers say the model should know (an MCP server's ``instructions``):
    each provider with an ``instructions()`` method returns ``(source, text)`` pairs. Each is
    labelled by its source (scope ``"provider"``), cut to :data:`MAX_SOURCE_INSTRUCTIONS`
    characters, and all together kept within :data:`MAX_PROVIDER_INSTRUCTIONS`."""
    out: list[Instruction] = []
    used = 0
    for provider in list(runtime.providers):
        if not isinstance(provider, GivesInstructions):
            continue
        try:
            pairs = list(provider.instructions())
        except Exception as exc:
            problems.append(f"instructions of provider {provider.name} failed: {type(exc).__name__}: {exc}")
            continue
        for source, text in pairs:
            text = str(text).strip()
            if not text:
                continue
            if len(text) > MAX_SOURCE_INSTRUCTIONS:
                cut = len(text) - MAX_SOURCE_INSTRUCTIONS
                text = (
                    text[:MAX_SOURCE_INSTRUCTIONS]
                    + f"\n[... {cut} more characters of {source}'s instructions left out]"
                )
            if used + len(text) > MAX_PROVIDER_INSTRUCTIONS:
                problems.append(
                    f"instructions of {source} left out: over {MAX_PROVIDER_INSTRUCTIONS} characters in all"
                )
                continue
            used += len(text)
            out.append(Instruction(text=text, source=str(source), scope="provider"))
    return out


def _entry(skill: Any) -> SkillEntry:
    description = skill.description
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "\u2026"
    return SkillEntry(name=skill.name, description=description, location=str(skill.path or ""), scope=skill.scope.value)


def select_skills(skills: Sequence[Any], first: Sequence[str], budget: int | None) -> tuple[list[SkillEntry], int]:
    """The skills index cut to ``budget`` tokens: skills named in ``first`` (those
    matching the prompt) go in before the others, each as long as it fits."""
    entries = [_entry(s) for s in skills]
    if budget is None:
        return entries, 0
    rank = {name: i for i, name in enumerate(first)}
    order = sorted(range(len(entries)), key=lambda i: rank.get(entries[i].name, len(rank)))
    chosen: set[int] = set()
    used = 0
    for i in order:
        cost = estimate_tokens(attrs.astuple(entries[i]))
        if used + cost > budget:
            continue
        chosen.add(i)
        used += cost
    return [e for i, e in enumerate(entries) if i in chosen], len(entries) - len(chosen)


def _skill_matches(runtime: Runtime, session: Session, prompt: str, limit: int) -> list[SkillSuggestion]:
    return [
        SkillSuggestion(m.skill.name, m.score, "; ".join(m.reasons))
        for m in runtime.skills.match(prompt, session_id=session.id, limit=limit)
    ]


#: the tools a budget lists first, whatever the prompt: they find the ones it leaves out
ALWAYS_LISTED = (TOOLS_SEARCH_ID, SKILLS_SEARCH_ID)


def tool_ranking(index: ToolIndex, prompt: str) -> Iterator[int]:
    """Positions in ``index`` in the order a budget takes them: the always-listed tools, then
    those that match the prompt, best first (the ranking of ``tools.search``), then the rest
    in id order. Lazy: a budget that fills early never looks at the rest."""
    first = [at for at in map(index.position, ALWAYS_LISTED) if at is not None]
    yield from first
    seen = set(first)
    matched = index.rank(prompt)
    yield from (at for at in matched if at not in seen)
    seen.update(matched)
    yield from (at for at in range(len(index)) if at not in seen)


def select_tools(index: ToolIndex, prompt: str, budget: int | None) -> tuple[list[dict[str, Any]], int]:
    """Tools in model shape: every tool in id order, or, with a ``budget`` in tokens, the
    tools of :func:`tool_ranking` taken in order while they fit it, passing over one too big
    for what is left (up to :data:`MAX_PASSED_OVER` in a row; the always-listed tools go in
    even when they alone are over). Returns the tools and how many were left out."""
    if budget is None:
        return [s.to_model_tool() for s in index.specs if s.model_visible], 0
    chosen: list[int] = []
    used = 0
    always = sum(1 for t in ALWAYS_LISTED if index.position(t) is not None)
    passed_over = 0
    for at in tool_ranking(index, prompt):
        if not index.spec(at).model_visible:
            continue
        cost = index.tokens(at)
        if len(chosen) >= always and used + cost > budget:
            # a tool too big for what is left is passed over, not an end: one server's
            # oversized tool (a huge schema, a description stuffed with every word to rank
            # first) must not crowd out every tool after it; a run of them ends the scan,
            # so a turn still costs about what it lists
            passed_over += 1
            if passed_over >= MAX_PASSED_OVER:
                break
            continue
        passed_over = 0
        chosen.append(at)
        used += cost
    return [index.spec(at).to_model_tool() for at in chosen], len(index) - index.hidden - len(chosen)


async def build_turn_context(
    session: Session,
    prompt: str,
    *,
    tool_budget: int | None = None,
    max_skills: int = 5,
    cwd: Path | None = None,
    skill_budget: int | None = SKILL_BUDGET,
) -> TurnContext:
    """What the model should see this turn: instructions (``kairox_instructions`` hooks', then tool
    providers' own, such as each MCP server's, labelled by server), the skills index (cut to
    ``skill_budget`` tokens, prompt matches first) and matches, injected context
    (``pre_turn`` hooks), tools (optionally cut to ``tool_budget`` tokens).
    ``Session.turn_context`` is this function, bound to the session."""
    runtime = session.runtime
    problems: list[str] = []
    instructions: list[Instruction] = []
    for outcome in await runtime.dispatch.instructions(session, cwd or runtime.workspace):
        if outcome.error is not None:
            # instructions carry the user's own rules: a turn does not go on without them
            raise outcome.error
        instructions.extend(_instructions(outcome.value, outcome.source, problems))
    instructions += provider_instructions(runtime, problems)
    injected: list[ContextPiece] = []
    for outcome in await runtime.dispatch.pre_turn(session, prompt):
        if outcome.error is None:
            injected.extend(_pieces(outcome.value, outcome.source, problems))
        else:
            problems.append(f"pre_turn hook of {outcome.source} failed: {outcome.error}")
    tools, omitted = select_tools(runtime.tools.index(), prompt, tool_budget)
    matched = _skill_matches(runtime, session, prompt, max_skills)
    skills, omitted_skills = select_skills(
        runtime.skills.skills(session_id=session.id), [m.name for m in matched], skill_budget
    )
    # a skill that was not read (refused, broken) is a problem where it would have been
    problems.extend(str(e) for e in runtime.skills.errors)
    return TurnContext(
        prompt=prompt,
        instructions=instructions,
        skills=skills,
        matched_skills=matched,
        injected=injected,
        tools=tools,
        omitted_tools=omitted,
        problems=problems,
        omitted_skills=omitted_skills,
    )


def tools_search_tool(runtime: Runtime) -> FunctionTool:
    """``tools.search``: find tools by words in their id, name or description."""

    def search(query: str, limit: int = 10) -> dict[str, Any]:
        index = runtime.tools.index()
        found = (index.spec(at) for at in index.rank(query))
        hits = islice((s for s in found if s.id != TOOLS_SEARCH_ID and s.model_visible), max(1, min(limit, 100)))
        return {"tools": [s.to_model_tool() | {"id": s.id} for s in hits]}

    description = (
        "Find tools that are available but not listed: search their names and descriptions. "
        "Returns each match's name, description and input schema."
    )
    return FunctionTool(_search_spec(TOOLS_SEARCH_ID, description), search)


def skills_search_tool(runtime: Runtime) -> FunctionTool:
    """``skills.search``: find skills the index left out (by name, keywords, description)."""

    def search(query: str, limit: int = 10, context: ToolContext | None = None) -> dict[str, Any]:
        session_id = context.session.id if context is not None and context.session is not None else None
        words = [w for w in query.lower().split() if w]
        scored = []
        for skill in runtime.skills.skills(session_id=session_id):
            keywords = " ".join(str(k) for k in getattr(skill, "keywords", ()) or ()).lower()
            description = skill.description.lower()
            name = skill.name.lower()
            # every word counts wherever it is: a name hit most, then a keyword, then the description
            score = sum(3 if w in name else 2 if w in keywords else 1 if w in description else 0 for w in words)
            if score:
                scored.append((score, skill.name, skill))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return {"skills": [attrs.asdict(_entry(skill)) for _, _, skill in scored[: max(1, min(limit, 100))]]}

    description = (
        "Find skills that are available but not listed: search their names, keywords and "
        "descriptions. Returns each match's name, description and location (read the file to use it)."
    )
    return FunctionTool(_search_spec(SKILLS_SEARCH_ID, description), search)


def _search_spec(tool_id: str, description: str) -> ToolSpec:
    """The spec of a kernel search tool: a query, a limit; a local read."""
    return ToolSpec(
        id=tool_id,
        description=description,
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "words to look for"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
            },
            "required": ["query"],
        },
        domain="local",
        capability="read",
        provider="kairox",
    )
