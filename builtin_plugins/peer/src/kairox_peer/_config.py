"""What every configured peer process has, and how files are routed to it.

:class:`PeerServerConfig` is the base of ``[lsp_servers.NAME]`` and
``[dap_servers.NAME]`` entries. Files are routed to a server by its
``file_patterns`` (globs matched against the workspace-relative path and the
file name, :func:`matches`) or, when it declares none, by its languages
(``python`` -> ``*.py``, ``*.pyi``: :func:`language_patterns`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any

import attrs

from kairox.ext import ValueMismatch, inherit_env
from kairox.files import glob_match

__all__ = ["EXTENSION_LANGUAGES", "PeerServerConfig", "child_env", "language_patterns", "matches"]

#: file extension -> language id (LSP's ``languageId``; the default patterns of a language)
EXTENSION_LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".rs": "rust",
    ".go": "go",
    ".ts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript",
    ".jsx": "javascriptreact",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".java": "java",
    ".kt": "kotlin",
    ".rb": "ruby",
    ".lua": "lua",
    ".sh": "shellscript",
    ".bash": "shellscript",
    ".toml": "toml",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".md": "markdown",
    ".zig": "zig",
    ".swift": "swift",
    ".cs": "csharp",
    ".php": "php",
}


def _positive(_inst: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if value <= 0:
        raise ValueMismatch(f"{attribute.name} must be greater than 0, got {value!r}")


def _non_empty(_inst: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value.strip():
        raise ValueMismatch(f"{attribute.name} must not be empty")


@attrs.frozen
class PeerServerConfig:
    """What every configured peer process has (the base of ``[lsp_servers.NAME]`` and
    ``[dap_servers.NAME]`` entries): how to start it, the files it is for, its timeouts.

    ``env`` values are added to the runtime's environment; an empty value means
    "the same-named variable of the environment kairox runs in" (:func:`child_env`).
    Files are routed by ``file_patterns`` (globs), else by ``languages``
    (:func:`language_patterns`).
    """

    command: str = attrs.field(validator=_non_empty)
    args: list[str] = attrs.field(factory=list)
    languages: list[str] = attrs.field(factory=list)
    file_patterns: list[str] = attrs.field(factory=list)
    env: dict[str, str] = attrs.field(factory=dict)
    startup_timeout: float = attrs.field(default=30.0, validator=_positive)
    shutdown_timeout: float = attrs.field(default=3.0, validator=_positive)
    request_timeout: float = attrs.field(default=30.0, validator=_positive)


def language_patterns(languages: Iterable[str]) -> list[str]:
    """The globs of the files of ``languages`` (``python`` -> ``*.py``, ``*.pyi``), from :data:`EXTENSION_LANGUAGES`."""
    wanted = set(languages)
    return [f"*{ext}" for ext, lang in EXTENSION_LANGUAGES.items() if lang in wanted]


def matches(patterns: list[str], relative: PurePath) -> bool:
    """Does a file (workspace-relative path, or absolute outside it) match one of ``patterns``?"""
    text = relative.as_posix()
    name = relative.name
    for pattern in patterns:
        if glob_match(name, pattern) or glob_match(text, pattern):
            return True
        if pattern.startswith("**/") and glob_match(text, pattern[3:]):
            return True
    return False


def child_env(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The server's environment: ``base`` plus ``extra`` ("" = take the same-named base variable,
    see :func:`kairox.ext.inherit_env`)."""
    return {**base, **inherit_env(extra, base)}
