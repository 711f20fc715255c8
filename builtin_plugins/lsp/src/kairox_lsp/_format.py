"""Rendering LSP results as readable text: ``path:line:col: source line``.

Lines and columns are 1-based; columns count characters (converted from the
server's position encoding with the text of the line).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from ._documents import SourceCache, uri_to_path
from ._positions import Encoding, from_server_character

__all__ = ["SEVERITIES", "SYMBOL_KINDS", "Location", "Renderer", "hover_text", "locations_of"]

SYMBOL_KINDS: dict[int, str] = {
    1: "file",
    2: "module",
    3: "namespace",
    4: "package",
    5: "class",
    6: "method",
    7: "property",
    8: "field",
    9: "constructor",
    10: "enum",
    11: "interface",
    12: "function",
    13: "variable",
    14: "constant",
    15: "string",
    16: "number",
    17: "boolean",
    18: "array",
    19: "object",
    20: "key",
    21: "null",
    22: "enum member",
    23: "struct",
    24: "event",
    25: "operator",
    26: "type parameter",
}

SEVERITIES: dict[int, str] = {1: "error", 2: "warning", 3: "info", 4: "hint"}


@attrs.frozen
class Location:
    """A server position: a URI and a 0-based line / code-unit character."""

    uri: str
    line: int
    character: int


def _start(range_: Any) -> tuple[int, int] | None:
    if not isinstance(range_, dict):
        return None
    start = range_.get("start")
    if not isinstance(start, dict):
        return None
    line, character = start.get("line"), start.get("character")
    if isinstance(line, int) and isinstance(character, int) and line >= 0 and character >= 0:
        return line, character
    return None


def locations_of(result: Any) -> list[Location]:
    """``Location | Location[] | LocationLink[] | null`` as a flat list (malformed items skipped)."""
    items = result if isinstance(result, list) else [result] if result else []
    out: list[Location] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if "targetUri" in item:
            uri = item.get("targetUri")
            pos = _start(item.get("targetSelectionRange")) or _start(item.get("targetRange"))
        else:
            uri = item.get("uri")
            pos = _start(item.get("range"))
        if isinstance(uri, str) and pos is not None:
            out.append(Location(uri, *pos))
    return out


def _marked(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        text = str(value.get("value", ""))
        language = value.get("language")
        if language and "kind" not in value:
            return f"```{language}\n{text}\n```"
        return text
    return ""


def hover_text(result: Any) -> str:
    """The text of a hover (MarkupContent, MarkedString or a list of them)."""
    if not isinstance(result, dict):
        return ""
    contents = result.get("contents")
    if isinstance(contents, list):
        return "\n\n".join(t for t in (_marked(c).strip() for c in contents) if t)
    return _marked(contents).strip()


class Renderer:
    """Turns server positions into ``path:line:col: source`` for one call."""

    def __init__(
        self,
        workspace: Path,
        encoding: Encoding,
        open_lines: Callable[[Path], list[str] | None] | None = None,
        sources: SourceCache | None = None,
    ) -> None:
        self.workspace = workspace
        self.encoding = encoding
        self.open_lines = open_lines
        self.sources = sources or SourceCache(workspace)

    def display_path(self, path: Path) -> str:
        return self.sources.display(path)

    def lines_of(self, path: Path) -> list[str] | None:
        lines = self.open_lines(path) if self.open_lines is not None else None
        return lines if lines is not None else self.sources.lines(path)

    def position(self, loc: Location) -> tuple[str, int, int, str]:
        """(display path, 1-based line, 1-based character column, the source line stripped)."""
        path = uri_to_path(loc.uri)
        if path is None:
            return loc.uri, loc.line + 1, loc.character + 1, ""
        lines = self.lines_of(path)
        source = lines[loc.line] if lines is not None and 0 <= loc.line < len(lines) else None
        if source is None:
            return self.display_path(path), loc.line + 1, loc.character + 1, ""
        column = from_server_character(source, loc.character, self.encoding) + 1
        return self.display_path(path), loc.line + 1, column, source.strip()

    @staticmethod
    def line_text(position: tuple[str, int, int, str]) -> str:
        shown, line, column, source = position
        return f"{shown}:{line}:{column}: {source}" if source else f"{shown}:{line}:{column}"

    def location(self, loc: Location) -> str:
        return self.line_text(self.position(loc))

    def location_dict(self, loc: Location) -> dict[str, Any]:
        shown, line, column, source = self.position(loc)
        return {"path": shown, "line": line, "column": column, "text": source}


def kind_name(kind: Any) -> str:
    return SYMBOL_KINDS.get(kind, "symbol") if isinstance(kind, int) else "symbol"


def severity_name(severity: Any) -> str:
    return SEVERITIES.get(severity, "error") if isinstance(severity, int) else "error"


def is_inside(path: Path, root: Path) -> bool:
    try:
        return os.path.commonpath([str(path), str(root)]) == str(root)
    except ValueError:
        return False
