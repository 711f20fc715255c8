"""What a child wrote to a stream (its stderr, mostly), kept bounded: :class:`OutputTail`."""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence

__all__ = ["OutputTail"]


def _redacted(lines: list[str], secrets: Sequence[str] = ()) -> list[str]:
    from kairox.ext import REDACTED, redact  # only redacting tails pay for the config module

    out = [str(redact(line)) for line in lines]
    for value in secrets:  # the values kairox gave the child, whatever words surround them
        out = [line.replace(value, REDACTED) for line in out]
    return out


#: a value shorter than this is not hidden by value (``1``, ``on``, ``debug``: it would blank
#: ordinary words of the server's log; a secret this short is no secret)
MIN_SECRET_LENGTH = 8


class OutputTail:
    """What a child wrote to a stream (its stderr, mostly), bounded whatever it writes.

    The first ``head_lines`` lines are kept (where a crash usually says why), then
    the last lines up to ``max_bytes`` (and ``max_lines``); lines in between are dropped and counted,
    so a server that writes 50 MB on its way out costs a few KB. A line longer
    than ``max_line`` bytes is kept as pieces of that size, and an endless line
    without a newline is cut the same way, never held whole.

    Feed it raw bytes (:meth:`feed`) or lines a reader already split (:meth:`append`).

    With ``redact=True`` (a server's stderr: it may echo a token it was given) lines
    are read back with URL passwords and secret-looking values redacted, and a line
    longer than ``max_line`` is cut (ending in ``[...]``) instead of split: pieces are
    redacted one by one, and a secret cut in two would slip through.
    """

    CUT = " [...]"

    def __init__(
        self,
        max_bytes: int = 64 * 1024,
        max_line: int = 2000,
        *,
        head_lines: int = 0,
        max_lines: int = 2000,
        redact: bool = False,
    ) -> None:
        self.redact = redact
        self._skipping = False  # the rest of a line that was cut (redact mode) is dropped
        self.max_bytes = max_bytes
        #: lines kept in the tail at most (a flood of empty lines costs entries, not bytes)
        self.max_lines = max_lines
        self.max_line = max_line
        self.head_lines = head_lines
        self._head: list[str] = []
        self._lines: collections.deque[str] = collections.deque()
        self._size = 0
        self._partial = b""
        self.dropped = 0  # lines dropped between the head and the tail
        self.total_bytes = 0
        self.total_lines = 0
        #: values hidden wherever they stand in what is read back (:meth:`hide`), longest first
        self.secrets: tuple[str, ...] = ()

    def hide(self, values: Iterable[str]) -> None:
        """Read lines back with each of ``values`` (the env values and headers kairox gave
        the child: it may print them) shown as ``<redacted>``, whatever surrounds it; values
        shorter than :data:`MIN_SECRET_LENGTH` are left, they would blank ordinary words."""
        keep = {v for v in (*self.secrets, *values) if isinstance(v, str) and len(v) >= MIN_SECRET_LENGTH}
        self.secrets = tuple(sorted(keep, key=len, reverse=True))

    def scrub(self, text: str) -> str:
        """``text`` (an error about the child, say) with the :meth:`hide` values redacted."""
        from kairox.ext import REDACTED

        for value in self.secrets:
            text = text.replace(value, REDACTED)
        return text

    def feed(self, data: bytes) -> None:
        """Add bytes as they were read; a line is complete at its ``\\n``."""
        self.total_bytes += len(data)
        *lines, rest = (self._partial + data).split(b"\n")
        if self._skipping:  # what follows a cut line up to its newline is dropped
            if lines:
                lines, self._skipping = lines[1:], False
            else:
                rest = b""
        for raw in lines:  # a line ends at "\n" or "\r\n" (one "\r": more are its own)
            self._add_line(raw[:-1] if raw[-1:] == b"\r" else raw)
        # a "\r" that ends what is read so far may be the start of "\r\n": it is held back,
        # so the line is cut as it would be with its newline in the same read
        body = len(rest) - (rest[-1:] == b"\r")
        if self.redact and body > self.max_line:
            self._add_line(rest)
            rest, self._skipping, body = b"", True, 0
        while body > self.max_line:
            self._add(rest[: self.max_line])
            rest = rest[self.max_line :]
            body -= self.max_line
        self._partial = rest

    def append(self, line: str) -> None:
        """Add one line a reader already split (its line ending is dropped)."""
        raw = line.rstrip("\r\n").encode("utf-8", "replace")
        self.total_bytes += len(raw) + 1
        self._add_line(raw)

    def _add_line(self, raw: bytes) -> None:
        self.total_lines += 1
        if self.redact and len(raw) > self.max_line:
            from kairox.ext import cut_at_word

            # the word the cut splits goes too: a secret's first half (``https://u:S3CR``) is
            # not recognised as a secret
            line = raw.decode("utf-8", "replace")
            kept = cut_at_word(line, len(raw[: max(0, self.max_line - len(self.CUT))].decode("utf-8", "ignore")))
            self._add((kept.rstrip() + self.CUT).encode("utf-8"))
            return
        for start in range(0, max(len(raw), 1), self.max_line):
            self._add(raw[start : start + self.max_line])

    def _add(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace")
        if len(self._head) < self.head_lines:
            self._head.append(line)
            return
        self._lines.append(line)
        self._size += len(line) + 1
        while (self._size > self.max_bytes or len(self._lines) > self.max_lines) and self._lines:
            self._size -= len(self._lines.popleft()) + 1
            self.dropped += 1

    def lines(self) -> list[str]:
        """The kept lines in order, with a marker where lines were dropped after the head."""
        marker = [f"[... {self.dropped} lines dropped ...]"] if self.dropped and self._head else []
        out = [*self._head, *marker, *self._lines]
        if self._partial:
            out.append(self._partial.decode("utf-8", "replace"))
        return _redacted(out, self.secrets) if self.redact or self.secrets else out

    def tail(self, n: int = 20) -> list[str]:
        """The last ``n`` kept lines."""
        return self.lines()[-n:] if n else []

    def text(self, max_lines: int = 40) -> str:
        """The last ``max_lines`` lines as one text, saying how many earlier ones are not shown."""
        lines = self.lines()
        if not max_lines or len(lines) <= max_lines:
            skipped = 0 if self._head else self.dropped
            shown = lines
        else:
            kept = [*self._head, *self._lines] + ([self._partial.decode("utf-8", "replace")] if self._partial else [])
            shown = kept[-max_lines:]
            skipped = self.dropped + len(kept) - len(shown)
        head = [f"[... {skipped} earlier lines not shown]"] if skipped else []
        if (self.redact or self.secrets) and shown is not lines:
            shown = _redacted(shown, self.secrets)
        return "\n".join(head + shown)
