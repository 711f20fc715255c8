"""Text from outside (a server, a bundle, a file, the model): made safe to write to a
terminal, and matched against shell-style globs in bounded time."""

from __future__ import annotations

import bisect
import functools
import re
import shlex
from collections.abc import Iterable

__all__ = ["glob_match", "terminal_safe"]

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


# -- shell-style globs ---------------------------------------------------------------------


class _CharSet:
    """One ``[...]`` of a glob, read as :func:`fnmatch.translate` reads it: sorted,
    disjoint code point spans, maybe negated."""

    __slots__ = ("ends", "negated", "starts")

    def __init__(self, body: str) -> None:
        # fnmatch's ranges: the first ``-`` from the body's second character (after a
        # leading ``!``), each next one at least three characters on, never the last
        # character; a range whose ends are reversed is dropped with both its ends
        ranges: set[int] = set()
        gone: set[int] = set()
        h = body.find("-", 2 if body.startswith("!") else 1)
        while 0 <= h < len(body) - 1:
            if body[h - 1] <= body[h + 1]:
                ranges.add(h)
            else:
                gone.update((h - 1, h, h + 1))
            h = body.find("-", h + 3)
        # what is left, as fnmatch joins it: a range's hyphen then stands between its two
        # ends; a leading ``!`` negates (even one that a dropped range uncovered)
        items = [(c, i in ranges) for i, c in enumerate(body) if i not in gone]
        self.negated = bool(items) and items[0] == ("!", False)
        if self.negated:
            items = items[1:]
        spans: list[tuple[int, int]] = []
        i = 0
        while i < len(items):
            if i + 1 < len(items) and items[i + 1][1]:
                spans.append((ord(items[i][0]), ord(items[i + 2][0])))
                i += 3
            else:
                spans.append((ord(items[i][0]), ord(items[i][0])))
                i += 1
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(spans):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
            else:
                merged.append((lo, hi))
        self.starts = [lo for lo, _ in merged]
        self.ends = [hi for _, hi in merged]

    def __contains__(self, char: str) -> bool:
        code = ord(char)
        at = bisect.bisect_right(self.starts, code) - 1
        return (at >= 0 and code <= self.ends[at]) != self.negated


class _Segment:
    """The pieces of a glob between two stars: literal runs, ``?`` (``None``) and sets.
    Each matches a fixed number of characters, so the segment has a fixed ``width``."""

    __slots__ = ("pieces", "width")

    def __init__(self, pieces: list[str | _CharSet | None]) -> None:
        self.pieces = pieces
        self.width = sum(len(p) if isinstance(p, str) else 1 for p in pieces)

    def at(self, name: str, pos: int) -> bool:
        """Whether the segment matches ``name`` at ``pos`` (which leaves ``width`` characters)."""
        for piece in self.pieces:
            if isinstance(piece, str):
                if not name.startswith(piece, pos):
                    return False
                pos += len(piece)
            else:
                if piece is not None and name[pos] not in piece:
                    return False
                pos += 1
        return True

    def find(self, name: str, start: int, stop: int) -> int:
        """The first position from ``start`` where the segment matches and ends by ``stop``, or -1."""
        last = stop - self.width
        first = self.pieces[0]
        pos = start
        while pos <= last:
            if isinstance(first, str):  # jump to the next place its literal start occurs
                pos = name.find(first, pos, last + len(first))
                if pos < 0 or len(self.pieces) == 1:
                    return pos
            if self.at(name, pos):
                return pos
            pos += 1
        return -1


class _Glob:
    """A compiled glob: its segments between stars (a single one when it has no star)."""

    def __init__(self, pattern: str) -> None:
        segments: list[list[str | _CharSet | None]] = [[]]
        literal: list[str] = []

        def piece(p: str | _CharSet | None) -> None:
            if literal:
                segments[-1].append("".join(literal))
                literal.clear()
            segments[-1].append(p)

        last_close = pattern.rfind("]")
        i, n = 0, len(pattern)
        while i < n:
            c = pattern[i]
            i += 1
            if c == "*":
                if literal:
                    segments[-1].append("".join(literal))
                    literal.clear()
                if segments[-1] or len(segments) == 1:
                    segments.append([])
            elif c == "?":
                piece(None)
            elif c == "[":
                j = i + 1 if pattern.startswith("!", i) else i
                j = j + 1 if pattern.startswith("]", j) else j
                if j > last_close:  # no `]` at or after j: a literal `[`, found in one comparison
                    literal.append(c)
                else:
                    j = pattern.index("]", j)  # read once: the set takes all it scans
                    piece(_CharSet(pattern[i:j]))
                    i = j + 1
            else:
                literal.append(c)
        if literal:
            segments[-1].append("".join(literal))
        self.head = _Segment(segments[0])
        self.middle = [_Segment(s) for s in segments[1:-1]]
        self.tail = _Segment(segments[-1]) if len(segments) > 1 else None

    def match(self, name: str) -> bool:
        head, tail = self.head, self.tail
        if tail is None:
            return len(name) == head.width and head.at(name, 0)
        stop = len(name) - tail.width
        if stop < head.width or not head.at(name, 0) or not tail.at(name, stop):
            return False
        pos = head.width
        for segment in self.middle:  # the leftmost place for each leaves the most room for the rest
            pos = segment.find(name, pos, stop)
            if pos < 0:
                return False
            pos += segment.width
        return True


@functools.lru_cache(maxsize=256)
def _compile_glob(pattern: str) -> _Glob:
    return _Glob(pattern)


def glob_match(name: str, pattern: str) -> bool:
    """Whether ``name`` matches the shell-style ``pattern``: :func:`fnmatch.fnmatchcase`'s
    answer (and :func:`fnmatch.fnmatch`'s, on POSIX), in time linear in the pattern.

    ``*`` is any run of characters, ``?`` one character, ``[seq]`` / ``[!seq]`` one
    character in or not in ``seq`` (with ``a-z`` ranges), all read exactly as fnmatch
    reads them, quirks included; a ``[`` with no ``]`` after it is a literal ``[``.

    fnmatch translates the pattern into a regular expression: it scans to the end of
    the pattern for every ``[`` that has no ``]`` after it (quadratic: seconds at
    16,000 characters), and Python's regex compiler fills a table entry for every code
    point a ``[...]`` range spans (tens of thousands of steps per range). Here, the
    pattern is read once (linear): a ``[`` whose set cannot close is known so by one
    comparison with the position of the pattern's last ``]``; otherwise the scan to its
    ``]`` covers exactly the characters the set then takes, and a set's ranges are
    found by one more pass over them. A set is kept as sorted code point spans (the
    one step that is not linear: r log r for a set of r characters and ranges), so a
    character is looked up in it by bisection.

    Matching a name of n characters: the pieces between stars have fixed widths; the
    first and last are compared in place, each one between is looked for at increasing
    positions (never revisited), each try comparing at most n characters, so at worst
    n * n steps however long the pattern (fnmatch's regular expression has the same
    bound; a literal piece is found by :meth:`str.find`). Compiled globs are cached.
    """
    return _compile_glob(pattern).match(name)


# -- command lines as they run -------------------------------------------------------

#: characters that would drive a terminal, reorder a line or not show at all (C0 and C1
#: controls, DEL, the bidirectional controls, zero-width and format characters, line and
#: paragraph separators, variation selectors, tag characters, the blank Hangul fillers): an
#: argument holding one is shown in ``$'...'`` with it escaped
_UNSAFE_CHAR = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    "\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000e0000-\U000e0fff]"
)
_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape_char(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if _UNSAFE_CHAR.match(ch):
        code = ord(ch)
        if code < 0x80:
            return f"\\x{code:02x}"
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return ch


def shell_quote(arg: str) -> str:
    """One argument as a POSIX shell reads it back whole: :func:`shlex.quote`, or, when it
    holds a control or bidi character, bash's ``$'...'`` with those characters escaped, so
    the argument is shown whole and cannot drive the terminal it is shown on."""
    if not _UNSAFE_CHAR.search(arg):
        return shlex.quote(arg)
    return "$'" + "".join(_escape_char(ch) for ch in arg) + "'"


def shell_line(argv: Iterable[str]) -> str:
    """A command line as it will run: each argument whole, quoted by :func:`shell_quote`."""
    return " ".join(shell_quote(str(a)) for a in argv)


def shown_text(text: str) -> str:
    """A shell command string (a hook's ``command``) shown as written, or in ``$'...'``
    when it holds a control or bidi character."""
    return shell_quote(text) if _UNSAFE_CHAR.search(text) else text
