"""The ``agents`` provider: the agent and output-style registries of one runtime.

Cheap to build (the registration hook runs at every open): the registries and their
readers are imported when there is something to read, and ``discover`` says there is
nothing to do in a workspace where neither you nor it has a Claude agents or output-styles
folder and no output style is configured.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kairox import ConfigError

if TYPE_CHECKING:
    from kairox import Runtime, ServerStatus

    from ._registry import AgentRegistry, OutputStyleRegistry

__all__ = ["PROVIDER_NAME", "AgentsProvider", "claude_folders"]

PROVIDER_NAME = "agents"
#: the Claude folders read, under ``$HOME/.claude/`` and the workspace's ``.claude/``
FOLDERS = ("agents", "output-styles")


def claude_folders(runtime: Runtime, kind: str) -> list[tuple[str, str, Path]]:
    """``(scope, source, folder)`` of the Claude folders of ``kind``: the user's (``HOME`` of
    the runtime's environment; none without one), then the workspace's."""
    out: list[tuple[str, str, Path]] = []
    home = runtime.env.get("HOME") or runtime.env.get("USERPROFILE")
    if home:
        out.append(("user", "claude-user", Path(home) / ".claude" / kind))
    out.append(("workspace", "claude-workspace", runtime.workspace / ".claude" / kind))
    return out


class AgentsProvider:
    """The agent and output-style registries of one runtime (it provides no tools)."""

    name = PROVIDER_NAME

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._agents: AgentRegistry | None = None
        self._output_styles: OutputStyleRegistry | None = None

    @property
    def agents(self) -> AgentRegistry:
        if self._agents is None:
            from ._registry import AgentRegistry

            self._agents = AgentRegistry(self.runtime.events)
        return self._agents

    @property
    def output_styles(self) -> OutputStyleRegistry:
        if self._output_styles is None:
            from ._registry import OutputStyleRegistry

            self._output_styles = OutputStyleRegistry(self.runtime.events)
        return self._output_styles

    def _has_work(self, runtime: Runtime) -> bool:
        """A Claude folder to read, a registry a bundle filled, or a configured output style."""
        if self._agents is not None or self._output_styles is not None:
            return True
        if any(os.path.isdir(folder) for kind in FOLDERS for _s, _src, folder in claude_folders(runtime, kind)):
            return True
        if not runtime.config.raw.get("instructions"):  # the default sets no style (and imports no reader)
            return False
        try:
            return bool(runtime.config.section("instructions").output_style)
        except (ConfigError, KeyError):  # a broken (or absent) [instructions] reports itself
            return False

    async def discover(self, runtime: Runtime) -> bool:
        """Read the Claude agent and output-style folders (in a worker thread); ``False``
        (nothing to do here) when there are none and no style is configured."""
        if not self._has_work(runtime):
            return False
        import anyio

        agents = await anyio.to_thread.run_sync(self.agents.read_folders, runtime)
        self.agents.apply_folders(agents)
        styles = await anyio.to_thread.run_sync(self.output_styles.read_folders, runtime)
        self.output_styles.apply_folders(styles)
        return True

    async def start(self, runtime: Runtime) -> None:
        """Check the configured output style: a name that is none is a config error in
        ``runtime.config.errors`` (``kairox status`` fails on it). Here, not at discover: bundle
        loaders add their styles in their own discover, which may run after this one's. (A turn
        reports the name as a problem either way.)"""
        try:
            self.output_styles.selected(runtime.config)
        except ConfigError as exc:
            runtime.config.errors.append(exc)

    async def stop(self) -> None:
        return None

    def status(self) -> Sequence[ServerStatus]:
        return ()
