"""Splitting a byte stream into lines with a bound on memory.

A server's stdout carries newline-delimited JSON-RPC and its stderr carries
log lines; neither is trusted. :class:`LineSplitter` never holds more than
``max_line`` bytes of one line: the rest of an over-long line is counted and
dropped up to the next newline, and the line comes out marked ``truncated``.
Chunks are collected in a list and joined once per line, so a multi-megabyte
line costs linear time however it was chunked.
"""

from __future__ import annotations

import attrs

__all__ = ["Line", "LineSplitter"]


@attrs.frozen
class Line:
    """One line without its ``\\n`` (and without a trailing ``\\r``)."""

    data: bytes
    truncated: bool = False  # the line was longer than max_line; data holds its first max_line bytes
    size: int = 0  # the full length of the line in bytes (including the dropped part)


class LineSplitter:
    """Feed chunks, get complete lines; ``flush()`` returns the unterminated rest at EOF."""

    def __init__(self, max_line: int) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        self.max_line = max_line
        self._parts: list[bytes] = []
        self._kept = 0  # bytes held in _parts
        self._seen = 0  # bytes of the current line seen so far (held or dropped)

    @property
    def pending(self) -> int:
        """Bytes of the current, unterminated line held in memory."""
        return self._kept

    def feed(self, data: bytes) -> list[Line]:
        lines: list[Line] = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            self._add(data, start, nl)
            lines.append(self._take())
            start = nl + 1
        if start < len(data):
            self._add(data, start, len(data))
        return lines

    def flush(self) -> Line | None:
        """The unterminated last line (if any), as if it ended with a newline."""
        if not self._seen:
            return None
        return self._take()

    def _add(self, data: bytes, start: int, end: int) -> None:
        n = end - start
        self._seen += n
        room = self.max_line - self._kept
        if room <= 0 or n == 0:
            return
        piece = data[start : start + min(n, room)]
        self._parts.append(piece)
        self._kept += len(piece)

    def _take(self) -> Line:
        data = b"".join(self._parts)
        size = self._seen
        truncated = size > self.max_line
        self._parts = []
        self._kept = 0
        self._seen = 0
        if data.endswith(b"\r") and not truncated:
            data = data[:-1]
            size -= 1
        return Line(data, truncated, size)
