"""Skills: the registry (discovery ships as the kairox-skills plugin).

Skill sources (``kairox_register_skill_sources``) yield :class:`SkillDef`
objects (the data model is in ``_skill_model``); the
:class:`SkillRegistry` deduplicates them by name (session over workspace over
user), remembers what each winner shadows, ranks skills for a prompt, and
prepares one to run: its tools must be registered and its arguments are
validated and rendered into the body.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Container, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Union

import anyio
import attrs

from ._events import Event, EventBus
from ._skill_model import (
    RenderedSkill,
    SkillDef,
    SkillError,
    SkillMatch,
    SkillScope,
    SkillWarning,
    by_precedence,
)

if TYPE_CHECKING:
    from ._runtime import Runtime
    from .protocols import SkillSource

__all__ = [
    "SkillLoadFailed",
    "SkillLoadWarning",
    "SkillRegistry",
    "SkillsChanged",
    "SkillsScanned",
]

logger = logging.getLogger(__name__)


# -- events -----------------------------------------------------------------------


@attrs.frozen
class SkillsScanned(Event):
    sources: tuple[str, ...]
    skills: int
    errors: int = 0
    warnings: int = 0


@attrs.frozen
class SkillLoadFailed(Event):
    error: str
    file: str | None = None
    line: int | None = None
    field: str = ""
    source: str = ""


@attrs.frozen
class SkillLoadWarning(Event):
    warning: str
    file: str | None = None
    line: int | None = None
    field: str = ""
    source: str = ""


@attrs.frozen
class SkillsChanged(Event):
    """Skills were added or removed (a scope read again, a session's own)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    session_id: str | None = None


# -- matching ------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are as at be by can do does for from get how i if in into is it its me my of on or our please "
    "that the their then this to use used uses using want we what when which will with you your".split()
)


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _tokens(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower())]


def _has_phrase(haystack: str, words: list[str]) -> bool:
    return bool(words) and f" {' '.join(words)} " in haystack


def _invoked(name: str, prompt: str) -> bool:
    return f"/{name}" in prompt or f"${name}" in prompt


def _score(skill: SkillDef, prompt: str, joined: str, words: set[str]) -> tuple[float, list[str]]:
    score = 0.0
    reasons: list[str] = []
    name = skill.name
    own = skill.frontmatter.name  # the plugin namespace is never scored: it is on every skill of the plugin
    # a remote skill (an MCP server's) answers to its full name only: never to another origin's
    for called in dict.fromkeys((name, own) if skill.loader is None else (name,)):
        if _invoked(called, prompt) and re.search(rf"(?<![\w/$])[/$]{re.escape(called)}(?![\w:-])", prompt):
            score += 10
            reasons.append(f"invoked as /{called}")
            break
    name_words = _tokens(own)
    if _has_phrase(joined, name_words):
        score += 4
        reasons.append(f"name {own!r}")
    else:
        hits = [w for w in dict.fromkeys(name_words) if w in words and w not in _STOP]
        if hits:
            score += 1.5 * len(hits)
            reasons.append("name words " + ", ".join(map(repr, hits)))
    for keyword in skill.keywords:
        if _has_phrase(joined, _tokens(keyword)):
            score += 3
            reasons.append(f"keyword {keyword!r}")
    desc = [w for w in dict.fromkeys(_tokens(skill.description)) if w in words and w not in _STOP and len(w) > 2]
    if desc:
        score += min(3.0, 0.5 * len(desc))
        reasons.append("description words " + ", ".join(map(repr, desc[:6])))
    return score, reasons


# -- the registry -------------------------------------------------------------------

Problem = Union[SkillError, SkillWarning]


class SkillRegistry:
    """Every skill the agent may use.

    Skills come from sources (scanned with :meth:`scan` / :meth:`add_source`)
    and from sessions (:meth:`add_session_skill`, dropped by
    :meth:`end_session`). On a name clash the higher scope wins (session >
    workspace > user > plugin; plugin skills are ``<plugin>:<name>`` so they
    never clash with the others) and the winner remembers what it shadows.
    Settings can disable a skill by name per scope (:meth:`set_overrides`);
    ``len(registry)`` counts the enabled effective skills.
    """

    def __init__(self, events: EventBus | None = None) -> None:
        self._events = events or EventBus()
        self._sources: dict[str, SkillSource] = {}
        self._found: dict[str, list[SkillDef]] = {}
        self._problems: dict[str, list[Problem]] = {}
        self._session: dict[str, dict[str, SkillDef]] = {}
        self._overrides: dict[SkillScope, dict[str, bool]] = {}
        self._winners: dict[str, SkillDef] = {}
        self._shadows: dict[str, tuple[SkillDef, ...]] = {}
        self._duplicates: list[SkillWarning] = []

    # -- problems ----------------------------------------------------------
    @property
    def errors(self) -> list[SkillError]:
        """Files that were skipped, and why (file, line, field)."""
        return [p for ps in self._problems.values() for p in ps if isinstance(p, SkillError)]

    @property
    def warnings(self) -> list[SkillWarning]:
        """Skills loaded leniently, and same-scope duplicates."""
        found = [w for skills in self._found.values() for s in skills for w in s.warnings]
        loose = [p for ps in self._problems.values() for p in ps if isinstance(p, SkillWarning)]
        return found + loose + self._duplicates

    def report(self, problem: Problem, *, source: str = "") -> None:
        """Record a problem found outside a scan (a settings file, a plugin loader)."""
        self._problems.setdefault(source, []).append(problem)
        self._publish_problem(problem, source)

    def _publish_problem(self, problem: Problem, source: str) -> None:
        if isinstance(problem, SkillError):
            self._events.publish(
                SkillLoadFailed(problem.message, problem.file, problem.line, problem.field, source=source)
            )
        else:
            self._events.publish(
                SkillLoadWarning(problem.message, problem.file, problem.line, problem.field, source=source)
            )

    # -- sources -------------------------------------------------------------
    async def scan(self, sources: Iterable[SkillSource], runtime: Runtime | None) -> None:
        """Scan ``sources`` (each in a worker thread, one after the other) and
        replace what they found before. A source that raises is an error; the
        others still load.

        A source with ``quick_scan(runtime)`` is asked first: a list is what it
        finds, known without blocking (its folders are not there), and no thread
        is used; ``None`` means scan it as any other."""
        names: list[str] = []
        for source in sources:
            name = source.name
            names.append(name)
            self._sources[name] = source
            try:
                quick = getattr(source, "quick_scan", None)
                known = quick(runtime) if callable(quick) else None
                items = list(known) if known is not None else await anyio.to_thread.run_sync(_collect, source, runtime)
            except Exception as exc:
                logger.debug("skill source %s failed", name, exc_info=True)
                items = [SkillError(f"skill source {name} failed: {type(exc).__name__}: {exc}")]
            self._store(name, items)
        self._rebuild()
        for warning in self._duplicates:
            self._publish_problem(warning, "")
        for name in names:
            for skill in self._found.get(name, ()):
                for warning in skill.warnings:
                    self._publish_problem(warning, name)
            for problem in self._problems.get(name, ()):
                self._publish_problem(problem, name)
        self._events.publish(
            SkillsScanned(
                sources=tuple(names),
                skills=sum(len(self._found.get(n, ())) for n in names),
                errors=sum(isinstance(p, SkillError) for n in names for p in self._problems.get(n, ())),
                warnings=sum(len(s.warnings) for n in names for s in self._found.get(n, ())),
            )
        )

    def _store(self, source: str, items: list[Any]) -> None:
        skills: list[SkillDef] = []
        problems: list[Problem] = []
        for item in items:
            if isinstance(item, SkillDef):
                skills.append(item if item.source else attrs.evolve(item, source=source))
            elif isinstance(item, (SkillError, SkillWarning)):
                problems.append(item)
            else:
                problems.append(SkillError(f"skill source {source} yielded {type(item).__name__}, not a SkillDef"))
        self._found[source] = skills
        self._problems[source] = problems

    async def add_source(self, source: SkillSource, runtime: Runtime | None = None) -> None:
        """Scan one more source (a plugin's bundled skills) into the registry, or scan a
        known one again (what it no longer finds is removed)."""
        before = dict(self._winners)
        await self.scan([source], runtime)
        added = tuple(sorted(n for n, s in self._winners.items() if before.get(n) != s))
        removed = tuple(sorted(set(before) - set(self._winners)))
        if added or removed:
            self._events.publish(SkillsChanged(added=added, removed=removed))

    def remove_source(self, name: str) -> None:
        """Forget a source and its skills (a plugin was disabled)."""
        before = set(self._winners)
        self._sources.pop(name, None)
        self._found.pop(name, None)
        self._problems.pop(name, None)
        self._rebuild()
        removed = tuple(sorted(before - set(self._winners)))
        if removed:
            self._events.publish(SkillsChanged(removed=removed))

    async def rescan(self, runtime: Runtime | None = None) -> None:
        """Scan every known source again (cheap: sources cache by path, size, mtime)."""
        await self.scan(list(self._sources.values()), runtime)

    def source_names(self) -> list[str]:
        return list(self._sources)

    def _rebuild(self) -> None:
        # in one scope kairox's own folders beat imported ones; stable: first found wins a tie
        self._winners, self._shadows = by_precedence(
            self._found.values(), key=lambda s: (-s.scope.rank, s.origin is not None)
        )
        self._duplicates = []
        for name, others in self._shadows.items():
            winner = self._winners[name]
            self._duplicates += [
                SkillWarning(
                    f"skill {name!r} is defined twice in the {other.scope.value} scope; "
                    f"{winner.file or winner.source} wins",
                    file=other.file,
                    field="name",
                )
                for other in others
                if other.scope is winner.scope and other.origin == winner.origin
            ]

    # -- session skills ------------------------------------------------------
    def add_session_skill(self, session_id: str, skill: SkillDef) -> SkillDef:
        """Add a skill that lives as long as the session (it wins over every other scope)."""
        if skill.scope is not SkillScope.SESSION or skill.source != "session":
            skill = attrs.evolve(skill, scope=SkillScope.SESSION, source="session")
        self._session.setdefault(session_id, {})[skill.name] = skill
        self._events.publish(SkillsChanged(added=(skill.name,), session_id=session_id))
        return skill

    def remove_session_skill(self, session_id: str, name: str) -> None:
        if self._session.get(session_id, {}).pop(name, None) is not None:
            self._events.publish(SkillsChanged(removed=(name,), session_id=session_id))

    def session_skills(self, session_id: str) -> list[SkillDef]:
        return sorted(self._session.get(session_id, {}).values(), key=lambda s: s.name)

    def end_session(self, session_id: str) -> None:
        """Drop the session's skills (the runtime calls this when a session ends)."""
        dropped = self._session.pop(session_id, {})
        if dropped:
            self._events.publish(SkillsChanged(removed=tuple(sorted(dropped)), session_id=session_id))

    # -- settings --------------------------------------------------------------
    def set_overrides(self, scope: SkillScope | str, overrides: Mapping[str, bool]) -> None:
        """Enable/disable skills by name as the ``scope`` settings say (workspace over user)."""
        self._overrides[SkillScope(scope)] = dict(overrides)

    def overrides(self, scope: SkillScope | str) -> dict[str, bool]:
        return dict(self._overrides.get(SkillScope(scope), {}))

    def enabled_state(self, name: str) -> tuple[bool, SkillScope | None]:
        """``(enabled, scope whose settings decided it)``; enabled unless a setting says otherwise."""
        for scope in sorted(self._overrides, key=lambda s: -s.rank):
            value = self._overrides[scope].get(name)
            if value is not None:
                return bool(value), scope
        return True, None

    def is_enabled(self, name: str) -> bool:
        return self.enabled_state(name)[0]

    # -- lookups ----------------------------------------------------------------
    def _view(self, session_id: str | None) -> dict[str, SkillDef]:
        mine = self._session.get(session_id, {}) if session_id is not None else {}
        if not mine:
            return self._winners
        return dict(sorted({**self._winners, **mine}.items()))

    def get(self, name: str, *, session_id: str | None = None) -> SkillDef | None:
        """The effective skill called ``name`` (enabled or not), or ``None``."""
        return self._view(session_id).get(name)

    def skills(
        self,
        *,
        session_id: str | None = None,
        include_disabled: bool = False,
        scope: SkillScope | str | None = None,
        include_user_only: bool = False,
    ) -> list[SkillDef]:
        """The effective skills (one per name), sorted by name: what the model may be offered.

        Skills marked ``disable-model-invocation`` are left out unless
        ``include_user_only`` (listing them for the user; they still run through
        :meth:`prepare`); disabled ones unless ``include_disabled``.
        """
        wanted = SkillScope(scope) if scope is not None else None
        return [
            s
            for s in self._view(session_id).values()
            if (include_disabled or self.is_enabled(s.name))
            and (wanted is None or s.scope is wanted)
            and (include_user_only or s.model_invocable)
        ]

    def shadowed(self, name: str, *, session_id: str | None = None) -> tuple[SkillDef, ...]:
        """The skills the winner for ``name`` hides, highest scope first."""
        behind = self._shadows.get(name, ())
        mine = self._session.get(session_id, {}) if session_id is not None else {}
        if name in mine and name in self._winners:
            return (self._winners[name], *behind)
        return behind

    def all_found(self) -> list[SkillDef]:
        """Every skill every source found, winners and shadowed alike."""
        return [s for skills in self._found.values() for s in skills]

    def __len__(self) -> int:
        return sum(1 for name in self._winners if self.is_enabled(name))

    def __contains__(self, name: object) -> bool:
        return name in self._winners

    def __iter__(self) -> Iterator[SkillDef]:
        return iter(self.skills())

    # -- using a skill ---------------------------------------------------------------
    def match(self, prompt: str, *, session_id: str | None = None, limit: int = 5) -> list[SkillMatch]:
        """Rank enabled skills for ``prompt`` by keywords, name and description.

        Each match carries its score and the reasons: ``/name`` in the prompt
        (10), the whole name (4) or name words (1.5 each), each keyword phrase
        (3), description words (0.5 each, at most 3). Scores below 1 are dropped.
        A plugin skill's namespace is not scored (``/plugin:name`` and ``/name``
        both invoke it). Skills marked ``disable-model-invocation`` are never matched.
        """
        words = _tokens(prompt)
        joined = f" {' '.join(words)} "
        word_set = set(words)
        matches: list[SkillMatch] = []
        for skill in self.skills(session_id=session_id):
            score, reasons = _score(skill, prompt, joined, word_set)
            if score >= 1.0:
                matches.append(SkillMatch(skill, score, tuple(reasons)))
        matches.sort(key=lambda m: (-m.score, m.skill.name))
        return matches[:limit] if limit > 0 else matches

    def require(self, name: str, *, session_id: str | None = None) -> SkillDef:
        """The enabled skill called ``name``; a :class:`SkillError` says why not."""
        skill = self.get(name, session_id=session_id)
        if skill is None:
            close = difflib.get_close_matches(name, list(self._view(session_id)), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise SkillError(f"no skill named {name!r}{hint}")
        enabled, decided = self.enabled_state(skill.name)
        if not enabled:
            where = decided.value if decided else "the"
            raise SkillError(f"skill {skill.name} is disabled in the {where} settings", field="enabled")
        return skill

    def prepare(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        tools: Container[str] | None,
        session_id: str | None = None,
        body: str | None = None,
    ) -> RenderedSkill:
        """Everything to run a skill: it exists and is enabled, every tool it
        lists is registered in ``tools`` (pass ``runtime.tools``; ``None`` skips
        the check), and its arguments are valid. Raises :class:`SkillError`.
        ``body``: the body its :attr:`~SkillDef.loader` fetched (else it is read now)."""
        skill = self.require(name, session_id=session_id)
        if tools is not None:
            missing = skill.missing_tools(tools)
            if missing:
                raise SkillError(
                    f"skill {skill.name} needs tools that are not registered: {', '.join(missing)}",
                    file=skill.file,
                    field="tools",
                )
        values = skill.bind(arguments)
        text = skill.fill(skill.body() if body is None else body, values)
        return RenderedSkill(skill=skill, text=text, arguments=values, model=skill.model, tools=skill.tools)


def _collect(source: SkillSource, runtime: Runtime | None) -> list[Any]:
    return list(source.scan(runtime))  # type: ignore[arg-type]
