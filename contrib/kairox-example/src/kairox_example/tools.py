"""The example's tools: ``example.wordcount`` and ``example.checksum``.

A :class:`~kairox.declare.ToolSet` turns each function into a tool: the input schema comes
from the signature, the descriptions from the docstring, and kairox checks every call's
arguments against that schema before the function runs. Both tools are read-only and local
(``domain="local"``, ``capability="read"``), so the default policy lets them run without
asking. A file that is missing, too large or outside the workspace gives an error *result*
(``is_error=True``): the model sees what went wrong; raising is for bugs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

from kairox import ToolContext, ToolResult
from kairox.declare import ToolSet
from kairox.files import is_inside, resolve_path

from .config import ExampleConfig

__all__ = ["checksum", "tools", "wordcount"]

tools = ToolSet("example")


class FileProblem(Exception):
    """A file the tools cannot read; becomes an error result."""


def read_file(context: ToolContext, path: str) -> bytes:
    """The bytes of ``path`` in the workspace, within ``[example] max_bytes``."""
    assert context.runtime is not None  # kairox calls tools with their runtime
    workspace = context.runtime.workspace
    config: ExampleConfig = context.runtime.config.section("example")
    target: Path = resolve_path(path, workspace)  # as the OS would: relative to the workspace, `..`, links
    if not is_inside(target, workspace):
        raise FileProblem(f"{path}: outside the workspace")
    if not target.exists():
        raise FileProblem(f"{path}: no such file")
    if not target.is_file():
        raise FileProblem(f"{path}: not a regular file")
    size = target.stat().st_size
    if size > config.max_bytes:
        raise FileProblem(f"{path}: {size} bytes, more than max_bytes = {config.max_bytes} ([example] in kairox.toml)")
    return target.read_bytes()


@tools.tool(domain="local", capability="read", title="Word count")
def wordcount(path: str, context: ToolContext) -> ToolResult:
    """Count the lines, words and characters of a text file in the workspace.

    Args:
        path: file path, relative to the workspace.
    """
    try:
        text = read_file(context, path).decode("utf-8", errors="replace")
    except FileProblem as exc:
        return ToolResult.from_text(str(exc), is_error=True)
    counts = {"path": path, "lines": len(text.splitlines()), "words": len(text.split()), "chars": len(text)}
    summary = f"{path}: {counts['lines']} lines, {counts['words']} words, {counts['chars']} characters"
    return ToolResult.from_text(summary, structured=counts)


@tools.tool(domain="local", capability="read", title="Checksum")
def checksum(
    path: str, algorithm: Literal["sha256", "sha1", "md5", "blake2b"] = "sha256", *, context: ToolContext
) -> ToolResult:
    """The checksum of a file in the workspace (sha256 unless another algorithm is named).

    Args:
        path: file path, relative to the workspace.
        algorithm: the hash function.
    """
    try:
        data = read_file(context, path)
    except FileProblem as exc:
        return ToolResult.from_text(str(exc), is_error=True)
    digest = hashlib.new(algorithm, data).hexdigest()
    return ToolResult.from_text(
        f"{algorithm}  {digest}  {path}", structured={"path": path, "algorithm": algorithm, "digest": digest}
    )
