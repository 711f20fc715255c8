"""Splitting a byte stream into lines with a bound on memory.

A server's stdout carries newline-delimited JSON-RPC and its stderr carries
log lines; neither is trusted. :class:`LineSplitter` never holds more than
``max_line`` bytes of one line: the rest of an over-long line is counted and
dropped up to the next newline, and the line comes out marked ``truncated``
(with its last ``keep_tail`` bytes, so a reader can still see how it ended).
Chunks are collected in a list and joined once per line, so a multi-megabyte
line costs linear time however it was chunked.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Line", "LineSplitter"]


class Line(NamedTuple):
    """One line without its ``\\n`` (and without a trailing ``\\r``)."""

    data: bytes
    #: the line was longer than max_line; data holds its first max_line bytes
    truncated: bool = False
    #: the full length of the line in bytes (including a dropped part)
    size: int = 0
    #: of a truncated line: its last bytes (at most ``keep_tail``; empty when not kept)
    tail: bytes = b""


class LineSplitter:
    """Feed chunks, get complete lines; ``flush()`` returns the unterminated rest at EOF."""

    def __init__(self, max_line: int, *, keep_tail: int = 0) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        if keep_tail < 0:
            raise ValueError("keep_tail must not be negative")
        self.max_line = max_line
        self.keep_tail = keep_tail
        self._parts: list[bytes] = []
        self._kept = 0  # bytes held in _parts
        self._seen = 0  # bytes of the current line seen so far (held or dropped)
        self._tail = b""  # the last keep_tail bytes of the current line's dropped part
        self._reported = False  # overflow() has told about the current line

    @property
    def pending(self) -> int:
        """Bytes of the current, unterminated line held in memory."""
        return self._kept

    def feed(self, data: bytes) -> list[Line]:
        pieces = data.split(b"\n")
        if len(pieces) == 1:
            self._add(data)
            return []
        if self._seen:  # the chunk ends a line begun before it
            self._add(pieces[0])
            lines = [self._take()]
            complete = pieces[1:-1]
        else:  # (the usual chunk: whole lines) its first line is whole too, nothing to join
            lines = []
            complete = pieces[:-1]
        limit = self.max_line
        for piece in complete:  # complete lines inside this chunk: the fast path
            n = len(piece)
            if n > limit:
                lines.append(Line(piece[:limit], True, n, self._tail_of(piece)))
            elif piece[-1:] == b"\r":
                lines.append(Line(piece[:-1], False, n - 1))
            else:
                lines.append(Line(piece, False, n))
        self._add(pieces[-1])
        return lines

    def overflow(self) -> Line | None:
        """Once per line, as soon as the unterminated current line passes ``max_line``:
        its first bytes (``truncated``, ``size`` = bytes seen so far, no tail). A reader
        can fail what the line answers without waiting for a newline that may never come;
        the line still comes out of :meth:`feed` when it ends."""
        if self._reported or self._seen <= self.max_line:
            return None
        self._reported = True
        data = b"".join(self._parts) if len(self._parts) != 1 else self._parts[0]
        return Line(data, True, self._seen)

    def flush(self) -> Line | None:
        """The unterminated last line (if any), as if it ended with a newline."""
        if not self._seen:
            return None
        return self._take()

    def _add(self, piece: bytes) -> None:
        n = len(piece)
        if not n:
            return
        self._seen += n
        room = self.max_line - self._kept
        if n > room and self.keep_tail:
            dropped = piece[max(room, 0) :]
            if len(dropped) >= self.keep_tail:
                self._tail = dropped[-self.keep_tail :]
            else:
                self._tail = (self._tail + dropped)[-self.keep_tail :]
        if room <= 0:
            return
        if n > room:
            piece = piece[:room]
        self._parts.append(piece)
        self._kept += len(piece)

    def _tail_of(self, line: bytes) -> bytes:
        return line[-self.keep_tail :] if self.keep_tail else b""

    def _take(self) -> Line:
        data = b"".join(self._parts) if len(self._parts) != 1 else self._parts[0]
        size = self._seen
        truncated = size > self.max_line
        tail = self._tail
        self._parts = []
        self._kept = 0
        self._seen = 0
        self._tail = b""
        self._reported = False
        if not truncated and data[-1:] == b"\r":
            return Line(data[:-1], False, size - 1)
        if truncated and self.keep_tail:
            # the dropped part may be shorter than keep_tail: the rest is the kept part's end
            missing = self.keep_tail - len(tail)
            if missing > 0:
                tail = data[-missing:] + tail
            return Line(data, True, size, tail)
        return Line(data, truncated, size)
