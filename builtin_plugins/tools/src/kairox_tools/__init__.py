"""Built-in tools: fs.read, fs.write, fs.list, shell.exec, search.grep.

Registered through the ``kairox`` entry point (``kairox_tools.hooks``) as the
``builtin-tools`` provider; configured by the optional ``[tools]`` section.
"""

from __future__ import annotations

from ._base import BuiltinTool, ToolEnv
from ._config import TOOL_IDS, ToolsConfig
from ._fs import FsList, FsRead, FsWrite
from ._grep import SearchGrep
from ._provider import BUILTIN_TOOLS, BuiltinToolsProvider, builtin_tools
from ._shell import ShellExec

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
