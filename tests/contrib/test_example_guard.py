"""contrib/kairox-example's guard (``kairox_example.guard.check_call``): with linear-time globs
it refuses exactly what matching every word against every glob with fnmatch, as a path and by
its file name, refuses (the reference, written out below)."""

from __future__ import annotations

import fnmatch
import os
from pathlib import PurePosixPath
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kairox import ToolCall, ToolSpec


def _matches(word: str, globs: list[str]) -> str | None:
    name = PurePosixPath(word).name
    return next((g for g in globs if fnmatch.fnmatchcase(word, g) or fnmatch.fnmatchcase(name, g)), None)


def _real(word: str) -> str | None:
    """Where an absolute ``word`` leads when the system reads it as another path (a link, or
    ``//``, which POSIX keeps apart and Linux reads as ``/``); relative words name nothing here
    (the workspace does not exist)."""
    if not word.startswith("/") or not os.path.lexists(word):
        return None
    real = os.path.realpath(word)
    return real if real != os.path.normpath(word) else None


def _slow_check(arguments: dict[str, Any], globs: list[str]) -> str | None:
    """The guard as it was: every word against every glob, as a path and by its file name;
    then, for a word that leads elsewhere, where it leads (``os.path.realpath``)."""

    def words(value: Any) -> list[str]:
        if isinstance(value, str):
            return value.split()
        if isinstance(value, list):
            return [w for item in value for w in words(item)]
        return []

    for key, value in arguments.items():
        for word in words(value):
            bare = word.strip("'\"")
            glob = _matches(bare, globs)
            if glob is not None:
                return f"argument {key!r} names {word!r}, protected by {glob!r} ([example].protected)"
            real = _real(bare)
            glob = _matches(real, globs) if real is not None else None
            if glob is not None:
                return f"argument {key!r} names {word!r}, which leads to {real!r}, protected by {glob!r}"
    return None


class _Config:
    def __init__(self, globs: list[str]) -> None:
        from kairox_example.config import ExampleConfig

        self.example = ExampleConfig(protected=globs)

    def section(self, name: str) -> Any:
        assert name == "example"
        return self.example


class _Runtime:
    def __init__(self, globs: list[str]) -> None:
        self.config = _Config(globs)
        self.workspace = "/nonexistent-kairox-workspace"  # no word leads anywhere through a link


_PIECES = st.sampled_from(
    [".env", ".env.local", "id_rsa", "id_rsa.pub", "key.pem", "a", "b.txt", "secrets", "/", ".", "..", "'", '"', "*"]
)
_WORDS = st.lists(_PIECES, min_size=0, max_size=4).map("".join)
_GLOBS = st.lists(
    st.sampled_from([".env", ".env.*", "*.pem", "*.key", "id_rsa*", "secrets/*", "[ab]*", "?", "*", "a/b", ""]),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(_WORDS, max_size=4),
    listed=st.lists(st.lists(_WORDS, max_size=3), max_size=2),
    globs=_GLOBS,
)
@example(words=["//"], listed=[], globs=["?"])  # found by hypothesis: Linux reads // as /
def test_the_guard_refuses_what_matching_glob_by_glob_refuses(
    words: list[str], listed: list[list[str]], globs: list[str]
) -> None:
    from kairox_example.guard import check_call

    arguments: dict[str, Any] = {"command": " ".join(words), "paths": [" ".join(x) for x in listed], "n": 3}
    call = ToolCall(ToolSpec("t.x", domain="local", capability="read"), arguments, _Runtime(globs))  # type: ignore[arg-type]
    block = check_call(call)
    assert (block.reason if block is not None else None) == _slow_check(arguments, globs)
