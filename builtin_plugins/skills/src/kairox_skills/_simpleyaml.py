"""A fast reader for the plain YAML that skill frontmatter almost always is.

:func:`load` returns exactly what ``yaml.safe_load`` returns for the subset it
understands and raises :class:`Unsupported` for anything else, so the caller
falls back to PyYAML. The subset: block mappings and block sequences of
scalars; plain scalars that resolve to strings, booleans, null or decimal
integers; single- and double-quoted scalars on one line (no escapes);
one-line flow sequences of plain scalars; ``|`` and ``|-`` literal blocks.
Anything unusual (tabs, anchors, tags, flow mappings, folded or multi-line
plain scalars, odd indentation) is :class:`Unsupported`. The property tests
compare it with PyYAML on generated documents.

Why: PyYAML costs ~90 us per frontmatter even with libyaml, more than reading
the file; listing 10,000 skills must cost little more than reading them.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.resolver import Resolver

__all__ = ["Unsupported", "load"]


class Unsupported(Exception):
    """The document is outside the subset; use PyYAML."""


# tabs, control characters, NEL/LS/PS line breaks, BOM, surrogates: leave them to PyYAML
_NON_PRINTABLE = re.compile("[^\x0a\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: +|$)")
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
_BOOLS = {"yes": True, "no": False, "true": True, "false": False, "on": True, "off": False}
_RESOLVER: Any = Resolver()
_STR = "tag:yaml.org,2002:str"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_INT = "tag:yaml.org,2002:int"


def _resolve(value: str) -> Any:
    tag = _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))
    if tag == _STR:
        return value
    if tag == _BOOL:
        return _BOOLS[value.lower()]
    if tag == _NULL:
        return None
    if tag == _INT and _DECIMAL.fullmatch(value):
        return int(value)
    raise Unsupported(f"scalar {value!r} needs the full resolver")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_item(rest: str) -> bool:
    return rest == "-" or rest.startswith("- ")


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
    if any(c in inner for c in "[]{}\"'#:?&*!|>%@`\\"):
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


class _Parser:
    def __init__(self, lines: list[str], trailing_break: bool) -> None:
        self.lines = lines
        self.trailing_break = trailing_break
        self.i = 0

    def skip(self) -> bool:
        """Skip blank and comment lines; ``False`` at the end."""
        lines = self.lines
        while self.i < len(lines):
            stripped = lines[self.i].lstrip(" ")
            if stripped and not stripped.startswith("#"):
                return True
            self.i += 1
        return False

    def no_continuation(self, indent: int) -> None:
        j = self.i
        lines = self.lines
        while j < len(lines) and not lines[j].strip(" "):
            j += 1
        if j < len(lines) and _indent(lines[j]) > indent:
            raise Unsupported("continuation line")

    def block_value(self, indent: int) -> Any:
        if not self.skip():
            return None
        line = self.lines[self.i]
        li = _indent(line)
        if li > indent:
            return self.sequence(li) if _is_item(line[li:]) else self.mapping(li)
        if li == indent and _is_item(line[li:]):
            return self.sequence(li)
        return None

    def mapping(self, indent: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        while self.skip():
            line = self.lines[self.i]
            li = _indent(line)
            if li < indent:
                break
            if li > indent:
                raise Unsupported("unexpected indentation")
            m = _KEY.match(line, indent)
            if m is None:
                raise Unsupported("not a simple key")
            key = m.group(1)
            if _resolve(key) != key:
                raise Unsupported("key resolves to a non-string")
            rest = line[m.end() :]
            self.i += 1
            result[key] = self.block_value(indent) if not rest else self.inline(rest, indent, in_sequence=False)
        return result

    def sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while self.skip():
            line = self.lines[self.i]
            li = _indent(line)
            if li < indent:
                break
            if li > indent:
                raise Unsupported("unexpected indentation")
            if not _is_item(line[li:]):
                break
            rest = line[li + 1 :].lstrip(" ")
            self.i += 1
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
        elif first == "|" and not in_sequence:
            return self.literal(rest, indent)
        elif first in _INDICATORS and not (first == "-" and rest[1:2] not in ("", " ")):
            raise Unsupported(f"value starting with {first!r}")
        else:
            value = _plain(rest)
        self.no_continuation(indent)
        return value

    def literal(self, header: str, indent: int) -> str:
        header = header.rstrip(" ")
        if header not in ("|", "|-"):
            raise Unsupported("block scalar header")
        lines = self.lines
        start = self.i
        if start >= len(lines):
            return ""
        if not lines[start].strip(" "):
            raise Unsupported("block scalar starting with a blank line")
        width = _indent(lines[start])
        if width <= indent:
            return ""
        content: list[str] = []
        last = start
        k = start
        while k < len(lines):
            line = lines[k]
            if not line.strip(" "):
                if len(line) > width:
                    raise Unsupported("blank line with content spaces")
                content.append("")
                k += 1
                continue
            if _indent(line) < width:
                break
            content.append(line[width:])
            last = k
            k += 1
        self.i = k
        while content and content[-1] == "":
            content.pop()
        text = "\n".join(content)
        if header == "|" and (last < len(lines) - 1 or self.trailing_break):
            text += "\n"
        return text


def load(text: str) -> Any:
    """What ``yaml.safe_load(text)`` returns, or :class:`Unsupported`."""
    if "\r" in text:
        if text.count("\r") != text.count("\r\n"):
            raise Unsupported("lone carriage return")
        text = text.replace("\r\n", "\n")
    if _NON_PRINTABLE.search(text):
        raise Unsupported("tab, control or special line-break character")
    lines = text.split("\n")
    trailing_break = lines[-1] == ""
    if trailing_break:
        lines.pop()
    parser = _Parser(lines, trailing_break)
    if not parser.skip():
        return None
    if _indent(lines[parser.i]) != 0:
        raise Unsupported("indented document")
    result = parser.mapping(0)
    if parser.skip():
        raise Unsupported("trailing content")
    return result
