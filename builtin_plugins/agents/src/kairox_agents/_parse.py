"""Reading agent and output-style files: markdown with YAML frontmatter (split by
:func:`kairox.ext.split_frontmatter`), each file read inside its contained root."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from kairox.ext import SkillError, split_frontmatter
from kairox.files import Entry, Refused, Root

from ._model import AgentDef, AgentError, DefinitionError, OutputStyle, OutputStyleError

__all__ = ["markdown_files", "parse_agent", "parse_output_style", "read_definition"]

#: a definition file larger than this is refused (real ones are a few kilobytes)
MAX_FILE = 1 << 20
#: folder depth read below ``.claude/agents`` and ``.claude/output-styles``
MAX_DEPTH = 6
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__"})
_BAD_NAME = re.compile(r"[:/\\\x00-\x1f\x7f]")
_KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(.*))?$")

# -- parsing ------------------------------------------------------------------------

E = TypeVar("E", bound=DefinitionError)


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
    from kairox_skills import YamlLimitError, safe_load_bounded

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
        why = (
            f"{name!r} must be at most 128 characters without ':', '/', '\\' or control characters (':' is for plugins)"
        )
        if not fallback or _BAD_NAME.search(fallback) or len(fallback) > 128:
            raise error(why, file=file, field="name")
        # Claude Code names an agent after its file when the name is unusable: so does kairox
        warnings.append(f"{file}: name: {why}; using {fallback!r}, the name its file gives")
        name = fallback
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
    root: Root, path: Path | Entry, parse: Callable[..., Any], error: type[DefinitionError], **kw: Any
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
