"""What every built-in tool shares: its environment, argument checking, paths, read-only specs."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs

from kairox import ToolContext, ToolResult, ToolSpec
from kairox.files import is_inside, relative_text, resolve_path

from ._args import ArgumentError, check_arguments
from ._config import ToolsConfig
from ._output import safe_text

__all__ = ["BuiltinTool", "PathProblem", "ToolEnv", "error", "object_schema", "read_only_spec"]


class PathProblem(Exception):
    """A path argument the OS cannot resolve; the message says which and why (the tool's error result)."""


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

    def resolve(self, value: str, what: str = "path") -> Path:
        """A path argument as the policy engine resolves it (:func:`kairox.files.resolve_path`: ``~``,
        relative to the workspace, ``..``, symbolic links followed). Raises :class:`PathProblem`."""
        try:
            return resolve_path(value, self.workspace)
        except (ValueError, OSError, RuntimeError) as exc:
            raise PathProblem(f"cannot use the {what} {value!r}: {exc}") from None

    def display(self, path: Path) -> str:
        """A path as the model should see it: relative to the workspace when inside it."""
        rel = relative_text(path, self.workspace)
        return safe_text(str(path) if rel is None else rel)

    def is_inside_workspace(self, path: Path) -> bool:
        """``path`` (resolved, :func:`kairox.files.resolve_path`) is the workspace or below it."""
        return is_inside(path, self.workspace)


def error(message: str, **structured: Any) -> ToolResult:
    """An error result the model can act on."""
    return ToolResult.from_text(message, is_error=True, structured={"error": message, **structured})


def object_schema(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    """A tool's input schema: an object of ``properties`` (``required`` ones must be given) and no others."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def read_only_spec(id: str, title: str, description: str, input_schema: dict[str, Any]) -> ToolSpec:
    """The spec of a tool that only reads this machine: local, read, no path it writes."""
    return ToolSpec(
        id=id,
        title=title,
        description=description,
        input_schema=input_schema,
        domain="local",
        capability="read",
        path_arguments=(),
        annotations={"readOnlyHint": True},
    )


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
        try:
            return await self.run(args, context)
        except PathProblem as exc:  # from ToolEnv.resolve, in any tool
            return error(str(exc))

    async def run(self, args: dict[str, Any], context: ToolContext) -> ToolResult:
        raise NotImplementedError
