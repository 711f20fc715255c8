"""Child processes of plugins (hook scripts, workers): bounded output, interpreters.

Process groups, reaping, exit descriptions and the bounded record of a stream
(:class:`~kairox_process.OutputTail`) are in kairox_process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream

from kairox_process import OutputTail

__all__ = ["drain_into", "interpreter_for", "read_bounded"]


async def read_bounded(stream: ByteReceiveStream, limit: int) -> tuple[bytes, bool]:
    """Read a stream to its end, keeping at most ``limit`` bytes. Returns (data, truncated)."""
    chunks: list[bytes] = []
    size = 0
    truncated = False
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        async for chunk in stream:
            if size < limit:
                keep = chunk[: limit - size]
                chunks.append(keep)
                size += len(keep)
                truncated = truncated or len(keep) < len(chunk)
            else:
                truncated = True
    return b"".join(chunks), truncated


async def drain_into(stream: ByteReceiveStream, buffer: OutputTail) -> None:
    """Feed ``stream`` into ``buffer`` until it ends (a child's stderr: it never blocks on a full pipe)."""
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        async for chunk in stream:
            buffer.feed(chunk)


def interpreter_for(script: Path, env: Mapping[str, str]) -> list[str]:
    """The argv that runs ``script``, chosen by its type: ``.py`` -> this Python,
    ``.js``/``.mjs``/``.cjs`` -> node, ``.sh`` -> sh, anything else runs as an executable.

    Raises ``FileNotFoundError`` when the interpreter is not on ``PATH``.
    """
    suffix = script.suffix.lower()
    path = env.get("PATH", os.defpath)
    if suffix == ".py":
        return [sys.executable, str(script)]
    if suffix in (".js", ".mjs", ".cjs"):
        node = shutil.which("node", path=path)
        if node is None:
            raise FileNotFoundError(f"{script.name} needs node, which is not on PATH")
        return [node, str(script)]
    if suffix == ".sh":
        sh = shutil.which("sh", path=path) or "/bin/sh"
        return [sh, str(script)]
    if not os.access(script, os.X_OK):
        raise FileNotFoundError(f"{script} is not executable and its type ({suffix or 'none'}) has no interpreter")
    return [str(script)]
