"""A ``pre_tool_call`` guard: refuse calls whose arguments name a protected file.

Runs for every tool (built-in, MCP, other plugins'), after the policy engine
allowed the call. Each string argument (and each string in a list argument) is
split into words, and each word is matched against the ``[example].protected``
globs, as a whole path and by its file name: ``{"path": "config/.env"}`` and
``{"command": "cat .env"}`` are both refused. It is a safety net, not a
sandbox: the policy engine is what decides what may run.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from kairox import Block, ToolCall

from .config import ExampleConfig

__all__ = ["check_call", "protected_word"]


def _words(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield from value.split()
    elif isinstance(value, list):
        for item in value:
            yield from _words(item)


def protected_word(word: str, globs: list[str]) -> str | None:
    """The glob ``word`` matches (as a path or by its file name), else ``None``."""
    word = word.strip("'\"")
    name = PurePosixPath(word).name
    for glob in globs:
        if fnmatch.fnmatchcase(word, glob) or fnmatch.fnmatchcase(name, glob):
            return glob
    return None


@lru_cache(maxsize=16)
def _any_glob(globs: tuple[str, ...]) -> Callable[[str], object]:
    """One compiled pattern that matches what any of ``globs`` matches (``fnmatchcase``'s
    translation of each): most words match none, and are tested once, not once per glob."""
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs) or "(?!)").match


def _name(word: str) -> str:
    """``PurePosixPath(word).name``, without building the path when ``word`` has no ``/``."""
    if "/" in word or word in (".", ""):
        return PurePosixPath(word).name
    return word


def check_call(call: ToolCall) -> Block | None:
    config: ExampleConfig = call.runtime.config.section("example")
    globs = config.protected
    matches = _any_glob(tuple(globs))
    for key, value in call.arguments.items():
        for word in value.split() if isinstance(value, str) else _words(value):
            bare = word.strip("'\"")
            if not matches(bare) and (("/" not in bare and bare not in (".", "")) or not matches(_name(bare))):
                continue  # no glob matches it (nor its file name, when that is another word): None
            glob = protected_word(word, globs)
            if glob is not None:
                return Block(f"argument {key!r} names {word!r}, protected by {glob!r} ([example].protected)")
    return None
