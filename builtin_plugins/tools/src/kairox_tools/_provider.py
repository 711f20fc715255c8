"""The tool provider that registers the built-in tools."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kairox import ServerStatus, Tool

from ._base import BuiltinTool, ToolEnv
from ._config import ToolsConfig
from ._fs import FsList, FsRead, FsWrite
from ._grep import SearchGrep
from ._shell import ShellExec

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["BUILTIN_TOOLS", "BuiltinToolsProvider", "builtin_tools"]

logger = logging.getLogger(__name__)

BUILTIN_TOOLS: tuple[type[BuiltinTool], ...] = (FsRead, FsWrite, FsList, ShellExec, SearchGrep)


def builtin_tools(env: ToolEnv) -> list[Tool]:
    """The built-in tools for ``env``, less those ``[tools] disabled`` names."""
    return [cls(env) for cls in BUILTIN_TOOLS if cls.SPEC.id not in env.config.disabled]


class BuiltinToolsProvider:
    """Adds fs.read, fs.write, fs.list, shell.exec and search.grep to the runtime's registry."""

    name = "builtin-tools"

    def __init__(self) -> None:
        self._runtime: Runtime | None = None

    async def start(self, runtime: Runtime) -> None:
        config = runtime.config.section("tools") if "tools" in runtime.config.sections else ToolsConfig()
        env = ToolEnv.create(runtime.workspace, config, runtime.env)
        tools = builtin_tools(env)
        runtime.tools.replace_provider(self.name, tools)
        self._runtime = runtime
        logger.debug("registered %d built-in tools", len(tools))

    async def stop(self) -> None:
        runtime, self._runtime = self._runtime, None
        if runtime is not None:
            runtime.tools.remove_provider(self.name)

    def status(self) -> Sequence[ServerStatus]:
        return ()
