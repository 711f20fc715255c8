"""Child processes of plugins (hook scripts, workers): bounded output, interpreters.

Process groups, reaping and exit descriptions are in kairox.process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections import deque
from collections.abc import Mapping
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream

__all__ = ["TailBuffer", "drain_into", "interpreter_for", "read_bounded"]


class TailBuffer:
    """The last ``max_lines`` lines of a stream (each cut to ``max_line`` characters)."""

    def __init__(self, max_lines: int = 200, max_line: int = 2000) -> None:
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._partial = b""
        self._max_line = max_line
        self.total_bytes = 0

    def feed(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        if len(self._partial) > self._max_line * 4:
            self._partial = self._partial[-self._max_line * 4 :]
        for raw in lines:
            self._add(raw)

    def _add(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if len(line) > self._max_line:
            line = line[: self._max_line] + " [...]"
        self._lines.append(line)

    def lines(self) -> list[str]:
        out = list(self._lines)
        if self._partial:
            out.append(self._partial.decode("utf-8", "replace")[: self._max_line])
        return out

    def tail(self, n: int = 20) -> str:
        return "\n".join(self.lines()[-n:])


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


async def drain_into(stream: ByteReceiveStream, buffer: TailBuffer) -> None:
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
