"""The built-in tools, by class (imported when the provider starts, not when it is built)."""

from __future__ import annotations

from kairox import Tool

from ._base import BuiltinTool, ToolEnv
from ._fs import FsList, FsRead, FsWrite
from ._grep import SearchGrep
from ._shell import ShellExec

__all__ = ["BUILTIN_TOOLS", "builtin_tools"]

BUILTIN_TOOLS: tuple[type[BuiltinTool], ...] = (FsRead, FsWrite, FsList, ShellExec, SearchGrep)


def builtin_tools(env: ToolEnv) -> list[Tool]:
    """The built-in tools for ``env``, less those ``[tools] disabled`` names."""
    return [cls(env) for cls in BUILTIN_TOOLS if cls.SPEC.id not in env.config.disabled]
