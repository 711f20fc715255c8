"""What every built-in tool shares: its environment, argument checking, path display."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs

from kairox import ToolContext, ToolResult, ToolSpec

from ._args import ArgumentError, check_arguments
from ._config import ToolsConfig
from ._output import safe_text

__all__ = ["BuiltinTool", "ToolEnv", "error"]


@attrs.frozen
class ToolEnv:
    """What the tools of one runtime work with."""

    workspace: Path
    config: ToolsConfig = attrs.field(factory=ToolsConfig)
    env: Mapping[str, str] = attrs.field(factory=dict)

    @classmethod
    def create(
        cls, workspace: Path, config: ToolsConfig | None = None, env: Mapping[str, str] | None = None
    ) -> ToolEnv:
        return cls(Path(os.path.realpath(workspace)), config or ToolsConfig(), dict(os.environ if env is None else env))

    def display(self, path: Path) -> str:
        """A path as the model should see it: relative to the workspace when inside it."""
        try:
            rel = path.relative_to(self.workspace)
        except ValueError:
            return safe_text(str(path))
        return safe_text(str(rel))

    def is_inside_workspace(self, path: Path) -> bool:
        return path == self.workspace or self.workspace in path.parents


def error(message: str, **structured: Any) -> ToolResult:
    """An error result the model can act on."""
    return ToolResult.from_text(message, is_error=True, structured={"error": message, **structured})


class BuiltinTool:
    """Base of the built-in tools: checks the arguments, then :meth:`run`."""

    SPEC: ClassVar[ToolSpec]

    def __init__(self, env: ToolEnv) -> None:
        self.env = env

    @property
    def spec(self) -> ToolSpec:
        return self.SPEC

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        try:
            args = check_arguments(self.SPEC.input_schema, arguments)
        except ArgumentError as exc:
            return error(f"{self.SPEC.id}: invalid arguments: {exc}")
        return await self.run(args, context)

    async def run(self, args: dict[str, Any], context: ToolContext) -> ToolResult:
        raise NotImplementedError
