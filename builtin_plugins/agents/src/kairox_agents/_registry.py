"""The agent and output-style registries: definitions by source, one effective per name.

Each registry keeps its definitions by source: the Claude folders (workspace
``.claude/<kind>/``, user ``$HOME/.claude/<kind>/``, ``HOME`` from the runtime's
environment), and bundles' as ``<plugin>:<name>`` (:meth:`DefinitionRegistry.set_source`).
On a name clash workspace beats user; plugin definitions are namespaced and never clash
with those. Workspace folders are workspace content as ``.kairox/skills`` is: listed and
usable whether or not the workspace is trusted (a definition is markdown and runs nothing).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kairox import ConfigError
from kairox.ext import EventBus, by_precedence
from kairox.files import Entry, Root

from ._model import (
    AgentDef,
    AgentError,
    AgentRun,
    DefinitionError,
    DefinitionsChanged,
    OutputStyle,
    OutputStyleError,
    claude_tool_ids,
)
from ._parse import markdown_files, parse_agent, parse_output_style, read_definition
from ._provider import claude_folders

if TYPE_CHECKING:
    from kairox import Runtime
    from kairox.ext import Config, ToolRegistry

__all__ = ["AgentRegistry", "DefinitionRegistry", "OutputStyleRegistry"]

#: what an unset style means (Claude Code's built-in "Default" is no style)
NO_STYLE = frozenset({"", "default"})

T = TypeVar("T", AgentDef, OutputStyle)

_RANK = {"plugin": 0, "user": 1, "workspace": 2}


class DefinitionRegistry(Generic[T]):
    """Definitions of one kind by source; one effective definition per name
    (workspace > user > plugin; the first found wins a tie, with a warning)."""

    kind = "definition"
    folder = ""
    error: type[DefinitionError] = DefinitionError

    def __init__(self, events: EventBus | None = None) -> None:
        self._events = events or EventBus()
        self._found: dict[str, list[T]] = {}
        self._problems: dict[str, list[DefinitionError]] = {}
        self._winners: dict[str, T] = {}
        self._shadows: dict[str, tuple[T, ...]] = {}
        self._duplicates: list[str] = []
        self._scanned = False

    def _parse(self, text: str, file: str | None, **kw: Any) -> T:
        raise NotImplementedError

    # -- sources ------------------------------------------------------------------
    def set_source(self, name: str, items: Iterable[T], problems: Iterable[DefinitionError] = ()) -> None:
        """Replace what source ``name`` holds (a bundle: ``plugin:<name>``)."""
        before = set(self._winners)
        self._found[name] = list(items)
        self._problems[name] = list(problems)
        self._rebuild()
        self._changed(before)

    def remove_source(self, name: str) -> None:
        before = set(self._winners)
        self._found.pop(name, None)
        self._problems.pop(name, None)
        self._rebuild()
        self._changed(before)

    def read_files(
        self, root: Root, paths: Iterable[Path | Entry], *, scope: str, source: str, namespace: str | None = None
    ) -> tuple[list[T], list[DefinitionError]]:
        """Parse each file, read inside ``root`` (a bundle's contributions, a Claude folder);
        errors (a refused file among them) are returned, not raised."""
        items: list[T] = []
        problems: list[DefinitionError] = []
        for path in paths:
            try:
                items.append(
                    read_definition(
                        root, path, self._parse, self.error, scope=scope, source=source, namespace=namespace
                    )
                )
            except DefinitionError as exc:
                problems.append(exc)
        return items, problems

    def folders(self, runtime: Runtime) -> list[tuple[str, str, Path]]:
        """``(scope, source, folder)`` of the Claude folders: the user's (``HOME`` of the
        runtime's environment; none without one), then the workspace's."""
        return claude_folders(runtime, self.folder)

    def read_folders(self, runtime: Runtime) -> list[tuple[str, list[T], list[DefinitionError]]]:
        """What the Claude folders hold now, by source (reads files; changes nothing)."""
        out = []
        for scope, source, folder in self.folders(runtime):
            # the workspace's folder is read inside the workspace; the user's inside itself
            root = runtime.workspace_root if scope == "workspace" else runtime.contained(folder, label=str(folder))
            items, problems = self.read_files(root, markdown_files(root, folder), scope=scope, source=source)
            out.append((source, items, problems))
        return out

    def apply_folders(self, found: list[tuple[str, list[T], list[DefinitionError]]]) -> None:
        """Replace the folder sources with what :meth:`read_folders` found."""
        self._scanned = True
        before = set(self._winners)
        for source, items, problems in found:
            self._found[source] = items
            self._problems[source] = problems
        self._rebuild()
        self._changed(before)

    def scan(self, runtime: Runtime) -> None:
        """Read the Claude folders (again) into the registry."""
        self.apply_folders(self.read_folders(runtime))

    def ensure_scanned(self, runtime: Runtime) -> None:
        if not self._scanned:
            self.scan(runtime)

    def _changed(self, before: set[str]) -> None:
        added = tuple(sorted(set(self._winners) - before))
        removed = tuple(sorted(before - set(self._winners)))
        if added or removed:
            self._events.publish(DefinitionsChanged(self.kind, added, removed))

    def _rebuild(self) -> None:
        self._winners, self._shadows = by_precedence(self._found.values(), key=lambda d: -_RANK.get(d.scope, 0))
        self._duplicates = [
            f"{other.file}: name: {self.kind} {name!r} is defined twice in the {other.scope} "
            f"scope; {self._winners[name].file} wins"
            for name, others in self._shadows.items()
            for other in others
            if other.scope == self._winners[name].scope
        ]

    # -- lookups ---------------------------------------------------------------------
    @property
    def errors(self) -> list[DefinitionError]:
        """Files that were skipped, and why."""
        return [p for ps in self._problems.values() for p in ps]

    @property
    def warnings(self) -> list[str]:
        return [w for items in self._found.values() for d in items for w in d.warnings] + self._duplicates

    def all(self) -> list[T]:
        """The effective definitions (one per name), sorted by name."""
        return list(self._winners.values())

    def names(self) -> list[str]:
        return list(self._winners)

    def shadowed(self, name: str) -> tuple[T, ...]:
        return self._shadows.get(name, ())

    def get(self, name: str) -> T | None:
        """The definition called ``name``; a plugin's also by its own name when only one has it
        (``learning`` for ``learning-kit:learning``); names match case-insensitively when unambiguous."""
        found = self._winners.get(name)
        if found is not None:
            return found
        lowered = name.lower()
        keys: tuple[Callable[[T], bool], ...] = (
            lambda d: d.own_name == name,
            lambda d: d.name.lower() == lowered,
            lambda d: d.own_name.lower() == lowered,
        )
        for same in keys:
            hits = [d for d in self._winners.values() if same(d)]
            if len(hits) == 1:
                return hits[0]
            if hits:
                return None
        return None

    def require(self, name: str) -> T:
        found = self.get(name)
        if found is None:
            raise self.error(self.unknown(name), field="name")
        return found

    def unknown(self, name: str) -> str:
        """Why ``name`` names nothing: the close match, and the known names."""
        names = list(self._winners)
        by_own = {d.own_name.lower(): d.name for d in self._winners.values()}
        close = difflib.get_close_matches(name, names, n=1) or [
            by_own[m] for m in difflib.get_close_matches(name.lower(), list(by_own), n=1)
        ]
        hint = f"; did you mean {close[0]!r}?" if close else ""
        known = ", ".join(names) if names else "none"
        return f"no {self.kind.replace('_', ' ')} named {name!r}{hint} (known: {known})"

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self._winners)

    def __iter__(self) -> Iterator[T]:
        return iter(self.all())


class AgentRegistry(DefinitionRegistry[AgentDef]):
    """Every agent the host may run (``runtime.agents``)."""

    kind = "agent"
    folder = "agents"
    error = AgentError

    def _parse(self, text: str, file: str | None, **kw: Any) -> AgentDef:
        return parse_agent(text, file, **kw)

    def prepare(self, name: str, tools: ToolRegistry) -> AgentRun:
        """Everything to run agent ``name``: its prompt, model and the registered tools it
        may use; the tools it lists that are not registered are in ``unknown_tools``."""
        agent = self.require(name)
        ids = [s.id for s in tools.specs()]
        if agent.tools is None:
            chosen = list(ids)
            unknown: list[str] = []
        else:
            chosen, unknown = [], []
            for listed in agent.tools:
                found = claude_tool_ids(listed, ids, namespace=agent.namespace)
                if found:
                    chosen.extend(found)
                else:
                    unknown.append(listed)
        denied = {
            t for listed in agent.disallowed_tools for t in claude_tool_ids(listed, ids, namespace=agent.namespace)
        }
        kept = [t for t in dict.fromkeys(chosen) if t not in denied]
        specs = tuple(tools.get_spec(t) for t in kept)
        return AgentRun(agent, agent.prompt, agent.model, specs, tuple(unknown))


class OutputStyleRegistry(DefinitionRegistry[OutputStyle]):
    """Every output style (``runtime.output_styles``)."""

    kind = "output_style"
    folder = "output-styles"
    error = OutputStyleError

    def _parse(self, text: str, file: str | None, **kw: Any) -> OutputStyle:
        return parse_output_style(text, file, **kw)

    def selected(self, config: Config, override: str | None = None) -> OutputStyle | None:
        """The style ``override`` (a session's) or else ``[instructions] output_style`` names
        (``None``: no style, or ``default``). A name that is none raises :class:`~kairox.ConfigError`
        naming the field and the known styles."""
        if override is not None:
            name, file, field = override, None, "output_style"
        else:
            name = getattr(config.section("instructions"), "output_style", "") or ""
            file = config.source_of("instructions", "output_style")
            field = "instructions.output_style"
        if name.strip().lower() in NO_STYLE:
            return None
        style = self.get(name)
        if style is None:
            raise ConfigError(self.unknown(name), file=file, path=field)
        return style
