"""A child process that speaks Content-Length framed JSON on stdin/stdout.

Shared by the LSP and DAP clients. The child runs in its own session (and so
its own process group), so that closing it also ends whatever it started:
node workers in its group, and on Linux also processes that moved to a group
of their own inside its session (debugpy's debuggee). Its stderr is always
drained into a bounded :class:`kairox_process.OutputTail`, never to the
terminal: a chatty server cannot block on a full pipe, and the tail is there
for diagnostics when it fails.

Closing: the caller first says goodbye in its protocol (LSP ``shutdown`` +
``exit``, DAP ``disconnect``), then :meth:`StdioPeer.aclose` closes stdin,
waits a grace period for the process to exit, and kills the whole group.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from kairox_process import OutputTail, kill_group, kill_session, server_env, wait_session_gone

from ._framing import BadMessage, FrameDecoder, encode_message

__all__ = ["CommandNotFound", "StdioPeer", "resolve_command"]

logger = logging.getLogger(__name__)

READ_CHUNK = 64 * 1024


class CommandNotFound(FileNotFoundError):
    """The server's command is not on ``PATH`` (or the path does not exist)."""


def resolve_command(command: str, env: Mapping[str, str], cwd: Path | None = None) -> str:
    """The executable for ``command``: a path as given (relative to ``cwd``), else looked up on ``PATH``."""
    if os.sep in command or (os.altsep and os.altsep in command):
        path = Path(command).expanduser()
        if not path.is_absolute() and cwd is not None:
            path = cwd / path
        if not path.exists():
            raise CommandNotFound(f"command {command!r} does not exist")
        return str(path)
    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise CommandNotFound(f"command {command!r} is not on PATH")
    return found


class StdioPeer:
    """One child process and its framed JSON stream."""

    def __init__(self, process: anyio.abc.Process, argv: Sequence[str], *, stderr_bytes: int = 64 * 1024) -> None:
        self.process = process
        #: the child's pid, which is also its process group's and session's id
        self.pid: int = process.pid
        self.argv = list(argv)
        self.stderr = OutputTail(stderr_bytes, redact=True)  # a server may echo a token it was given
        self._write_lock = anyio.Lock(fast_acquire=True)  # no checkpoint when uncontended
        self._closed = False

    @classmethod
    async def spawn(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr_bytes: int = 64 * 1024,
    ) -> StdioPeer:
        """Start ``command args`` in its own process group with piped stdio."""
        # commands installed next to kairox are found without activating its environment
        full_env = server_env(os.environ if env is None else env)
        workdir = Path(cwd) if cwd is not None else None
        executable = resolve_command(command, full_env, workdir)
        argv = [executable, *args]
        process = await anyio.open_process(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd=workdir,
            start_new_session=True,
        )
        logger.debug("started %s (pid %s)", argv[0], process.pid)
        return cls(process, argv, stderr_bytes=stderr_bytes)

    @property
    def returncode(self) -> int | None:
        """Its exit code once it exited (negative: the signal that killed it), else ``None``."""
        return self.process.returncode

    async def send(self, message: Mapping[str, Any]) -> None:
        """Write one frame; raises ``anyio.BrokenResourceError``/``ClosedResourceError`` when stdin is gone."""
        data = encode_message(message)
        stdin = self.process.stdin
        if stdin is None or self._closed:
            raise anyio.ClosedResourceError
        async with self._write_lock:
            await stdin.send(data)

    async def messages(self) -> AsyncIterator[Any]:
        """Every message on stdout until it closes; a :class:`BadMessage` is logged and skipped.

        Raises :class:`FramingError` when the stream breaks the framing.
        """
        stdout = self.process.stdout
        if stdout is None:  # pragma: no cover - always piped
            return
        decoder = FrameDecoder()
        while True:
            try:
                data = await stdout.receive(READ_CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            for message in decoder.feed(data):
                if isinstance(message, BadMessage):
                    logger.warning("%s sent a message that is not JSON: %s", self.argv[0], message.error)
                    continue
                yield message

    async def drain_stderr(self) -> None:
        """Read stderr into :attr:`stderr` until it closes (run this as its own task)."""
        stream = self.process.stderr
        if stream is None:  # pragma: no cover - always piped
            return
        while True:
            try:
                data = await stream.receive(READ_CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            self.stderr.feed(data)

    async def close_stdin(self) -> None:
        stdin = self.process.stdin
        self._closed = True
        if stdin is not None:
            try:
                await stdin.aclose()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    async def wait(self, timeout: float | None = None) -> int | None:
        """Wait for the process to exit; ``None`` when ``timeout`` passed first."""
        with anyio.move_on_after(timeout):
            return await self.process.wait()
        return self.process.returncode

    def kill(self) -> None:
        """Kill the process, its group and its session now (no waiting).

        The leader leads the group, so SIGKILL to the group reaches it. No
        ``process.kill()`` on top: it polls the child first and may reap it before
        asyncio's watcher does, which then reports exit code 255 instead of -9."""
        kill_session(self.pid)

    async def aclose(self, grace: float = 2.0) -> int | None:
        """Close stdin, give the process ``grace`` seconds, then kill its group and reap it.

        Safe to call more than once and from a cancelled scope (it shields itself).
        Whatever the leader left behind in its group is killed too.
        """
        code: int | None = None
        with anyio.CancelScope(shield=True):
            await self.close_stdin()
            code = await self.wait(grace)
            if code is None:
                logger.debug("%s (pid %s) did not exit within %.1f s; killing its group", self.argv[0], self.pid, grace)
                kill_group(self.pid, signal.SIGTERM)
                code = await self.wait(min(grace, 1.0))
            # also when the leader exited: its children may still hold the group
            self.kill()
            code = await self.wait(5.0)
            await wait_session_gone(self.pid, 2.0)
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    try:
                        await stream.aclose()
                    except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                        pass
        return code
