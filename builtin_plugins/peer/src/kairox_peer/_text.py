"""A source file's text and lines, as a peer sees them.

Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (LSP's rule, which DAP's line
numbers follow; not ``str.splitlines``, which also splits at form feeds and
other separators).
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["line_at", "read_text", "split_lines"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def read_text(path: Path) -> str:
    """A file's text as a server sees it (UTF-8; undecodable bytes replaced)."""
    return path.read_bytes().decode("utf-8", "replace")


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` as LSP numbers them (without their line breaks)."""
    return _LINE_BREAK.split(text)


def line_at(text: str, line: int) -> str | None:
    """Line ``line`` (0-based) of ``text``, or ``None`` past the end."""
    lines = split_lines(text)
    return lines[line] if 0 <= line < len(lines) else None
