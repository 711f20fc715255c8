"""Agents and output styles: markdown definitions a host can use.

An **agent** (Claude Code's subagent: ``agents/*.md``, ``.claude/agents/``,
``~/.claude/agents/``) is a prompt with a name, a description saying when to use
it, the tools it may use and the model it pins. An **output style**
(``output-styles/*.md``, ``.claude/output-styles/``) is text added to the
instructions when it is selected (``[instructions] output_style``, or
``rt.session(output_style=...)``).

Both are markdown with YAML frontmatter (split by :func:`~kairox.ext.split_frontmatter`).
Each registry keeps its definitions by source: the kernel reads the Claude folders
(workspace ``.claude/<kind>/``, user ``$HOME/.claude/<kind>/``, ``HOME`` from the
runtime's environment); bundles add theirs as ``<plugin>:<name>``
(:meth:`DefinitionRegistry.set_source`). On a name clash workspace beats user;
plugin definitions are namespaced and never clash with those. Workspace folders are
workspace content as ``.kairox/skills`` is: listed and usable whether or not the
workspace is trusted (a definition is markdown and runs nothing).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from ._contained import Entry, Refused, Root
from ._events import Event, EventBus
from ._skill_model import PlacedError, SkillError, by_precedence, split_frontmatter
from .errors import ConfigError

if TYPE_CHECKING:
    from ._config import Config
    from ._runtime import Runtime
    from ._tool_registry import ToolRegistry
    from ._tools import ToolSpec

__all__ = [
    "AgentDef",
    "AgentError",
    "AgentPrepared",
    "AgentRegistry",
    "AgentRun",
    "DefinitionsChanged",
    "OutputStyle",
    "OutputStyleError",
    "OutputStyleRegistry",
    "claude_tool_ids",
    "parse_agent",
    "parse_output_style",
    "scan_definitions",
]

#: a definition file larger than this is refused (real ones are a few kilobytes)
MAX_FILE = 1 << 20
#: folder depth read below ``.claude/agents`` and ``.claude/output-styles``
MAX_DEPTH = 6
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__"})
#: what an unset style means (Claude Code's built-in "Default" is no style)
NO_STYLE = frozenset({"", "default"})
_BAD_NAME = re.compile(r"[:/\\\x00-\x1f\x7f]")
_KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(.*))?$")

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


class _DefinitionError(PlacedError):
    kind = "definition"
    bare_line = False


class AgentError(_DefinitionError):
    """An agent file cannot be read or an agent cannot be used; ``file``, ``line``, ``field`` say where."""


class OutputStyleError(_DefinitionError):
    """An output style file cannot be read; ``file``, ``line``, ``field`` say where."""


@attrs.frozen
class DefinitionsChanged(Event):
    """Agents or output styles came or went (``kind`` is ``agent`` or ``output_style``)."""

    kind: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


@attrs.frozen
class AgentPrepared(Event):
    """A session got an agent's definition to run (:meth:`kairox.Session.agent`)."""

    session_id: str
    agent: str
    model: str | None = None
    unknown_tools: tuple[str, ...] = ()


# -- the models --------------------------------------------------------------------


@attrs.frozen
class AgentDef:
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

    @property
    def name(self) -> str:
        return f"{self.namespace}:{self.own_name}" if self.namespace else self.own_name


@attrs.frozen
class OutputStyle:
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

    @property
    def name(self) -> str:
        return f"{self.namespace}:{self.own_name}" if self.namespace else self.own_name


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


# -- parsing ------------------------------------------------------------------------

E = TypeVar("E", bound=_DefinitionError)


def _plain(value: Any) -> Any:
    """YAML data as JSON-safe data (dates and other scalars become strings)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _lenient_mapping(text: str) -> dict[str, str]:
    """``key: value`` lines (indented lines continue the value): how Claude Code reads
    frontmatter that is not valid YAML (a description with ``: `` in it, ``<example>`` blocks)."""
    out: dict[str, str] = {}
    key: str | None = None
    for line in text.splitlines():
        m = _KEY_LINE.match(line)
        if m is not None:
            key = m.group(1)
            out[key] = (m.group(2) or "").strip()
        elif key is not None and line.strip():
            out[key] = f"{out[key]}\n{line.strip()}".strip()
    return {k: _unquote(v) for k, v in out.items()}


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        if value[0] == '"':
            import json

            try:
                decoded = json.loads(value)
            except ValueError:
                return value[1:-1]
            return decoded if isinstance(decoded, str) else value[1:-1]
        return value[1:-1].replace("''", "'")
    return value


def _frontmatter(text: str, file: str | None, error: type[E], warnings: list[str]) -> tuple[dict[str, Any], str]:
    from ._yaml import YamlLimitError, safe_load_bounded

    try:
        fm, body = split_frontmatter(text)
    except SkillError as exc:
        raise error(exc.message, file=file, line=exc.line) from None
    if fm is None:
        return {}, body
    import yaml

    try:
        data = safe_load_bounded(fm)
    except YamlLimitError as exc:
        raise error(f"the frontmatter is refused: {exc}", file=file, line=2) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        data = _lenient_mapping(fm)
        if not data:
            line = mark.line + 2 if mark is not None else 2
            raise error(
                f"the frontmatter is not valid YAML: {getattr(exc, 'problem', exc)}", file=file, line=line
            ) from None
        where = f" (line {mark.line + 2})" if mark is not None else ""
        warnings.append(f"{file}: the frontmatter is not valid YAML{where}; read as plain 'key: value' lines")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise error(f"the frontmatter must be a mapping of fields, got {type(data).__name__}", file=file, line=2)
    return {str(k): v for k, v in data.items()}, body


def _text(data: Mapping[str, Any], key: str, file: str | None, error: type[E]) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        raise error(
            f"expected a string, got a {'mapping' if isinstance(value, dict) else 'list'}", file=file, field=key
        )
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def _name(data: Mapping[str, Any], file: str | None, error: type[E], fallback: str, warnings: list[str]) -> str:
    name = _text(data, "name", file, error)
    if not name:
        if not fallback:
            raise error("the required field is missing", file=file, field="name")
        if "name" in data or error is AgentError:
            warnings.append(f"{file}: name: missing; using {fallback!r} (the file name)")
        name = fallback
    if _BAD_NAME.search(name) or len(name) > 128:
        raise error(
            f"{name!r} must be at most 128 characters without ':', '/', '\\' or control characters "
            "(':' is for plugins)",
            file=file,
            field="name",
        )
    return name


#: a run of commas and blanks, or a parenthesis (one character: each is read once)
_SEPARATOR_OR_PARENTHESIS = re.compile(r"[,\s]+|[()]")


def _split_tool_names(text: str) -> tuple[str, ...]:
    """``text`` cut at each run of commas and blanks whose next parenthesis is not ``)``
    (``Bash(git add, git commit)`` is one name). One pass: a run waits until the next
    parenthesis says whether it cuts. A regex lookahead for that ``)`` read the rest of
    the text again at each separator of a run (cubic on a long run of blanks)."""
    cuts: list[re.Match[str]] = []
    waiting: list[re.Match[str]] = []
    for m in _SEPARATOR_OR_PARENTHESIS.finditer(text):
        if m.group() == ")":
            waiting = []
        elif m.group() == "(":
            cuts += waiting
            waiting = []
        else:
            waiting.append(m)
    cuts += waiting
    names, last = [], 0
    for m in cuts:
        names.append(text[last : m.start()])
        last = m.end()
    names.append(text[last:])
    return tuple(n for n in names if n)


def _tool_list(value: Any, file: str | None, field: str) -> tuple[str, ...]:
    """``"Read, Grep, Glob"`` (commas or blanks) or a list of names."""
    if isinstance(value, str):
        return _split_tool_names(value.strip())
    if isinstance(value, list):
        out: list[str] = []
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise AgentError(f"expected a tool name, got {item!r}", file=file, field=f"{field}[{i}]")
            out.append(item.strip())
        return tuple(out)
    raise AgentError(
        f"expected a list of tool names or a comma-separated string, got {type(value).__name__}",
        file=file,
        field=field,
    )


def _stem(file: str | None) -> str:
    return Path(file).stem if file else ""


_AGENT_KNOWN = frozenset({"name", "description", "tools", "disallowedTools", "model"})
_STYLE_KNOWN = frozenset({"name", "description", "keep-coding-instructions"})


def parse_agent(
    text: str,
    file: str | None = None,
    *,
    scope: str = "workspace",
    source: str = "",
    namespace: str | None = None,
) -> AgentDef:
    """One agent file (its whole text). Raises :class:`AgentError` naming the file and field:
    the frontmatter must be a mapping with a ``description``; ``name`` defaults to the file
    name (with a warning); ``tools`` / ``disallowedTools`` are a list or a comma-separated
    string; ``model`` a string (``inherit`` is the host's model)."""
    warnings: list[str] = []
    data, body = _frontmatter(text, file, AgentError, warnings)
    if not data:
        raise AgentError(
            "no frontmatter: an agent file starts with a --- block giving its name and description", file=file, line=1
        )
    name = _name(data, file, AgentError, _stem(file), warnings)
    description = _text(data, "description", file, AgentError)
    if not description:
        raise AgentError(
            "the required field is missing or empty (when to use the agent)", file=file, field="description"
        )
    tools = None if data.get("tools") is None else _tool_list(data["tools"], file, "tools")
    disallowed = (
        () if data.get("disallowedTools") is None else _tool_list(data["disallowedTools"], file, "disallowedTools")
    )
    model = _text(data, "model", file, AgentError) or None
    if model is not None and model.lower() == "inherit":
        model = None
    return AgentDef(
        own_name=name,
        description=description,
        prompt=body.strip(),
        scope=scope,
        source=source,
        file=file,
        namespace=namespace,
        tools=tools,
        disallowed_tools=disallowed,
        model=model,
        extra={k: _plain(v) for k, v in data.items() if k not in _AGENT_KNOWN},
        warnings=tuple(warnings),
    )


_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0", ""})


def parse_output_style(
    text: str,
    file: str | None = None,
    *,
    scope: str = "workspace",
    source: str = "",
    namespace: str | None = None,
) -> OutputStyle:
    """One output style file (its whole text). The frontmatter is optional: ``name``
    (default: the file name), ``description``, ``keep-coding-instructions`` (a boolean).
    Raises :class:`OutputStyleError` naming the file and field."""
    warnings: list[str] = []
    data, body = _frontmatter(text, file, OutputStyleError, warnings)
    name = _name(data, file, OutputStyleError, _stem(file), warnings)
    description = _text(data, "description", file, OutputStyleError) or ""
    keep = data.get("keep-coding-instructions", False)
    if isinstance(keep, str) and keep.strip().lower() in _TRUE | _FALSE:
        keep = keep.strip().lower() in _TRUE
    if not isinstance(keep, bool):
        raise OutputStyleError(f"expected true or false, got {keep!r}", file=file, field="keep-coding-instructions")
    text_ = body.strip()
    if not text_:
        raise OutputStyleError("the style has no text (the body after the frontmatter is empty)", file=file)
    return OutputStyle(
        own_name=name,
        description=description,
        text=text_,
        scope=scope,
        source=source,
        file=file,
        namespace=namespace,
        keep_coding_instructions=keep,
        extra={k: _plain(v) for k, v in data.items() if k not in _STYLE_KNOWN},
        warnings=tuple(warnings),
    )


def read_definition(
    root: Root, path: Path | Entry, parse: Callable[..., Any], error: type[_DefinitionError], **kw: Any
) -> Any:
    """``parse`` over the text of ``path``, read inside ``root``; a file that is refused
    (a link leading outside, a device), unreadable or too large is ``error``."""
    file = str(path.path if isinstance(path, Entry) else path)
    try:
        raw = root.read_bytes(path, max_bytes=MAX_FILE)
    except Refused as exc:
        raise error(exc.reason, file=file) from None
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", file=file) from None
    return parse(raw.decode("utf-8", errors="replace"), file, **kw)


def markdown_files(root: Root, folder: Path) -> Iterator[Entry]:
    """The ``*.md`` files under ``folder`` inside ``root`` (sorted, to depth :data:`MAX_DEPTH`,
    hidden folders skipped), with the refused ones (a link leading outside) among them."""
    try:
        kind = root.kind(folder)
    except Refused as exc:
        yield Entry(folder, None, "missing", 0, exc.reason)
        return
    if kind == "file" and folder.suffix == ".md":
        yield Entry(folder, root.locate(folder), "file", 0)
    if kind != "dir":
        return
    for entry in root.walk(folder, max_depth=MAX_DEPTH, skip=_skipped_folder):
        if entry.name.startswith("."):
            continue
        if (entry.name.endswith(".md") and entry.kind != "dir") or (entry.kind == "dir" and entry.refused):
            yield entry


def _skipped_folder(name: str) -> bool:
    return name.startswith(".") or name in _SKIP_DIRS


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


# -- the registries -------------------------------------------------------------------

T = TypeVar("T", AgentDef, OutputStyle)

_RANK = {"plugin": 0, "user": 1, "workspace": 2}


class DefinitionRegistry(Generic[T]):
    """Definitions of one kind by source; one effective definition per name
    (workspace > user > plugin; the first found wins a tie, with a warning)."""

    kind = "definition"
    folder = ""
    error: type[_DefinitionError] = _DefinitionError

    def __init__(self, events: EventBus | None = None) -> None:
        self._events = events or EventBus()
        self._found: dict[str, list[T]] = {}
        self._problems: dict[str, list[_DefinitionError]] = {}
        self._winners: dict[str, T] = {}
        self._shadows: dict[str, tuple[T, ...]] = {}
        self._duplicates: list[str] = []
        self._scanned = False

    def _parse(self, text: str, file: str | None, **kw: Any) -> T:
        raise NotImplementedError

    # -- sources ------------------------------------------------------------------
    def set_source(self, name: str, items: Iterable[T], problems: Iterable[_DefinitionError] = ()) -> None:
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
    ) -> tuple[list[T], list[_DefinitionError]]:
        """Parse each file, read inside ``root`` (a bundle's contributions, a Claude folder);
        errors (a refused file among them) are returned, not raised."""
        items: list[T] = []
        problems: list[_DefinitionError] = []
        for path in paths:
            try:
                items.append(
                    read_definition(
                        root, path, self._parse, self.error, scope=scope, source=source, namespace=namespace
                    )
                )
            except _DefinitionError as exc:
                problems.append(exc)
        return items, problems

    def folders(self, runtime: Runtime) -> list[tuple[str, str, Path]]:
        """``(scope, source, folder)`` of the Claude folders: the user's (``HOME`` of the
        runtime's environment; none without one), then the workspace's."""
        out: list[tuple[str, str, Path]] = []
        home = runtime.env.get("HOME") or runtime.env.get("USERPROFILE")
        if home:
            out.append(("user", "claude-user", Path(home) / ".claude" / self.folder))
        out.append(("workspace", "claude-workspace", runtime.workspace / ".claude" / self.folder))
        return out

    def read_folders(self, runtime: Runtime) -> list[tuple[str, list[T], list[_DefinitionError]]]:
        """What the Claude folders hold now, by source (reads files; changes nothing)."""
        out = []
        for scope, source, folder in self.folders(runtime):
            # the workspace's folder is read inside the workspace; the user's inside itself
            root = runtime.workspace_root if scope == "workspace" else runtime.contained(folder, label=str(folder))
            items, problems = self.read_files(root, markdown_files(root, folder), scope=scope, source=source)
            out.append((source, items, problems))
        return out

    def apply_folders(self, found: list[tuple[str, list[T], list[_DefinitionError]]]) -> None:
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
    def errors(self) -> list[_DefinitionError]:
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


async def scan_definitions(runtime: Runtime) -> None:
    """Read the Claude agent and output-style folders (in a worker thread), then check the
    configured output style (a name that is none is a config error in ``runtime.config.errors``)."""
    import anyio

    agents = await anyio.to_thread.run_sync(runtime.agents.read_folders, runtime)
    runtime.agents.apply_folders(agents)
    styles = await anyio.to_thread.run_sync(runtime.output_styles.read_folders, runtime)
    runtime.output_styles.apply_folders(styles)
    try:
        runtime.output_styles.selected(runtime.config)
    except ConfigError as exc:
        runtime.config.errors.append(exc)
