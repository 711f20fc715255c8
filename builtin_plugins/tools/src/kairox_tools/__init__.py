"""Built-in tools: fs.read, fs.write, fs.list, shell.exec, search.grep.

Registered through the ``kairox`` entry point (``kairox_tools.hooks``) as the
``builtin-tools`` provider; configured by the optional ``[tools]`` section.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.lazy import lazy_exports

if TYPE_CHECKING:
    from ._base import BuiltinTool, ToolEnv
    from ._config import TOOL_IDS, ToolsConfig
    from ._fs import FsList, FsRead, FsWrite
    from ._grep import SearchGrep
    from ._provider import BUILTIN_TOOLS, BuiltinToolsProvider, builtin_tools
    from ._shell import ShellExec

# loaded on first use: the entry point imports kairox_tools.hooks, which must stay cheap
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["BuiltinTool", "ToolEnv"], "_base"),
    **dict.fromkeys(["TOOL_IDS", "ToolsConfig"], "_config"),
    **dict.fromkeys(["FsList", "FsRead", "FsWrite"], "_fs"),
    "SearchGrep": "_grep",
    **dict.fromkeys(["BUILTIN_TOOLS", "BuiltinToolsProvider", "builtin_tools"], "_provider"),
    "ShellExec": "_shell",
}

__all__ = [
    "BUILTIN_TOOLS",
    "TOOL_IDS",
    "BuiltinTool",
    "BuiltinToolsProvider",
    "FsList",
    "FsRead",
    "FsWrite",
    "SearchGrep",
    "ShellExec",
    "ToolEnv",
    "ToolsConfig",
    "builtin_tools",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
