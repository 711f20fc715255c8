"""The JSON-lines protocol between kairox and a plugin host process (Python or Node).

One JSON object per line, UTF-8, both ways. The host starts by sending
``{"type": "hello", "pid": N}``; then kairox sends requests, each with an ``id``:

- ``{"id", "op": "load", "plugin": {"id", "root", "main", "name", "version", "env"}}``
  -> ``{"id", "ready": {"tools": [...], "hooks": [...]}}`` or ``{"id", "fatal": {"error", "stack"}}``;
- ``{"id", "op": "tool", "plugin", "name", "arguments"}`` -> ``{"id", "result": {...}}``
  (``text``, ``content``, ``json``, ``structured``, ``is_error``; ``error`` + ``stack`` when it threw);
- ``{"id", "op": "hook", "plugin", "index", "payload"}`` -> ``{"id", "value": ...}`` or
  ``{"id", "error", "stack"}``;
- ``{"id", "op": "unload", "plugin"}`` -> ``{"id", "value": null}``;
- ``{"op": "cancel", "id"}``: the call ``id`` was cancelled; its answer is not awaited.

Hosts write ``id`` first, so an answer too long to keep can still be matched to its
call. :class:`LineReader` splits what a host writes into lines without ever holding
more than ``max_line`` bytes: a longer line is skipped (counted, its first bytes
kept) up to its newline.
"""

from __future__ import annotations

import json
import re
from typing import Any, Union

import attrs

__all__ = ["MAX_LINE", "PREFIX", "LineReader", "Oversized", "encode", "id_of", "parse"]

#: the longest line kept (an answer, a request), bytes
MAX_LINE = 64 * 1024 * 1024
#: bytes of an oversized line kept (to find its ``id``)
PREFIX = 64
_ID = re.compile(rb'^\s*\{\s*"id"\s*:\s*(\d{1,18})\s*[,}]')


@attrs.frozen
class Oversized:
    """A line longer than the limit: its first :data:`PREFIX` bytes and its length."""

    prefix: bytes
    size: int


Item = Union[bytes, Oversized]


class LineReader:
    """Bytes in, complete lines out; at most ``max_line`` bytes are ever buffered."""

    def __init__(self, max_line: int = MAX_LINE) -> None:
        if max_line < 1:
            raise ValueError("max_line must be at least 1")
        self.max_line = max_line
        self._buf = bytearray()
        self._skipping = False
        self._prefix = b""
        self._skipped = 0
        #: lines skipped for their length, so far
        self.oversized = 0

    @property
    def buffered(self) -> int:
        """Bytes held for the line not yet complete."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Item]:
        out: list[Item] = []
        pos, end = 0, len(data)
        while pos < end:
            nl = data.find(b"\n", pos)
            if self._skipping:
                if len(self._prefix) < PREFIX:  # the first bytes may come in later chunks
                    stop = end if nl == -1 else nl
                    self._prefix += data[pos : min(stop, pos + PREFIX - len(self._prefix))]
                if nl == -1:
                    self._skipped += end - pos
                    return out
                out.append(Oversized(self._prefix, self._skipped + nl - pos))
                self.oversized += 1
                self._skipping, self._prefix, self._skipped = False, b"", 0
                pos = nl + 1
                continue
            if nl == -1:
                if len(self._buf) + end - pos > self.max_line:
                    self._prefix = self._head(data, pos, end)
                    self._skipped = len(self._buf) + end - pos
                    self._skipping = True
                    self._buf.clear()
                else:
                    self._buf += data[pos:]
                return out
            size = len(self._buf) + nl - pos
            if size > self.max_line:
                out.append(Oversized(self._head(data, pos, nl), size))
                self.oversized += 1
            else:
                out.append((bytes(self._buf) + data[pos:nl]).rstrip(b"\r"))
            self._buf.clear()
            pos = nl + 1
        return out

    def _head(self, data: bytes, pos: int, stop: int) -> bytes:
        """The first :data:`PREFIX` bytes of the line that is buffered and goes on at ``data[pos:stop]``."""
        head = bytes(self._buf[:PREFIX])
        return head + data[pos : min(stop, pos + PREFIX - len(head))]


def parse(line: bytes) -> dict[str, Any] | None:
    """A line as a JSON object; ``None`` for anything else (a stray print, garbage)."""
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def id_of(prefix: bytes) -> int | None:
    """The ``id`` an oversized answer starts with (hosts write it first)."""
    match = _ID.match(prefix)
    return int(match.group(1)) if match else None


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, default=str, ensure_ascii=False).encode("utf-8") + b"\n"
