"""A fast reader for the plain YAML that skill frontmatter almost always is.

:func:`load` returns exactly what ``yaml.safe_load`` returns for the subset it
understands and raises :class:`Unsupported` for anything else, so the caller
falls back to PyYAML. The subset: block mappings and block sequences of
scalars; plain scalars that resolve to strings, booleans, null or decimal
integers; single- and double-quoted scalars on one line (no escapes);
one-line flow sequences of plain scalars; ``|`` and ``|-`` literal blocks.
Anything unusual (tabs, anchors, tags, flow mappings, folded or multi-line
plain scalars, odd indentation, mappings nested deeper than :data:`MAX_DEPTH`)
is :class:`Unsupported`. The property tests compare it with PyYAML on
generated documents.

Why: PyYAML costs ~90 us per frontmatter even with libyaml, more than reading
the file; listing 10,000 skills must cost little more than reading them.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.resolver import Resolver

__all__ = ["MAX_DEPTH", "Unsupported", "load", "load_lenient"]

#: block mappings nested deeper are left to PyYAML (bounded: this reader recurses per level)
MAX_DEPTH = 32


#: longer integers go to the bounded loader, which refuses them (int() of those is
#: quadratic on 3.10 and a ValueError on 3.11+)
_MAX_DIGITS = 4300


class Unsupported(Exception):
    """The document is outside the subset; use PyYAML."""


# tabs, control characters, NEL/LS/PS line breaks, BOM, surrogates: leave them to PyYAML
_NON_PRINTABLE = re.compile("[^\x0a\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
_ASCII_ODD = re.compile("[\x00-\x09\x0b-\x1f\x7f]")
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: +|$)")
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOW_ODD = re.compile(r"[\[\]{}\"'#:?&*!|>%@`\\]")
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
_BOOLS = {"yes": True, "no": False, "true": True, "false": False, "on": True, "off": False}
_RESOLVER: Any = Resolver()
_STR = "tag:yaml.org,2002:str"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_INT = "tag:yaml.org,2002:int"


# first characters for which PyYAML may resolve a plain scalar to something other than a string
_SPECIAL_FIRST = frozenset(k for k in Resolver.yaml_implicit_resolvers if k)
_RESOLVED: dict[str, Any] = {}


def _resolve(value: str) -> Any:
    if value and value[0] not in _SPECIAL_FIRST:
        return value
    try:
        return _RESOLVED[value]
    except KeyError:
        pass
    tag = _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))
    if tag == _STR:
        result: Any = value
    elif tag == _BOOL:
        result = _BOOLS[value.lower()]
    elif tag == _NULL:
        result = None
    elif tag == _INT and _DECIMAL.fullmatch(value) and len(value) <= _MAX_DIGITS:
        result = int(value)
    else:
        raise Unsupported(f"scalar {value!r} needs the full resolver")
    if len(_RESOLVED) < 4096:
        _RESOLVED[value] = result
    return result


def _plain(text: str) -> Any:
    value = text.rstrip(" ")
    if ": " in value or " #" in value or value.endswith(":"):
        raise Unsupported("plain scalar with an indicator")
    return _resolve(value)


def _double_quoted(text: str) -> str:
    end = text.find('"', 1)
    if end < 0:
        raise Unsupported("multi-line double-quoted scalar")
    content = text[1:end]
    if "\\" in content or text[end + 1 :].strip(" "):
        raise Unsupported("escapes or text after a quoted scalar")
    return content


def _single_quoted(text: str) -> str:
    start = 1
    while True:
        end = text.find("'", start)
        if end < 0:
            raise Unsupported("multi-line single-quoted scalar")
        if text[end + 1 : end + 2] == "'":
            start = end + 2
            continue
        break
    if text[end + 1 :].strip(" "):
        raise Unsupported("text after a quoted scalar")
    return text[1:end].replace("''", "'")


def _flow_sequence(text: str) -> list[Any]:
    value = text.rstrip(" ")
    if not value.endswith("]"):
        raise Unsupported("multi-line flow sequence")
    inner = value[1:-1]
    if _FLOW_ODD.search(inner):
        raise Unsupported("flow sequence with indicators")
    if not inner.strip(" "):
        return []
    parts = inner.split(",")
    if len(parts) > 1 and not parts[-1].strip(" "):
        parts.pop()
    items = []
    for part in parts:
        item = part.strip(" ")
        if not item or item[0] in _INDICATORS:
            raise Unsupported("empty or odd flow item")
        items.append(_resolve(item))
    return items


# one line: indentation, then a key, a sequence dash, a comment or anything; then the rest
_LINE = re.compile(r"( *)(?:([A-Za-z_][A-Za-z0-9_-]*):(?: +|$)|(-)(?: +|$)|(#))?(.*)")
BLANK, COMMENT, KEY, ITEM, OTHER = range(5)


class _Parser:
    def __init__(self, lines: list[str], trailing_break: bool) -> None:
        self.lines = lines
        self.trailing_break = trailing_break
        self.i = 0
        self.depth = 1
        self.n = n = len(lines)
        self.indents = indents = [0] * n
        self.kinds = kinds = [BLANK] * n
        self.keys: list[str] = [""] * n
        self.rests: list[str] = [""] * n
        match = _LINE.match
        for i, line in enumerate(lines):
            m = match(line)
            ind, key, dash, hash_, rest = m.groups()  # type: ignore[union-attr]
            indents[i] = len(ind)
            if key is not None:
                kinds[i] = KEY
                self.keys[i] = key
                self.rests[i] = rest
            elif dash is not None:
                kinds[i] = ITEM
                self.rests[i] = rest
            elif hash_ is not None:
                kinds[i] = COMMENT
            elif rest.strip(" "):
                kinds[i] = OTHER
                self.rests[i] = rest

    def skip(self) -> bool:
        """Skip blank and comment lines; ``False`` at the end."""
        kinds = self.kinds
        i = self.i
        n = self.n
        while i < n and kinds[i] <= COMMENT:
            i += 1
        self.i = i
        return i < n

    def no_continuation(self, indent: int) -> None:
        j = self.i
        kinds = self.kinds
        n = self.n
        while j < n and kinds[j] == BLANK:
            j += 1
        if j < n and self.indents[j] > indent:
            raise Unsupported("continuation line")

    def block_value(self, indent: int) -> Any:
        if not self.skip():
            return None
        i = self.i
        li = self.indents[i]
        if li > indent:
            if self.kinds[i] == ITEM:
                return self.sequence(li)
            if self.depth >= MAX_DEPTH:
                raise Unsupported("deeply nested mappings")
            self.depth += 1
            try:
                return self.mapping(li)
            finally:
                self.depth -= 1
        if li == indent and self.kinds[i] == ITEM:
            return self.sequence(li)
        return None

    def mapping(self, indent: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        kinds, indents, keys, rests = self.kinds, self.indents, self.keys, self.rests
        n = self.n
        special = _SPECIAL_FIRST
        indicators = _INDICATORS
        i = self.i
        while True:
            while i < n and kinds[i] <= COMMENT:
                i += 1
            if i >= n:
                break
            li = indents[i]
            if li < indent:
                break
            if li > indent or kinds[i] != KEY:
                raise Unsupported("not a simple key at this indentation")
            key = keys[i]
            if key[0] in special and _resolve(key) != key:
                raise Unsupported("key resolves to a non-string")
            rest = rests[i]
            i += 1
            self.i = i
            if not rest:
                result[key] = self.block_value(indent)
                i = self.i
                continue
            first = rest[0]
            if first not in indicators or (first == "-" and rest[1:2] not in ("", " ")):
                # the hot path: a plain scalar
                value = rest.rstrip(" ")
                if ": " in value or " #" in value or value[-1] == ":":
                    raise Unsupported("plain scalar with an indicator")
                result[key] = value if first not in special else _resolve(value)
                self.no_continuation(indent)
            else:
                result[key] = self.inline(rest, indent, in_sequence=False)
                i = self.i
        self.i = i
        return result

    def sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        kinds, indents, rests = self.kinds, self.indents, self.rests
        while self.skip():
            i = self.i
            li = indents[i]
            if li < indent:
                break
            if li > indent:
                raise Unsupported("unexpected indentation")
            if kinds[i] != ITEM:
                break
            rest = rests[i]
            self.i = i + 1
            if not rest or _KEY.match(rest):
                raise Unsupported("nested block in a sequence")
            items.append(self.inline(rest, indent, in_sequence=True))
        return items

    def inline(self, rest: str, indent: int, *, in_sequence: bool) -> Any:
        first = rest[0]
        value: Any
        if first == '"':
            value = _double_quoted(rest)
        elif first == "'":
            value = _single_quoted(rest)
        elif first == "[":
            value = _flow_sequence(rest)
        elif first in "|>" and not in_sequence:
            return self.block_scalar(rest, indent)
        elif first in _INDICATORS and not (first == "-" and rest[1:2] not in ("", " ")):
            raise Unsupported(f"value starting with {first!r}")
        else:
            value = _plain(rest)
        self.no_continuation(indent)
        return value

    def block_scalar(self, header: str, indent: int) -> str:
        header = header.rstrip(" ")
        if header not in ("|", "|-", ">", ">-"):
            raise Unsupported("block scalar header")
        folded = header[0] == ">"
        lines, indents, kinds, n = self.lines, self.indents, self.kinds, self.n
        start = self.i
        if start >= n:
            return ""
        if kinds[start] == BLANK:
            raise Unsupported("block scalar starting with a blank line")
        width = indents[start]
        if width <= indent:
            return ""
        content: list[str] = []
        last = start
        k = start
        while k < n:
            if kinds[k] == BLANK:
                if len(lines[k]) > width:
                    raise Unsupported("blank line with content spaces")
                content.append("")
                k += 1
                continue
            if indents[k] < width:
                break
            content.append(lines[k][width:])
            last = k
            k += 1
        self.i = k
        while content and content[-1] == "":
            content.pop()
        if folded:
            # only the plain case: no blank or more-indented lines (their folding rules differ)
            if "" in content or any(line[:1] == " " for line in content):
                raise Unsupported("folded scalar with blank or more-indented lines")
            text = " ".join(content)
        else:
            text = "\n".join(content)
        if len(header) == 1 and (last < n - 1 or self.trailing_break):
            text += "\n"
        return text


# a flat document: top-level "key: value" lines and "key:" lines followed by "- item" lines
_ENTRY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: +(\S[^\n]*)\n|\n((?: *- +\S[^\n]*\n)+))")


class _NeedsQuoting(Exception):
    """A plain value with ``: `` (or a final ``:``): invalid YAML that the lenient reader quotes."""


def _scalar(rest: str, in_sequence: bool) -> Any:
    """One inline value of a flat document (no continuation lines follow it)."""
    first = rest[0]
    if first == '"':
        return _double_quoted(rest)
    if first == "'":
        return _single_quoted(rest)
    if first == "[":
        return _flow_sequence(rest)
    if first in _INDICATORS and not (first == "-" and rest[1:2] not in ("", " ")):
        raise Unsupported(f"value starting with {first!r}")
    if in_sequence and _KEY.match(rest):
        raise Unsupported("nested block in a sequence")
    value = rest.rstrip(" ")
    if not in_sequence and (": " in value or value[-1] == ":") and " #" not in value:
        raise _NeedsQuoting(value)  # (a " #" may start a comment first: PyYAML decides those)
    if ": " in value or " #" in value or value[-1] == ":":
        raise Unsupported("plain scalar with an indicator")
    return value if first not in _SPECIAL_FIRST else _resolve(value)


def _flat(text: str, quoted: list[int] | None = None) -> dict[str, Any] | None:
    """The common shape in one regex pass; ``None`` when the document is not flat.

    With ``quoted``, a top-level plain value holding ``: `` (invalid YAML) is
    read as the string it is, as quoting it would, and its 0-based line is
    appended to ``quoted``; without, such a value is :class:`Unsupported`.
    """
    result: dict[str, Any] = {}
    end = 0
    for m in _ENTRY.finditer(text):
        if m.start() != end:
            return None
        end = m.end()
        key, inline, items = m.groups()
        if key[0] in _SPECIAL_FIRST and _resolve(key) != key:
            raise Unsupported("key resolves to a non-string")
        if inline is not None:
            if inline[0] in "|>":
                return None  # a block scalar: the general parser reads it
            try:
                result[key] = _scalar(inline, False)
            except _NeedsQuoting as exc:
                if quoted is None:
                    raise Unsupported("plain scalar with an indicator") from None
                result[key] = exc.args[0]
                quoted.append(text.count("\n", 0, m.start()))
            continue
        lines = items.split("\n")
        lines.pop()
        dash = lines[0].index("-")
        values = []
        for line in lines:
            if line.index("-") != dash:
                return None
            values.append(_scalar(line[dash + 1 :].lstrip(" "), True))
        result[key] = values
    return result if end == len(text) and result else None


def load(text: str) -> Any:
    """What ``yaml.safe_load(text)`` returns, or :class:`Unsupported`."""
    return _load(text, None)


def load_lenient(text: str) -> tuple[Any, list[int]]:
    """Like :func:`load`, but a flat document whose top-level plain values hold
    ``: `` (invalid YAML) is read as if those values were quoted; the second item
    lists their 0-based lines (empty when the YAML was valid)."""
    quoted: list[int] = []
    return _load(text, quoted), quoted


def _load(text: str, quoted: list[int] | None) -> Any:
    if "\r" in text:
        if text.count("\r") != text.count("\r\n"):
            raise Unsupported("lone carriage return")
        text = text.replace("\r\n", "\n")
    if (_ASCII_ODD if text.isascii() else _NON_PRINTABLE).search(text):
        raise Unsupported("tab, control or special line-break character")
    flat = _flat(text, quoted)
    if flat is not None:
        return flat
    if quoted:
        raise Unsupported("values to quote outside a flat document")
    lines = text.split("\n")
    trailing_break = lines[-1] == ""
    if trailing_break:
        lines.pop()
    parser = _Parser(lines, trailing_break)
    if not parser.skip():
        return None
    if parser.indents[parser.i] != 0:
        raise Unsupported("indented document")
    result = parser.mapping(0)
    if parser.skip():
        raise Unsupported("trailing content")
    return result
