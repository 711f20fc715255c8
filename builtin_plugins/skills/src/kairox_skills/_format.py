"""The skill file format: frontmatter reading, lenient YAML, structuring, dumping.

Two shapes share it: a kairox skill file (``*.md``) and an Agent Skills
folder (``<name>/SKILL.md``). Leniency follows what real skills need: an
over-long description, a name that does not match its folder, unquoted
colons, odd field types load with a :class:`~kairox.SkillWarning`; only YAML
that cannot be parsed and a missing description make a
:class:`~kairox.SkillError` (file, line, field).
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from kairox._skills import (
    ARGUMENT_TYPES,
    SkillArgument,
    SkillDef,
    SkillError,
    SkillFrontmatter,
    SkillScope,
    SkillWarning,
    split_frontmatter,
)

from . import _simpleyaml

__all__ = [
    "MAX_FRONTMATTER",
    "dump_skill",
    "frontmatter_from_mapping",
    "frontmatter_to_mapping",
    "load_yaml",
    "parse_frontmatter",
    "parse_skill",
    "read_frontmatter",
]

#: a frontmatter larger than this is an error (nobody writes one; a runaway file might)
MAX_FRONTMATTER = 1 << 20
DESCRIPTION_LIMIT = 1024
COMPATIBILITY_LIMIT = 500
KNOWN_KEYS = (
    "name",
    "description",
    "scope",
    "keywords",
    "tools",
    "model",
    "arguments",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
)
ARGUMENT_KEYS = ("type", "description", "required", "default", "choices")

_AGENT_NAME = re.compile(r"[a-z0-9](?:[a-z0-9]|-(?!-))*")
_ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_BAD_NAME_CHARS = re.compile(r"[:/\\\x00-\x1f\x7f]")
_CLOSE = re.compile(rb"^---[ \t]*\r?(?:\n|\Z)", re.M)
_TOP_KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)[ \t]*:", re.M)
_SIMPLE_LINE = re.compile(r"^([ ]*)([A-Za-z0-9_][A-Za-z0-9_-]*):[ \t]+(\S.*?)[ \t]*$")
_BLOCK_HEADER = re.compile(r"[|>][-+0-9]*")
_NAME_ITEM = re.compile(r"[^\s,()]+(?:\([^)]*\))?|\([^)]*\)")

try:
    _Loader: Any = yaml.CSafeLoader
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    _Loader = yaml.SafeLoader
    _Dumper = yaml.SafeDumper


# -- reading the frontmatter block -----------------------------------------------------


def read_frontmatter(path: str | Path, chunk: int = 8192) -> tuple[str, list[SkillWarning]] | None:
    """The frontmatter text of a file, read only up to its closing ``---``.

    ``None`` when the file has no frontmatter; :class:`SkillError` when it is
    not closed or too large. The text's first line is line 2 of the file.
    """
    file = str(path)
    with open(path, "rb") as fh:
        buf = fh.read(chunk)
        if buf.startswith(b"\xef\xbb\xbf"):
            buf = buf[3:]
        nl = buf.find(b"\n")
        while nl < 0 and len(buf) < MAX_FRONTMATTER:
            more = fh.read(chunk)
            if not more:
                break
            buf += more
            nl = buf.find(b"\n")
        if nl < 0 or buf[:nl].rstrip(b" \t\r") != b"---":
            return None
        start = nl + 1
        pos = start
        eof = False
        while True:
            m = _CLOSE.search(buf, pos)
            if m is not None and (m.group(0).endswith(b"\n") or eof):
                raw = buf[start : m.start()]
                break
            if eof or len(buf) > MAX_FRONTMATTER:
                problem = "is never closed (no --- line)" if eof else f"is larger than {MAX_FRONTMATTER} bytes"
                raise SkillError(f"the frontmatter opened on line 1 {problem}", file=file, line=1)
            # search again from the last line start of the current buffer (a fence may straddle chunks)
            pos = max(start, buf.rfind(b"\n", 0, len(buf) - 1) + 1)
            more = fh.read(chunk)
            eof = not more
            buf += more
    try:
        return raw.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 2
        warning = SkillWarning("not valid UTF-8; undecodable bytes were replaced", file=file, line=line)
        return raw.decode("utf-8", errors="replace"), [warning]


# -- YAML ---------------------------------------------------------------------------------


def _key_lines(text: str, first_line: int) -> dict[str, int]:
    lines: dict[str, int] = {}
    for m in _TOP_KEY.finditer(text):
        lines.setdefault(m.group(1), text.count("\n", 0, m.start()) + first_line)
    return lines


def _key_at(text: str, line_index: int) -> str:
    """The top-level key whose value holds 0-based line ``line_index`` of ``text``."""
    lines = text.split("\n")
    for i in range(min(line_index, len(lines) - 1), -1, -1):
        m = _TOP_KEY.match(lines[i])
        if m:
            return m.group(1)
    return ""


def _quote_bad_values(text: str) -> tuple[str, list[int]]:
    """Quote the value of each ``key: value`` line that is not valid YAML on its own."""
    out: list[str] = []
    fixed: list[int] = []
    for i, line in enumerate(text.split("\n")):
        m = _SIMPLE_LINE.match(line)
        value = m.group(3) if m else ""
        if m and value[0] not in "\"'[{" and not _BLOCK_HEADER.fullmatch(value):
            try:
                ok = isinstance(yaml.load(f"k: {value}", Loader=_Loader), dict)
            except Exception:
                ok = False
            if not ok:
                escaped = value.replace("\\", "\\\\").replace('"', '\\"')
                line = f'{m.group(1)}{m.group(2)}: "{escaped}"'
                fixed.append(i)
        out.append(line)
    return "\n".join(out), fixed


def _yaml_problem(exc: BaseException, first_line: int) -> tuple[str, int | None, int | None]:
    """``(message, 0-based problem line, 0-based line of what was being parsed)``."""
    problem_mark = getattr(exc, "problem_mark", None)
    context_mark = getattr(exc, "context_mark", None)
    problem = str(getattr(exc, "problem", None) or str(exc).split("\n")[0] or type(exc).__name__)
    context = getattr(exc, "context", None)
    if context and context_mark is not None:
        problem = f"{context} (line {context_mark.line + first_line}): {problem}"
    mark = problem_mark or context_mark
    line = int(mark.line) if mark is not None else None
    ctx = int(context_mark.line) if context_mark is not None else line
    return problem, line, ctx


def load_yaml(text: str, *, file: str | None = None, first_line: int = 2) -> tuple[Any, list[SkillWarning]]:
    """Parse frontmatter YAML: the fast subset, then PyYAML, then PyYAML after
    quoting values that are not valid on their own (unquoted colons)."""
    try:
        return _simpleyaml.load(text), []
    except _simpleyaml.Unsupported:
        pass
    try:
        return yaml.load(text, Loader=_Loader), []
    except Exception as exc:  # any parser failure becomes a SkillError below
        problem, index, context = _yaml_problem(exc, first_line)
    fixed_text, fixed = _quote_bad_values(text)
    if fixed:
        try:
            data = yaml.load(fixed_text, Loader=_Loader)
        except Exception:
            pass
        else:
            lines = ", ".join(str(i + first_line) for i in fixed)
            fields = ", ".join(dict.fromkeys(_key_at(text, i) for i in fixed))
            warning = SkillWarning(
                f"frontmatter is not valid YAML ({problem}); read it by quoting the value on line(s) {lines}",
                file=file,
                line=fixed[0] + first_line,
                field=fields,
            )
            return data, [warning]
    line = index + first_line if index is not None else first_line - 1
    field = _key_at(text, context) if context is not None else ""
    raise SkillError(f"frontmatter is not valid YAML: {problem}", file=file, line=line, field=field)


# -- structuring --------------------------------------------------------------------------


def _plain_data(value: Any) -> Any:
    """A JSON-compatible copy (dates as ISO strings, sets as lists, bytes as base64)."""
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _plain_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_data(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain_data(v) for v in value), key=repr)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."


def _top(field: str) -> str:
    return re.split(r"[.\[]", field, maxsplit=1)[0]


def _split_names(value: str) -> list[str]:
    """``"Bash(git log:*) Read, Write"`` -> ``["Bash(git log:*)", "Read", "Write"]``."""
    return _NAME_ITEM.findall(value)


class _Builder:
    def __init__(self, file: str | None, line_of: Callable[[str], int | None]) -> None:
        self.file = file
        self.line_of = line_of
        self.warnings: list[SkillWarning] = []

    def warn(self, field: str, message: str) -> None:
        self.warnings.append(SkillWarning(message, file=self.file, line=self.line_of(_top(field)), field=field))

    def error(self, field: str, message: str) -> SkillError:
        return SkillError(message, file=self.file, line=self.line_of(_top(field)) or 1, field=field)

    def text(self, field: str, value: Any) -> str | None:
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, (bool, int, float, dt.date)):
            self.warn(field, f"expected a string, got {_describe(value)}; read as text")
            return str(_plain_data(value))
        self.warn(field, f"expected a string, got {_describe(value)}; ignored")
        return None

    def strings(self, field: str, value: Any, *, names: bool) -> tuple[str, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            items = _split_names(value) if names else value.split(",")
        elif isinstance(value, list):
            items = []
            for i, item in enumerate(value):
                if isinstance(item, (dict, list)) or item is None:
                    self.warn(f"{field}[{i}]", f"expected a string, got {_describe(item)}; ignored")
                else:
                    items.append(item if isinstance(item, str) else str(_plain_data(item)))
        else:
            self.warn(field, f"expected a list of strings, got {_describe(value)}; ignored")
            return ()
        return tuple(dict.fromkeys(s.strip() for s in items if s.strip()))

    def argument(self, name: str, spec: Any) -> SkillArgument | None:
        field = f"arguments.{name}"
        if not _ARG_NAME.fullmatch(name):
            self.warn(field, "an argument name is letters, digits, '_' and '-' (usable as {{ name }}); ignored")
            return None
        if spec is None:
            spec = {}
        elif isinstance(spec, str):
            spec = {"description": spec}
        elif not isinstance(spec, dict):
            self.warn(field, f"expected a mapping or a description, got {_describe(spec)}; read as a string argument")
            spec = {}
        for key in spec:
            if key not in ARGUMENT_KEYS and key != "enum":
                self.warn(f"{field}.{key}", f"unknown key; valid keys: {', '.join(ARGUMENT_KEYS)}")
        kind = spec.get("type", "string")
        if kind not in ARGUMENT_TYPES:
            self.warn(f"{field}.type", f"unknown type {_describe(kind)}; expected one of {', '.join(ARGUMENT_TYPES)}")
            kind = "string"
        required = spec.get("required", False)
        if not isinstance(required, bool):
            self.warn(f"{field}.required", f"expected true or false, got {_describe(required)}; read as false")
            required = False
        probe = SkillArgument(name=name, type=kind)
        choices: list[Any] = []
        raw_choices = spec.get("choices", spec.get("enum"))
        if raw_choices is not None and not isinstance(raw_choices, list):
            self.warn(f"{field}.choices", f"expected a list, got {_describe(raw_choices)}; ignored")
        for i, choice in enumerate(raw_choices if isinstance(raw_choices, list) else []):
            try:
                choices.append(probe.coerce(choice))
            except SkillError:
                self.warn(f"{field}.choices[{i}]", f"{_describe(choice)} is not {kind}; ignored")
        default = spec.get("default")
        if default is not None:
            try:
                default = _coerce_default(probe, default, tuple(choices))
            except SkillError:
                self.warn(f"{field}.default", f"{_describe(default)} is not a valid {kind}; ignored")
                default = None
        return SkillArgument(
            name=name,
            type=kind,
            description=self.text(f"{field}.description", spec.get("description")) or "",
            required=required,
            default=default,
            choices=tuple(dict.fromkeys(choices)),
        )

    def arguments(self, value: Any) -> tuple[SkillArgument, ...]:
        if value is None:
            return ()
        specs: list[tuple[str, Any]] = []
        if isinstance(value, dict):
            specs = [(str(k), v) for k, v in value.items()]
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict) and isinstance(item.get("name"), str):
                    specs.append((item["name"], {k: v for k, v in item.items() if k != "name"}))
                elif isinstance(item, str):
                    specs.append((item, None))
                else:
                    self.warn(f"arguments[{i}]", "expected a mapping with a name; ignored")
        else:
            self.warn("arguments", f"expected a mapping of argument names, got {_describe(value)}; ignored")
        out: dict[str, SkillArgument] = {}
        for name, spec in specs:
            arg = self.argument(name, spec)
            if arg is not None:
                out[arg.name] = arg
        return tuple(out.values())


def _coerce_default(arg: SkillArgument, value: Any, choices: tuple[Any, ...]) -> Any:
    """Coerce a default: the type must match and, with choices, be one of them."""
    out = arg.coerce(value)
    if choices and out not in choices:
        raise SkillError("not one of the choices")
    return out


def frontmatter_from_mapping(
    data: Any,
    *,
    file: str | None = None,
    folder: str | None = None,
    fallback_name: str | None = None,
    line_of: Callable[[str], int | None] | None = None,
) -> tuple[SkillFrontmatter, list[SkillWarning]]:
    """Structure parsed frontmatter leniently.

    ``folder`` is the folder name of an Agent Skills ``SKILL.md`` (the name
    should match it); ``fallback_name`` is used when ``name`` is missing.
    Raises :class:`SkillError` when the description is missing or unusable.
    """
    b = _Builder(file, line_of or (lambda _key: None))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SkillError(f"the frontmatter must be a mapping of fields, got {_describe(data)}", file=file, line=2)
    data = {str(k): v for k, v in data.items()}
    raw_desc = data.get("description")
    if raw_desc is None or (isinstance(raw_desc, str) and not raw_desc.strip()):
        what = "is empty" if isinstance(raw_desc, str) or "description" in data else "is missing"
        raise b.error("description", f"the required field {what} (one line saying when to use the skill)")
    if isinstance(raw_desc, (dict, list)):
        raise b.error("description", f"expected a string, got {_describe(raw_desc)}")
    description = (b.text("description", raw_desc) or "").strip()
    if len(description) > DESCRIPTION_LIMIT:
        b.warn("description", f"is {len(description)} characters; the Agent Skills limit is {DESCRIPTION_LIMIT}")

    name = data.get("name")
    if isinstance(name, (dict, list)):
        b.warn("name", f"expected a string, got {_describe(name)}")
        name = None
    elif name is not None:
        name = (b.text("name", name) or "").strip()
    if not name:
        if not fallback_name:
            raise b.error("name", "the required field is missing")
        b.warn("name", f"missing; using {fallback_name!r}")
        name = fallback_name
    if _BAD_NAME_CHARS.search(name):
        raise b.error("name", f"{name!r} must not contain ':', '/', '\\' or control characters (':' is for plugins)")
    if len(name) > 64 or not _AGENT_NAME.fullmatch(name):
        b.warn("name", f"{name!r} should be 1-64 lowercase letters, digits and single hyphens")
    if folder is not None and name != folder:
        b.warn("name", f"{name!r} does not match its folder {folder!r}")

    scope: SkillScope | None = None
    raw_scope = data.get("scope")
    if raw_scope is not None:
        if raw_scope in ("user", "workspace", "session"):
            scope = SkillScope(raw_scope)
        else:
            b.warn("scope", f"{_describe(raw_scope)} is not user, workspace or session; ignored")

    compatibility = b.text("compatibility", data.get("compatibility"))
    if compatibility is not None and len(compatibility) > COMPATIBILITY_LIMIT:
        b.warn("compatibility", f"is {len(compatibility)} characters; the Agent Skills limit is {COMPATIBILITY_LIMIT}")
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        b.warn("metadata", f"expected a mapping, got {_describe(metadata)}; ignored")
        metadata = None
    fm = SkillFrontmatter(
        name=name,
        description=description,
        scope=scope,
        keywords=b.strings("keywords", data.get("keywords"), names=False),
        tools=b.strings("tools", data.get("tools"), names=True),
        model=b.text("model", data.get("model")),
        arguments=b.arguments(data.get("arguments")),
        license=b.text("license", data.get("license")),
        compatibility=compatibility,
        metadata=_plain_data(metadata) if metadata else {},
        allowed_tools=b.strings("allowed-tools", data.get("allowed-tools"), names=True),
        extra={k: _plain_data(v) for k, v in data.items() if k not in KNOWN_KEYS},
    )
    return fm, b.warnings


def frontmatter_to_mapping(fm: SkillFrontmatter) -> dict[str, Any]:
    """The canonical mapping of ``fm`` (what :func:`dump_skill` writes and the cache stores)."""
    out: dict[str, Any] = {"name": fm.name, "description": fm.description}
    if fm.scope is not None:
        out["scope"] = fm.scope.value
    if fm.keywords:
        out["keywords"] = list(fm.keywords)
    if fm.tools:
        out["tools"] = list(fm.tools)
    if fm.model is not None:
        out["model"] = fm.model
    if fm.arguments:
        out["arguments"] = {a.name: _argument_mapping(a) for a in fm.arguments}
    if fm.license is not None:
        out["license"] = fm.license
    if fm.compatibility is not None:
        out["compatibility"] = fm.compatibility
    if fm.metadata:
        out["metadata"] = dict(fm.metadata)
    if fm.allowed_tools:
        out["allowed-tools"] = list(fm.allowed_tools)
    out.update(fm.extra)
    return out


def _argument_mapping(arg: SkillArgument) -> dict[str, Any]:
    out: dict[str, Any] = {"type": arg.type}
    if arg.description:
        out["description"] = arg.description
    if arg.required:
        out["required"] = True
    if arg.default is not None:
        out["default"] = arg.default
    if arg.choices:
        out["choices"] = list(arg.choices)
    return out


def frontmatter_from_canonical(data: Mapping[str, Any]) -> SkillFrontmatter:
    """Rebuild from :func:`frontmatter_to_mapping` output (trusted, e.g. the cache): no checks."""
    return SkillFrontmatter(
        name=data["name"],
        description=data["description"],
        scope=SkillScope(data["scope"]) if "scope" in data else None,
        keywords=tuple(data.get("keywords", ())),
        tools=tuple(data.get("tools", ())),
        model=data.get("model"),
        arguments=tuple(
            SkillArgument(
                name=name,
                type=spec.get("type", "string"),
                description=spec.get("description", ""),
                required=spec.get("required", False),
                default=spec.get("default"),
                choices=tuple(spec.get("choices", ())),
            )
            for name, spec in data.get("arguments", {}).items()
        ),
        license=data.get("license"),
        compatibility=data.get("compatibility"),
        metadata=data.get("metadata", {}),
        allowed_tools=tuple(data.get("allowed-tools", ())),
        extra={k: v for k, v in data.items() if k not in KNOWN_KEYS},
    )


# -- whole files ------------------------------------------------------------------------


def parse_frontmatter(
    text: str,
    *,
    file: str | None = None,
    folder: str | None = None,
    fallback_name: str | None = None,
    first_line: int = 2,
) -> tuple[SkillFrontmatter, list[SkillWarning]]:
    """Frontmatter text (between the ``---`` lines) to a :class:`SkillFrontmatter`."""
    data, warnings = load_yaml(text, file=file, first_line=first_line)
    cache: dict[str, int] = {}

    def line_of(key: str) -> int | None:
        if not cache:
            cache.update(_key_lines(text, first_line) or {"": 0})
        return cache.get(key)

    fm, more = frontmatter_from_mapping(data, file=file, folder=folder, fallback_name=fallback_name, line_of=line_of)
    return fm, warnings + more


def parse_skill(
    text: str,
    *,
    path: str | Path | None = None,
    scope: SkillScope = SkillScope.SESSION,
    source: str = "",
    namespace: str | None = None,
    name: str | None = None,
) -> SkillDef:
    """A whole skill file (frontmatter and body) to a :class:`SkillDef` held in memory.

    ``name`` is the fallback when the frontmatter has none (a file stem, a folder name).
    """
    file = str(path) if path is not None else None
    try:
        fm_text, body = split_frontmatter(text)
    except SkillError as exc:
        raise SkillError(exc.message, file=file, line=exc.line) from None
    if fm_text is None:
        raise SkillError("no frontmatter: a skill starts with a --- line", file=file, line=1)
    folder = None
    if path is not None and Path(path).name == "SKILL.md":
        folder = Path(path).parent.name
    fallback = name or folder or (Path(path).stem if path is not None else None)
    fm, warnings = parse_frontmatter(fm_text, file=file, folder=folder, fallback_name=fallback)
    return SkillDef(
        fm,
        scope,
        source=source,
        path=Path(path) if path is not None else None,
        namespace=namespace,
        body_text=body,
        warnings=tuple(warnings),
    )


def dump_skill(fm: SkillFrontmatter, body: str = "") -> str:
    """The text of a skill file; :func:`parse_skill` reads it back to ``fm`` and ``body``."""
    text = yaml.dump(
        frontmatter_to_mapping(fm),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1 << 30,
    )
    return f"---\n{text}---\n{body}"
