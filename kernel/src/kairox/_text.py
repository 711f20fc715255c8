"""Text from outside (a server, a bundle, a file) made safe to write to a terminal."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["SafeStream", "stream_safe", "terminal_safe"]

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


# what a stream guard escapes: C0 but tab, newline and carriage return (CR is what
# click's own prompts and progress redraws use), DEL, C1 and the bidi controls
_STREAM_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _stream_escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    # C0 as \xNN (json.dumps never leaves one raw); DEL, C1 and bidi as \uXXXX, which
    # inside a JSON string still means the same character
    return f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}"


def stream_safe(text: str) -> str:
    """What :class:`SafeStream` writes for ``text``: escape sequences and bidi controls
    visible, newlines, tabs and carriage returns kept."""
    return _STREAM_UNSAFE.sub(_stream_escape, text)


class SafeStream:
    """A text stream wrapper for the CLI's stdout and stderr: nothing a server, bundle or
    file put in a string kairox prints can drive the terminal (kairox itself writes no
    escape sequences). JSON output stays valid JSON."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(stream_safe(text) if isinstance(text, str) else text)
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
