"""The kernel's own hookimpls: it owns the ``[policy]`` and ``[instructions]`` sections."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .hookspecs import hookimpl

if TYPE_CHECKING:  # the work is imported inside the hooks: building the plugin host stays cheap
    from ._config import ConfigSection
    from ._registrar import Registrar
    from ._runtime import Runtime
    from ._types import ServerStatus
    from .protocols import ToolProvider


class KernelTools:
    """The kernel's own tools: ``tools.search`` (find tools left out of a token budget)."""

    name = "kairox"

    async def start(self, runtime: Runtime) -> None:
        from ._context import tools_search_tool

        runtime.tools.add(tools_search_tool(runtime), provider=self.name)

    async def stop(self) -> None:
        return None

    def status(self) -> Sequence[ServerStatus]:
        return ()


@hookimpl
def kairox_register_tool_providers(registrar: Registrar[ToolProvider], runtime: Runtime) -> None:
    registrar.add(KernelTools())


@hookimpl
def kairox_register_config_sections(registrar: Registrar[ConfigSection]) -> None:
    from ._config import ConfigSection
    from ._instructions import InstructionsConfig
    from ._policy import PolicyConfig

    registrar.add(
        ConfigSection(
            name="policy",
            schema=PolicyConfig,
            description="approval and sandbox policy, extra writable roots, per-tool rules",
        )
    )
    registrar.add(
        ConfigSection(
            name="instructions",
            schema=InstructionsConfig,
            description="instructions for every session: inline text, files, AGENTS.md/CLAUDE.md discovery",
        )
    )
