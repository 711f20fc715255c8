"""Glob matching in time linear in the text, for permission rules (:mod:`.rules`).

A rule's pattern and the text it is matched against (a command, a path a tool
call names) both come from outside. Translated to a regular expression, a glob
with k stars (``.*a.*b.*c``) backtracks about n**k steps on a text of n
characters that does not match. :class:`Glob` is instead a Thompson NFA run
breadth-first: the text is read once, left to right, and the state is the set of
pattern positions reachable so far, one bit each in an ``int``. Each character
costs a fixed number of operations on that ``int`` (its size is the pattern's
length, at most a rule's 4,096 characters): time is linear in the text.

Two dialects, both matching the whole text (or, with ``stop``, a prefix of it):

- ``"commands"``: ``*`` is any run of characters (newlines too), all else literal;
- ``"paths"``: ``*`` is a run without ``/``, ``?`` one character other than ``/``,
  ``**`` any run, ``**/`` nothing or any run that ends in ``/``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Literal

__all__ = ["Glob", "compile_glob"]

Dialect = Literal["commands", "paths"]
_STARS = ("star", "any", "dir")  # [^/]*, .*, (?:.*/)?


def _tokens(pattern: str, dialect: Dialect) -> list[tuple[str, str]]:
    """``(kind, char)`` items: ``("lit", c)``, ``("one", "")`` for ``?``, or one of :data:`_STARS`."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        if dialect == "commands":
            out.append(("any", "") if pattern[i] == "*" else ("lit", pattern[i]))
            i += 1
        elif pattern.startswith("**/", i):
            out.append(("dir", ""))
            i += 3
        elif pattern.startswith("**", i):
            out.append(("any", ""))
            i += 2
        elif pattern[i] in "*?":
            out.append(("star" if pattern[i] == "*" else "one", ""))
            i += 1
        else:
            out.append(("lit", pattern[i]))
            i += 1
    return _reduce_star_runs(out)


def _reduce_star_runs(tokens: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each run of adjacent stars as the fewest that match the same texts, so that at most
    two stars are adjacent (``*`` then ``**/``) and the closure in :meth:`Glob._close`
    takes a fixed number of passes, whatever the pattern (``**/**/**/...``).

    A ``**`` in a run makes it ``**``; so does a ``**/`` before a ``*``
    (``(?:.*/)?[^/]*`` is any text: the part up to the last ``/``, then the rest);
    otherwise every ``*`` comes before every ``**/``, and two of a kind are one."""
    out: list[tuple[str, str]] = []
    run: list[str] = []
    for token in [*tokens, ("end", "")]:
        if token[0] in _STARS:
            run.append(token[0])
            continue
        if run:
            if "any" in run or ("dir" in run and "star" in run[run.index("dir") :]):
                out.append(("any", ""))
            else:
                out += [(kind, "") for kind in ("star", "dir") if kind in run]
            run = []
        if token[0] != "end":
            out.append(token)
    return out


class Glob:
    """A compiled glob (:func:`compile_glob`).

    States are bit positions: bit ``i`` is "the text read so far matches the tokens
    before token ``i``"; a ``**/`` has two bits (before it, and inside its run) and the
    last bit is the end of the pattern. Reading a character moves each bit by what its
    token does with that character: one step on (``lit``, ``one``; ``**/`` on its ``/``),
    stay (a star's run), or two steps on (from before ``**/`` over its ``/``). Then
    every bit before a star also sets the bit after it (the star matching nothing)."""

    def __init__(self, pattern: str, dialect: Dialect) -> None:
        self.pattern = pattern
        lit: dict[str, int] = {}
        one = star = any_ = dir_entry = dir_inside = 0
        bit = 0
        for kind, char in _tokens(pattern, dialect):
            b = 1 << bit
            if kind == "lit":
                lit[char] = lit.get(char, 0) | b
            elif kind == "one":
                one |= b
            elif kind == "star":
                star |= b
            elif kind == "any":
                any_ |= b
            else:  # "dir": the bit before it, then the bit of its run
                dir_entry |= b
                dir_inside |= b << 1
                bit += 1
            bit += 1
        self._end = 1 << bit
        self._lit = lit
        # (one step on, two steps on, stay) for '/' and for any other character
        self._slash = (dir_entry | dir_inside, dir_entry, any_ | dir_inside)
        self._other = (dir_entry | one, 0, any_ | dir_inside | star)
        self._skip1 = star | any_  # a star matching nothing
        self._skip2 = dir_entry  # **/ matching nothing
        self._start = self._close(1)

    def _close(self, state: int) -> int:
        """``state`` with the bits after each star whose bit is set (a fixed number of passes:
        runs of stars are reduced, so a chain is at most ``*`` then ``**/`` then a token)."""
        while True:
            more = state | ((state & self._skip1) << 1) | ((state & self._skip2) << 2)
            if more == state:
                return state
            state = more

    def match(self, text: str, stop: Callable[[str], bool] | None = None) -> bool:
        """Whether the glob matches all of ``text``, or (with ``stop``) a prefix of it that
        is followed by a character ``stop`` accepts. Reads each character once."""
        state, end, lit = self._start, self._end, self._lit
        for char in text:
            if stop is not None and state & end and stop(char):
                return True
            step1, step2, stay = self._slash if char == "/" else self._other
            step1 |= lit.get(char, 0)
            state = ((state & step1) << 1) | ((state & step2) << 2) | (state & stay)
            if not state:
                return False
            state = self._close(state)
        return bool(state & end)


@functools.lru_cache(maxsize=256)
def compile_glob(pattern: str, dialect: Dialect) -> Glob:
    """The :class:`Glob` for ``pattern`` (cached: a rule is matched on every call)."""
    return Glob(pattern, dialect)
