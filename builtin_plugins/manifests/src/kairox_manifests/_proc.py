"""Child processes of plugins (hook scripts, workers): process groups, bounded output."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from collections import deque
from collections.abc import Mapping
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

__all__ = ["TailBuffer", "describe_exit", "interpreter_for", "kill_group", "read_bounded", "reap"]

KILL_GRACE = 2.0


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


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Signal the process group led by ``pid`` (the child was started with ``start_new_session``)."""
    if sys.platform == "win32":  # pragma: no cover
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def reap(process: Process, *, grace: float = KILL_GRACE) -> int | None:
    """Make sure ``process`` and its group are gone: SIGTERM, wait ``grace``, SIGKILL; wait for it."""
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            kill_group(process.pid, signal.SIGTERM)
            with anyio.move_on_after(grace):
                await process.wait()
        kill_group(process.pid, signal.SIGKILL)
        if process.returncode is None:
            with anyio.move_on_after(grace):
                await process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(Exception):
                    await stream.aclose()
        return process.returncode
    return None  # pragma: no cover - unreachable (the shielded scope returns)


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "is still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"


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
