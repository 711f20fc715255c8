"""Text from outside (a server, a bundle, a file) made safe to write to a terminal."""

from __future__ import annotations

import re

__all__ = ["terminal_safe"]

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional
# embeddings, overrides and isolates (and the marks) that reorder what is shown
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    code = ord(ch)
    if ch == "\r":
        return "\\r"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str, *, newlines: bool = False) -> str:
    """``text`` with every control character but tab, and every bidirectional override,
    written visibly (``\\x1b``, ``\\r``, ``\\n``, ``\\u202e``): nothing in it can move the
    cursor, set a title, write the clipboard, reorder a line or forge one. With
    ``newlines`` (a multi-line text such as a log) newlines are kept."""
    out = _UNSAFE.sub(_escape, text)
    return out if newlines else out.replace("\n", "\\n")
