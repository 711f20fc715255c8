"""The kernel's own hookimpls: it owns the ``[policy]`` and ``[files]`` sections."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .hookspecs import hookimpl

if TYPE_CHECKING:  # the work is imported inside the hooks: building the plugin host stays cheap
    from ._config import ConfigSection
    from ._registrar import Registrar
    from ._runtime import Runtime
    from ._types import ServerStatus
    from .protocols import ToolProvider


class KernelTools:
    """The kernel's own tools: ``tools.search`` and ``skills.search`` (find what a budget left out)."""

    name = "kairox"

    async def start(self, runtime: Runtime) -> None:
        from ._context import skills_search_tool, tools_search_tool

        runtime.tools.replace_provider(self.name, [tools_search_tool(runtime), skills_search_tool(runtime)])

    async def stop(self) -> None:
        return None

    def status(self) -> Sequence[ServerStatus]:
        return ()


# tryfirst: the kernel claims its names (the "kairox" provider, the [policy] section) before
# any plugin, which pluggy's order (last registered first) would otherwise call first
@hookimpl(tryfirst=True)
def kairox_register_tool_providers(registrar: Registrar[ToolProvider], runtime: Runtime) -> None:
    registrar.add(KernelTools())


def policy_needs_trust(table: Mapping[str, Any]) -> bool:
    """Whether a workspace ``[policy]`` table asks for what only trust allows: an ``allow``
    rule or more writable roots (narrowing needs no trust: it always applies)."""
    rules = table.get("rules")
    allows = isinstance(rules, Mapping) and any(v == "allow" for v in rules.values())
    return allows or bool(table.get("writable_roots"))


@hookimpl(tryfirst=True)
def kairox_register_config_sections(registrar: Registrar[ConfigSection]) -> None:
    from ._config import ConfigSection
    from ._contained import FilesConfig, merge_files
    from ._policy import PolicyConfig
    from ._policy_merge import merge_policy

    registrar.add(
        ConfigSection(
            name="policy",
            schema=PolicyConfig,
            description="approval and sandbox policy, extra writable roots, per-tool rules",
            # a workspace only narrows the user's policy (only a trusted one may add allow rules)
            merge=merge_policy,
            needs_trust=policy_needs_trust,
        )
    )
    registrar.add(
        ConfigSection(
            name="files",
            schema=FilesConfig,
            description="folders outside a root that links inside it may reach (your own kairox.toml only)",
            merge=merge_files,
            needs_trust=False,  # its merge takes the user's files only
        )
    )
