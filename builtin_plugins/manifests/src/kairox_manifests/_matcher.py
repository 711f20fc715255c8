"""A bundle hook's ``matcher``: a regular expression over tool names, run by RE2.

The expression comes from a bundle and is matched against every tool call's names.
Python's ``re`` backtracks: ``(a|aa)+b`` takes exponential time on a name of a few dozen
characters, and ``\\w*\\w*\\w*\\w*x`` n**4 steps, so bounding the names alone bounds
nothing. RE2 (``google-re2``) runs in time linear in the text whatever the expression,
with bounded memory, so any matcher it accepts costs one pass over each name.

RE2 accepts the expressions tool-name matchers are written in (``Edit|Write``,
``mcp__github__.*``, ``(?i)notebook.*``, classes, groups, counted repeats). It has no
lookaround and no backreferences, its ``\\w``, ``\\d`` and ``\\s`` are ASCII, and it
spells the end of the text ``\\z``. A matcher it cannot run is never run by an engine that
can hang: the manifest reader reports it with RE2's reason and leaves the hook out, except
a ``pre_tool_call`` hook's, which is kept as a guard that blocks every call, saying why
(a guard that cannot run fails closed).
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

__all__ = ["Matcher", "compile_matcher"]


class Matcher(Protocol):
    """A compiled matcher: ``fullmatch(name)`` is a match object or ``None``."""

    def fullmatch(self, text: str) -> Any: ...


@functools.lru_cache(maxsize=256)
def compile_matcher(pattern: str) -> Matcher:
    """The compiled ``pattern``; ``ValueError`` with RE2's reason when it cannot run it."""
    import re2

    options = re2.Options()
    options.log_errors = False  # the reason goes in the error, not on stderr
    try:
        return re2.compile(pattern, options)  # type: ignore[no-any-return]  # re2 ships no types
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ValueError(
            f"not a regular expression kairox can match in linear time (RE2 syntax: no lookaround "
            f"or backreferences; \\z for the end): {reason}"
        ) from None
