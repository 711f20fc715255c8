"""Skills: the data model (what a skill is; the registry is in ``_skills``).

A skill is a markdown file whose YAML frontmatter is a :class:`SkillFrontmatter`
and whose body is the prompt; a source turns one into a :class:`SkillDef`.

Template syntax: ``{{ name }}`` in the body is replaced by the value of the
declared argument ``name`` (``\\{{ name }}`` writes a literal ``{{ name }}``);
a placeholder naming no declared argument is left as it is. A source may give a skill
its format's own syntax (:attr:`SkillDef.template`; kairox-skills gives Claude commands
and skills ``$ARGUMENTS``).
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Callable, Container, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import attrs

from ._contained import Refused, Root
from .errors import KairoxError

__all__ = [
    "ARGUMENT_TYPES",
    "PLACEHOLDER",
    "RenderedSkill",
    "SkillArgument",
    "SkillDef",
    "SkillError",
    "SkillFrontmatter",
    "SkillLoader",
    "SkillMatch",
    "SkillScope",
    "SkillWarning",
    "Template",
    "format_value",
    "render_template",
    "split_frontmatter",
]

#: the types a declared argument may have
ARGUMENT_TYPES = ("string", "integer", "number", "boolean")


class SkillScope(str, enum.Enum):
    """Where a skill applies. On a name clash session beats workspace beats user."""

    PLUGIN = "plugin"
    USER = "user"
    WORKSPACE = "workspace"
    SESSION = "session"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {SkillScope.PLUGIN: 0, SkillScope.USER: 1, SkillScope.WORKSPACE: 2, SkillScope.SESSION: 3}


def _placed(message: str, file: str | None, line: int | None, field: str) -> str:
    """``message`` after where it is: ``file:line: field: message``, each part when known."""
    place = f"{file}:{line}" if file and line else (file or (f"line {line}" if line else ""))
    where = ": ".join(p for p in (place, field) if p)
    return f"{where}: {message}" if where else message


class PlacedError(KairoxError):
    """An error of a file that says where: ``file``, ``line`` and ``field`` (the base of
    :class:`SkillError` and of the agent and output-style errors)."""

    #: whether a line is shown without a file (``line 3: ...``)
    bare_line = True

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None, field: str = "") -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        super().__init__(self.render())

    def render(self) -> str:
        return _placed(self.message, self.file, self.line if self.file or self.bare_line else None, self.field)


class SkillError(PlacedError):
    """A skill could not be read or used. ``file``, ``line`` and ``field`` say where."""


@attrs.frozen
class SkillWarning:
    """Something odd about a skill that was loaded anyway (leniency)."""

    message: str
    file: str | None = None
    line: int | None = None
    field: str = ""

    def __str__(self) -> str:
        return _placed(self.message, self.file, self.line, self.field)


_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})
_INT = re.compile(r"[-+]?[0-9]+")


@attrs.frozen
class SkillArgument:
    """A declared input of a skill (a UI renders these as a form)."""

    name: str
    type: str = "string"
    description: str = ""
    required: bool = False
    default: Any = None
    choices: tuple[Any, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """This argument as JSON-ready data (``kairox skills show --json``, the dashboard's form)."""
        return {**attrs.asdict(self, recurse=False), "choices": list(self.choices)}

    def coerce(self, value: Any, *, skill: str = "", file: str | None = None) -> Any:
        """``value`` as this argument's type (strings from a command line are converted)."""
        field = f"arguments.{self.name}"

        def bad(expected: str) -> SkillError:
            who = f"skill {skill}: " if skill else ""
            return SkillError(f"{who}argument {self.name!r} expects {expected}, got {value!r}", file=file, field=field)

        out: Any
        if self.type == "integer":
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                raise bad("an integer")
            if isinstance(value, str):
                if not _INT.fullmatch(value.strip()):
                    raise bad("an integer")
                value = int(value.strip())
            out = value
        elif self.type == "number":
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise bad("a number")
            if isinstance(value, str):
                try:
                    out = float(value.strip())
                except ValueError:
                    raise bad("a number") from None
            else:
                out = value
        elif self.type == "boolean":
            if isinstance(value, bool):
                out = value
            elif isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
                out = value.strip().lower() in _TRUE
            else:
                raise bad("a boolean (true or false)")
        else:
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise bad("a string")
            out = value if isinstance(value, str) else str(value)
        if self.choices and out not in self.choices:
            raise bad("one of " + ", ".join(repr(c) for c in self.choices))
        return out


@attrs.frozen
class SkillFrontmatter:
    """The fields of a skill file's frontmatter (see FORMATS.md).

    ``allowed_tools``, ``license``, ``compatibility`` and ``metadata`` come from
    the Agent Skills format, ``disable_model_invocation`` from Claude Code's
    (``disable-model-invocation``); ``extra`` keeps every other key so a file is
    written back as it was read.
    """

    name: str
    description: str
    scope: SkillScope | None = None
    keywords: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    model: str | None = None
    arguments: tuple[SkillArgument, ...] = ()
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    allowed_tools: tuple[str, ...] = ()
    extra: Mapping[str, Any] = attrs.field(factory=dict)
    #: ``disable-model-invocation: true`` (Agent Skills / Claude Code): listed and
    #: runnable by the user, never offered to the model nor matched for it
    disable_model_invocation: bool = False

    def argument(self, name: str) -> SkillArgument | None:
        return next((a for a in self.arguments if a.name == name), None)


_FENCE = re.compile(r"^---[ \t]*\r?(?:\n|\Z)", re.M)


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """``(frontmatter, body)``; ``frontmatter`` is ``None`` when the text has none.

    The frontmatter starts with a ``---`` line (after an optional BOM) and
    ends at the next ``---`` line; the body is everything after that line.
    Raises :class:`SkillError` when the closing line is missing.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    first, sep, rest = text.partition("\n")
    if first.rstrip(" \t\r") != "---" or not sep:
        return None, text
    m = _FENCE.search(rest)
    if m is None:
        raise SkillError("the frontmatter opened on line 1 is never closed (no --- line)", line=1)
    return rest[: m.start()], rest[m.end() :]


#: a ``{{ name }}`` placeholder: group 1 the ``\\`` that makes it literal, group 2 the name
PLACEHOLDER = re.compile(r"(\\?)\{\{[ \t]*([A-Za-z_][A-Za-z0-9_-]*)[ \t]*\}\}")

#: what renders a skill's body with its arguments: ``template(body, values) -> text``
Template = Callable[[str, Mapping[str, Any]], str]


def format_value(value: Any) -> str:
    """An argument's value as a template writes it: ``None`` is empty, booleans are
    ``true``/``false``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render_template(body: str, values: Mapping[str, Any]) -> str:
    """Replace ``{{ name }}`` for each name in ``values``; ``\\{{ name }}`` stays literal.
    Each placeholder is replaced once: a value is never read for placeholders again."""

    def repl(m: re.Match[str]) -> str:
        if m.group(2) not in values:
            return m.group(0)
        return m.group(0)[1:] if m.group(1) else format_value(values[m.group(2)])

    return PLACEHOLDER.sub(repl, body)


def _fspath(value: str | os.PathLike[str] | None) -> str | None:
    return None if value is None else os.fspath(value)


@runtime_checkable
class SkillLoader(Protocol):
    """Fetches the body of a skill that does not live on this machine (an MCP server's
    ``SKILL.md``) when it is activated, never before: :meth:`kairox.Session.activate_skill`
    awaits :meth:`load`; :meth:`SkillDef.body` refuses such a skill."""

    async def load(self, skill: SkillDef) -> str:
        """The skill's body, verified; a :class:`SkillError` says why not."""
        ...


#: folders of a skill that are never its resources
_NOT_RESOURCES = frozenset({".git", "node_modules", "__pycache__"})


@attrs.frozen
class SkillDef:
    """One skill found by a source. The body is read from ``path`` when used
    (``body_text`` holds it for skills that live in memory).

    ``path`` may be given as a string or a :class:`~pathlib.Path`; it is kept
    as a string (``file``) because listing makes thousands of these.

    ``contained`` is the root its files are read inside (:class:`kairox.files.Root`: the
    workspace, the user's skills folder, a bundle), given by the source that found it, so
    that reading the body or listing the resources later is as contained as the scan was.
    Without one, the file is read as the user's own: wherever its links lead, but a
    regular file within the size cap.
    """

    frontmatter: SkillFrontmatter
    scope: SkillScope
    source: str = ""
    file: str | None = attrs.field(default=None, alias="path", converter=_fspath)
    namespace: str | None = None
    body_text: str | None = attrs.field(default=None, repr=False)
    warnings: tuple[SkillWarning, ...] = ()
    #: the tool whose folder it was found in (``"claude"``, ``"codex"``, ``"agents"``);
    #: ``None`` for kairox's own folders, plugins and sessions. On a name clash in one
    #: scope kairox's own skill wins over an imported one.
    origin: str | None = None
    contained: Root | None = attrs.field(default=None, eq=False, repr=False)
    #: fetches the body when the skill is activated (a skill served by an MCP server)
    loader: SkillLoader | None = attrs.field(default=None, repr=False)
    #: renders the body with the arguments in the syntax of the skill's format;
    #: ``None``: :func:`render_template` (``{{ name }}``)
    template: Template | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def path(self) -> Path | None:
        """The skill file (``SKILL.md`` for a folder skill), ``None`` for in-memory skills."""
        return Path(self.file) if self.file is not None else None

    @classmethod
    def create(
        cls, name: str, description: str, body: str = "", *, scope: SkillScope = SkillScope.SESSION, **fields: Any
    ) -> SkillDef:
        """A skill made in code (a session skill, a test)."""
        return cls(SkillFrontmatter(name=name, description=description, **fields), scope, body_text=body)

    @property
    def name(self) -> str:
        """The registry name: ``<namespace>:<name>`` for plugin skills."""
        fm_name = self.frontmatter.name
        return f"{self.namespace}:{fm_name}" if self.namespace else fm_name

    @property
    def description(self) -> str:
        return self.frontmatter.description

    @property
    def model_invocable(self) -> bool:
        """``False`` for ``disable-model-invocation: true``: the user runs it; the model
        is never offered it (not in the skills index, never matched)."""
        return not self.frontmatter.disable_model_invocation

    @property
    def keywords(self) -> tuple[str, ...]:
        return self.frontmatter.keywords

    @property
    def tools(self) -> tuple[str, ...]:
        return self.frontmatter.tools

    @property
    def model(self) -> str | None:
        return self.frontmatter.model

    @property
    def arguments(self) -> tuple[SkillArgument, ...]:
        return self.frontmatter.arguments

    @property
    def kind(self) -> str:
        """``"folder"`` (Agent Skills ``<name>/SKILL.md``), ``"file"``, ``"memory"`` or
        ``"remote"`` (fetched by its :attr:`loader` when activated)."""
        if self.file is None:
            return "remote" if self.loader is not None and self.body_text is None else "memory"
        return "folder" if os.path.basename(self.file) == "SKILL.md" else "file"

    @property
    def root(self) -> Path | None:
        """The skill's folder (where ``scripts/``, ``references/``, ``assets/`` live)."""
        return Path(self.file).parent if self.file is not None and self.kind == "folder" else None

    def _reader(self, folder: str | os.PathLike[str]) -> Root:
        """The root this skill's files are read inside: :attr:`contained`, else ``folder``."""
        return self.contained if self.contained is not None else Root(folder, label="its folder")

    def resources(self) -> dict[str, list[str]]:
        """Files of a folder skill other than ``SKILL.md``, grouped by top-level
        folder (``scripts``, ``references``, ``assets``, ...; ``"."`` for loose files).
        Only files it may read are listed: a link leading outside its root is not."""
        root = self.root
        out: dict[str, list[str]] = {}
        if root is None:
            return out
        try:
            entries = list(self._reader(root).walk(root, skip=_NOT_RESOURCES))
        except Refused:
            return out
        found = [
            entry.path.relative_to(root).as_posix()
            for entry in entries
            if entry.kind == "file" and not entry.refused and entry.path != root / "SKILL.md"
        ]
        for rel in sorted(found, key=lambda rel: rel.split("/")):  # as paths sort: part by part
            group = rel.split("/", 1)[0] if "/" in rel else "."
            out.setdefault(group, []).append(rel)
        return out

    def body(self) -> str:
        """The prompt (the text after the frontmatter), read now for file skills
        (inside :attr:`contained`: a file now leading outside it is not read)."""
        if self.body_text is not None:
            return self.body_text
        if self.file is None:
            if self.loader is not None:
                raise SkillError(
                    f"skill {self.name}: its body is fetched when it is activated (session.activate_skill)"
                )
            return ""
        try:
            reader = self._reader(os.path.dirname(os.path.realpath(self.file)))
            text = reader.read_text(self.file, errors="replace")
        except Refused as exc:
            raise SkillError(f"cannot read the skill: {exc.reason}", file=self.file) from None
        except OSError as exc:
            raise SkillError(f"cannot read the skill: {exc.strerror or exc}", file=self.file) from None
        try:
            return split_frontmatter(text)[1]
        except SkillError as exc:
            raise SkillError(exc.message, file=self.file, line=exc.line) from None

    def body_json(self) -> dict[str, str | None]:
        """The body as JSON-ready data (``kairox skills show --json``, the dashboard):
        ``{"body": text}``, or ``{"body": None, "body_error": why}`` when it cannot be read."""
        try:
            return {"body": self.body()}
        except SkillError as exc:
            return {"body": None, "body_error": str(exc)}

    def missing_tools(self, tools: Container[str]) -> list[str]:
        """The listed tools that ``tools`` (a ToolRegistry, a set of names) does not have."""
        return [t for t in self.tools if t not in tools]

    def bind(self, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Validate ``arguments`` against the declared ones: types, defaults, required."""
        file = self.file
        given = dict(arguments or {})
        declared = {a.name: a for a in self.arguments}
        unknown = [k for k in given if k not in declared]
        if unknown:
            takes = f"it declares {', '.join(declared)}" if declared else "it declares none"
            raise SkillError(
                f"skill {self.name}: unknown argument(s) {', '.join(map(repr, unknown))}; {takes}",
                file=file,
                field="arguments",
            )
        values: dict[str, Any] = {}
        missing: list[SkillArgument] = []
        for arg in self.arguments:
            if arg.name in given and given[arg.name] is not None:
                values[arg.name] = arg.coerce(given[arg.name], skill=self.name, file=file)
            elif arg.default is not None:
                values[arg.name] = arg.default
            elif arg.required:
                missing.append(arg)
            else:
                values[arg.name] = None
        if missing:
            what = "; ".join(f"{a.name} ({a.type}{': ' + a.description if a.description else ''})" for a in missing)
            raise SkillError(
                f"skill {self.name}: missing required argument(s): {what}",
                file=file,
                field=f"arguments.{missing[0].name}",
            )
        return values

    def fill(self, body: str, values: Mapping[str, Any]) -> str:
        """``body`` with ``values`` (bound arguments) written in, in this skill's :attr:`template`."""
        return (self.template or render_template)(body, values)

    def render(self, arguments: Mapping[str, Any] | None = None) -> str:
        """The body with the (validated) arguments rendered into it."""
        return self.fill(self.body(), self.bind(arguments))


@attrs.frozen
class SkillMatch:
    """A skill ranked for a prompt: its score and why."""

    skill: SkillDef
    score: float
    reasons: tuple[str, ...]


@attrs.frozen
class RenderedSkill:
    """A skill ready to run: the prompt text, its arguments, tools and pinned model."""

    skill: SkillDef
    text: str
    arguments: Mapping[str, Any]
    model: str | None
    tools: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.skill.name


# -- one name, several definitions (skills, agents and output styles) -------------------
class _Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=_Named)


def by_precedence(
    found: Iterable[Iterable[N]], key: Callable[[N], Any]
) -> tuple[dict[str, N], dict[str, tuple[N, ...]]]:
    """Group the definitions of every source by ``name``; per name the lowest ``key`` wins
    (stable: the first found wins a tie). Returns the winners sorted by name, and for each
    name defined more than once the definitions it shadows, best first."""
    candidates: dict[str, list[N]] = {}
    for items in found:
        for item in items:
            candidates.setdefault(item.name, []).append(item)
    winners: dict[str, N] = {}
    shadows: dict[str, tuple[N, ...]] = {}
    for name, defs in candidates.items():
        ordered = sorted(defs, key=key)
        winners[name] = ordered[0]
        if len(ordered) > 1:
            shadows[name] = tuple(ordered[1:])
    return dict(sorted(winners.items())), shadows
