"""Columns: what the user writes (1-based characters) and what the server counts.

Tool arguments and results use 1-based lines and 1-based columns counted in
Unicode characters (code points), the way an editor shows them. LSP positions
are 0-based, and their ``character`` counts code units of the negotiated
position encoding: UTF-16 by default, or UTF-8 bytes, or UTF-32 (code
points). Lines are split as :func:`kairox_peer.split_lines` does.
"""

from __future__ import annotations

from typing import Literal

from kairox_peer import line_at

__all__ = [
    "Encoding",
    "column_of",
    "from_server_character",
    "negotiated_encoding",
    "to_server_character",
]

Encoding = Literal["utf-8", "utf-16", "utf-32"]


def _units(char: str, encoding: Encoding) -> int:
    if encoding == "utf-16":
        return 2 if ord(char) > 0xFFFF else 1
    if encoding == "utf-8":
        return len(char.encode("utf-8", "surrogatepass"))
    return 1


def to_server_character(line_text: str, column: int, encoding: Encoding) -> int:
    """Code units before character index ``column`` (0-based, clamped to the line)."""
    column = max(0, min(column, len(line_text)))
    prefix = line_text[:column]
    if encoding == "utf-32":
        return column
    if encoding == "utf-8":
        return len(prefix.encode("utf-8", "surrogatepass"))
    return column + sum(1 for c in prefix if ord(c) > 0xFFFF)


def from_server_character(line_text: str, character: int, encoding: Encoding) -> int:
    """Character index (0-based) of a server position; one inside a character rounds down, past the end clamps."""
    if character <= 0:
        return 0
    if encoding == "utf-32":
        return min(character, len(line_text))
    units = 0
    for index, char in enumerate(line_text):
        units += _units(char, encoding)
        if units > character:
            return index
        if units == character:
            return index + 1
    return len(line_text)


def column_of(text: str | None, line: int, character: int, encoding: Encoding) -> int:
    """1-based character column of a server position in ``text`` (best effort when the text is unknown)."""
    line_text = line_at(text, line) if text is not None else None
    if line_text is None:
        return character + 1
    return from_server_character(line_text, character, encoding) + 1


def negotiated_encoding(capabilities: dict[str, object] | None) -> Encoding:
    """The server's ``positionEncoding`` (UTF-16 when it names none or one we do not know)."""
    value = (capabilities or {}).get("positionEncoding")
    if value in ("utf-8", "utf-16", "utf-32"):
        return value
    return "utf-16"
