"""A ``pre_tool_call`` guard: refuse calls whose arguments name a protected file.

Runs for every tool (built-in, MCP, other plugins'), after the policy engine
allowed the call. Each string argument (and each string in a list argument) is
split into words, and each word is matched against the ``[example].protected``
globs, as a whole path and by its file name: ``{"path": "config/.env"}`` and
``{"command": "cat .env"}`` are both refused. A word that names an existing file
is matched again where it leads (``notes.md`` linked to ``~/.ssh/id_rsa``). The
globs are matched in time linear in the word (:func:`kairox.files.glob_match`):
arguments are outside input. It is a safety net, not a sandbox: the policy
engine is what decides what may run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from kairox import Block, ToolCall
from kairox.files import glob_match, resolve_path

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
        if glob_match(word, glob) or glob_match(name, glob):
            return glob
    return None


def _leads_to(word: str, workspace: Path) -> str | None:
    """Where ``word`` leads when it names an existing file through a link, else ``None``."""
    if not word or len(word) > 4096 or "\0" in word:
        return None
    try:
        given = Path(os.path.expanduser(word))
        given = given if given.is_absolute() else workspace / given
        if not os.path.lexists(given):
            return None
        real = str(resolve_path(word, workspace))
    except (OSError, ValueError, RuntimeError):
        return None
    return real if real != os.path.normpath(given) else None


def check_call(call: ToolCall) -> Block | None:
    config: ExampleConfig = call.runtime.config.section("example")
    globs = config.protected
    workspace = Path(call.runtime.workspace)
    for key, value in call.arguments.items():
        for word in value.split() if isinstance(value, str) else _words(value):
            glob = protected_word(word, globs)
            if glob is not None:
                return Block(f"argument {key!r} names {word!r}, protected by {glob!r} ([example].protected)")
            real = _leads_to(word.strip("'\""), workspace)
            glob = protected_word(real, globs) if real is not None else None
            if glob is not None:
                return Block(f"argument {key!r} names {word!r}, which leads to {real!r}, protected by {glob!r}")
    return None
