"""The tool provider that registers the built-in tools.

Building it imports nothing of the tools themselves (commands that only register plugins,
``kairox plugins``, build every provider): :meth:`BuiltinToolsProvider.start` does."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kairox import ServerStatus

from ._config import ToolsConfig

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["BuiltinToolsProvider"]

logger = logging.getLogger(__name__)


class BuiltinToolsProvider:
    """Adds fs.read, fs.write, fs.list, shell.exec and search.grep to the runtime's registry."""

    name = "builtin-tools"

    def __init__(self) -> None:
        self._runtime: Runtime | None = None

    async def start(self, runtime: Runtime) -> None:
        from ._base import ToolEnv
        from ._builtin import builtin_tools

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
