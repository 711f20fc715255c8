"""The skill file format: reading the frontmatter, lenient YAML, whole files, dumping.

Two shapes share it: a kairox skill file (``*.md``) and an Agent Skills
folder (``<name>/SKILL.md``). YAML goes through a fast reader for the plain
subset, then PyYAML, then PyYAML after quoting values that are not valid on
their own (unquoted colons: loaded with a warning). YAML that still cannot be
parsed is a :class:`~kairox.ext.SkillError` naming the file, line and field.
PyYAML and the fast reader are imported with the first frontmatter read or
skill dumped, not with the module (a plugin with no skill files to read costs
no YAML parser).
Structuring into a :class:`~kairox.ext.SkillFrontmatter` is in ``_structure``.

PyYAML always runs through :func:`kairox_skills.safe_load_bounded`: a
frontmatter whose aliases expand too far (a "billion laughs"), that nests too
deep or that is longer than :data:`MAX_FRONTMATTER` is one ``SkillError``, and
so is one that runs out of memory or stack while being parsed; the other
skills of the source load as usual.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any, BinaryIO

from kairox.ext import (
    SkillDef,
    SkillError,
    SkillFrontmatter,
    SkillScope,
    SkillWarning,
    split_frontmatter,
)

from ._structure import frontmatter_from_mapping, frontmatter_to_mapping
from ._template import template_for
from ._yaml import YamlLimitError, safe_load_bounded

__all__ = [
    "MAX_FRONTMATTER",
    "TransientSkillError",
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


class TransientSkillError(SkillError):
    """An error of this reading, not of what the file says (parsing ran out of memory or
    stack; the file could not be read or was refused when opened): reported like any
    error, never cached."""


_CLOSE = re.compile(rb"^---[ \t]*\r?(?:\n|\Z)", re.M)
_TOP_KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)[ \t]*:", re.M)
_SIMPLE_LINE = re.compile(r"^([ ]*)([A-Za-z0-9_][A-Za-z0-9_-]*):[ \t]+(\S.*?)[ \t]*$")
_BLOCK_HEADER = re.compile(r"[|>][-+0-9]*")

_reader: Any = None


def _load_reader() -> Any:
    """The fast reader (:mod:`._simpleyaml`, which imports PyYAML), imported with the first frontmatter."""
    global _reader
    from . import _simpleyaml

    _reader = _simpleyaml
    return _reader


def _safe_load(text: str) -> Any:
    return safe_load_bounded(text, max_length=MAX_FRONTMATTER)


# -- reading the frontmatter block -----------------------------------------------------


def read_frontmatter(fh: BinaryIO, *, file: str = "", chunk: int = 8192) -> tuple[str, list[SkillWarning]] | None:
    """The frontmatter text of an open file (opened through its :class:`kairox.files.Root`),
    read only up to its closing ``---``; ``file`` names it in problems.

    ``None`` when the file has no frontmatter; :class:`SkillError` when it is
    not closed or too large. The text's first line is line 2 of the file.
    """
    raw = _read_block(fh.fileno(), file, chunk)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 2
        warning = SkillWarning("not valid UTF-8; undecodable bytes were replaced", file=file, line=line)
        return raw.decode("utf-8", errors="replace"), [warning]


def _read_block(fd: int, file: str, chunk: int) -> bytes | None:
    read = os.read
    buf = read(fd, chunk)
    if buf.startswith(b"\xef\xbb\xbf"):
        buf = buf[3:]
    nl = buf.find(b"\n")
    while nl < 0 and len(buf) < MAX_FRONTMATTER:
        more = read(fd, chunk)
        if not more:
            break
        buf += more
        nl = buf.find(b"\n")
    if nl < 0 or buf[:nl].rstrip(b" \t\r") != b"---":
        return None
    start = pos = nl + 1
    eof = False
    while True:
        m = _CLOSE.search(buf, pos)
        if m is not None and (m.group(0).endswith(b"\n") or eof):
            return buf[start : m.start()]
        if eof or len(buf) > MAX_FRONTMATTER:
            problem = "is never closed (no --- line)" if eof else f"is larger than {MAX_FRONTMATTER} bytes"
            raise SkillError(f"the frontmatter opened on line 1 {problem}", file=file, line=1)
        # search again from the last line start of the buffer (a fence may straddle chunks)
        pos = max(start, buf.rfind(b"\n", 0, len(buf) - 1) + 1)
        more = read(fd, chunk)
        eof = not more
        buf += more


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
                ok = isinstance(_safe_load(f"k: {value}"), dict)
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


def _quoting_warning(text: str, fixed: list[int], problem: str, file: str | None, first_line: int) -> SkillWarning:
    lines = ", ".join(str(i + first_line) for i in fixed)
    return SkillWarning(
        f"frontmatter is not valid YAML ({problem}); read it by quoting the value on line(s) {lines}",
        file=file,
        line=fixed[0] + first_line,
        field=", ".join(dict.fromkeys(_key_at(text, i) for i in fixed)),
    )


@functools.lru_cache(maxsize=1)
def _mapping_problem() -> str:
    """How the YAML loader words ``key: a: b`` (libyaml and PyYAML differ)."""
    try:
        _safe_load("k: a: b")
    except Exception as exc:
        return _yaml_problem(exc, 0)[0]
    return "mapping values are not allowed here"  # pragma: no cover - every loader refuses it


def load_yaml(text: str, *, file: str | None = None, first_line: int = 2) -> tuple[Any, list[SkillWarning]]:
    """Parse frontmatter YAML: the fast subset, then PyYAML, then PyYAML after
    quoting values that are not valid on their own (unquoted colons).

    PyYAML is bounded (:func:`kairox_skills.safe_load_bounded`): a document over
    a limit is a :class:`SkillError` saying which, with no quoting retry.
    """
    if len(text) > MAX_FRONTMATTER:
        raise SkillError(f"the frontmatter is larger than {MAX_FRONTMATTER} characters", file=file, line=1)
    reader = _reader or _load_reader()
    try:
        data, fixed = reader.load_lenient(text)
    except reader.Unsupported:
        pass
    else:
        if not fixed:
            return data, []
        return data, [_quoting_warning(text, fixed, _mapping_problem(), file, first_line)]
    limited = False
    try:
        return _safe_load(text), []
    except YamlLimitError as exc:
        limited = True
        problem, index, context = _yaml_problem(exc, first_line)
    except (MemoryError, RecursionError):
        raise  # parse_frontmatter reports these
    except Exception as exc:  # any parser failure becomes a SkillError below
        problem, index, context = _yaml_problem(exc, first_line)
    line = index + first_line if index is not None else first_line - 1
    field = _key_at(text, context) if context is not None else ""
    if limited:
        raise SkillError(f"frontmatter YAML is refused: {problem}", file=file, line=line, field=field)
    fixed_text, fixed = _quote_bad_values(text)
    if fixed:
        try:
            data = _safe_load(fixed_text)
        except Exception:
            pass
        else:
            return data, [_quoting_warning(text, fixed, problem, file, first_line)]
    raise SkillError(f"frontmatter is not valid YAML: {problem}", file=file, line=line, field=field)


# -- whole files ------------------------------------------------------------------------


def parse_frontmatter(
    text: str,
    *,
    file: str | None = None,
    folder: str | None = None,
    fallback_name: str | None = None,
    first_line: int = 2,
) -> tuple[SkillFrontmatter, list[SkillWarning]]:
    """Frontmatter text (between the ``---`` lines) to a :class:`SkillFrontmatter`.

    Never raises ``MemoryError`` or ``RecursionError``: those are a
    :class:`TransientSkillError` for this one file.
    """
    try:
        return _parse_frontmatter(text, file, folder, fallback_name, first_line)
    except (MemoryError, RecursionError) as exc:
        what = "memory" if isinstance(exc, MemoryError) else "stack (too deeply nested)"
    # raised outside the except block: the error must not keep the failed parse's frames alive
    raise TransientSkillError(f"the frontmatter could not be parsed: out of {what}", file=file, line=1)


def _parse_frontmatter(
    text: str, file: str | None, folder: str | None, fallback_name: str | None, first_line: int
) -> tuple[SkillFrontmatter, list[SkillWarning]]:
    data, warnings = load_yaml(text, file=file, first_line=first_line)
    cache: dict[str, int] = {}

    def line_of(key: str) -> int | None:  # the key lines are found only for a message (never on the quick path)
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
        template=template_for(fm),
    )


def dump_skill(fm: SkillFrontmatter, body: str = "") -> str:
    """The text of a skill file; :func:`parse_skill` reads it back to ``fm`` and ``body``."""
    import yaml

    text = yaml.dump(
        frontmatter_to_mapping(fm),
        Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),  # SafeDumper: PyYAML without libyaml
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1 << 30,
    )
    return f"---\n{text}---\n{body}"
