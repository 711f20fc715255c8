"""A tool provider: ``example.wordcount`` and ``example.checksum``.

Both are read-only and local (``domain="local"``, ``capability="read"``), so
the default policy lets them run without asking. A file that is missing, too
large or outside the workspace gives an error *result* (``is_error=True``):
the model sees what went wrong; raising is for bugs.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from kairox import FunctionTool, ServerStatus, ToolResult, ToolSpec
from kairox.files import is_inside, resolve_path

from .config import ExampleConfig

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["ALGORITHMS", "ExampleToolsProvider", "checksum", "wordcount"]

logger = logging.getLogger(__name__)

ALGORITHMS = ("sha256", "sha1", "md5", "blake2b")

PATH_SCHEMA = {"type": "string", "description": "file path, relative to the workspace"}


class FileProblem(Exception):
    """A file the tools cannot read; becomes an error result."""


def _read(workspace: Path, path: str, max_bytes: int) -> tuple[Path, bytes]:
    target = resolve_path(path, workspace)  # as the OS would: relative to the workspace, `..`, links followed
    if not is_inside(target, workspace):  # the runtime's workspace is resolved already
        raise FileProblem(f"{path}: outside the workspace")
    try:
        size = target.stat().st_size
    except FileNotFoundError:
        raise FileProblem(f"{path}: no such file") from None
    if not target.is_file():
        raise FileProblem(f"{path}: not a regular file")
    if size > max_bytes:
        raise FileProblem(f"{path}: {size} bytes, more than max_bytes = {max_bytes} ([example] in kairox.toml)")
    return target, target.read_bytes()


def wordcount(workspace: Path, config: ExampleConfig, path: str) -> dict[str, Any]:
    _, data = _read(workspace, path, config.max_bytes)
    text = data.decode("utf-8", errors="replace")
    return {"path": path, "lines": len(text.splitlines()), "words": len(text.split()), "chars": len(text)}


def checksum(workspace: Path, config: ExampleConfig, path: str, algorithm: str = "sha256") -> dict[str, Any]:
    if algorithm not in ALGORITHMS:
        raise FileProblem(f"unknown algorithm {algorithm!r}; one of {', '.join(ALGORITHMS)}")
    _, data = _read(workspace, path, config.max_bytes)
    return {"path": path, "algorithm": algorithm, "digest": hashlib.new(algorithm, data).hexdigest()}


def _tool(spec: ToolSpec, fn: Any, workspace: Path, config: ExampleConfig, render: Any) -> FunctionTool:
    async def call(**arguments: Any) -> ToolResult:
        try:
            # file I/O off the event loop: other tools and servers keep running meanwhile
            data = await anyio.to_thread.run_sync(lambda: fn(workspace, config, **arguments))
        except FileProblem as exc:
            return ToolResult.from_text(str(exc), is_error=True)
        except TypeError as exc:  # wrong or missing arguments from the model
            return ToolResult.from_text(f"bad arguments: {exc}", is_error=True)
        return ToolResult.from_text(render(data), structured=data)

    return FunctionTool(spec, call)


class ExampleToolsProvider:
    """Registers the example tools when the runtime starts, removes them when it stops."""

    name = "example"

    def __init__(self) -> None:
        self._runtime: Runtime | None = None

    async def start(self, runtime: Runtime) -> None:
        config: ExampleConfig = runtime.config.section("example")
        workspace = runtime.workspace
        tools = [
            _tool(
                ToolSpec(
                    "example.wordcount",
                    "Count the lines, words and characters of a text file in the workspace.",
                    input_schema={"type": "object", "properties": {"path": PATH_SCHEMA}, "required": ["path"]},
                    domain="local",
                    capability="read",
                    title="Word count",
                ),
                wordcount,
                workspace,
                config,
                lambda d: f"{d['path']}: {d['lines']} lines, {d['words']} words, {d['chars']} characters",
            ),
            _tool(
                ToolSpec(
                    "example.checksum",
                    "The checksum of a file in the workspace (sha256 unless another algorithm is named).",
                    input_schema={
                        "type": "object",
                        "properties": {"path": PATH_SCHEMA, "algorithm": {"type": "string", "enum": list(ALGORITHMS)}},
                        "required": ["path"],
                    },
                    domain="local",
                    capability="read",
                    title="Checksum",
                ),
                checksum,
                workspace,
                config,
                lambda d: f"{d['algorithm']}  {d['digest']}  {d['path']}",
            ),
        ]
        runtime.tools.replace_provider(self.name, tools)
        self._runtime = runtime
        logger.debug("example tools registered")

    async def stop(self) -> None:
        if self._runtime is not None:
            self._runtime.tools.remove_provider(self.name)
            self._runtime = None

    def status(self) -> Sequence[ServerStatus]:
        return ()  # manages no server processes
