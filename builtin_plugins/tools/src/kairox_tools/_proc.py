"""Child processes for the tools: own process group, bounded output, always reaped.

Every child runs in a new session (``start_new_session=True``), so it and
everything it starts share one process group. When the child exits, times
out, or the call is cancelled, the whole group is killed and the child is
reaped; stdout/stderr are drained into bounded buffers, never to the terminal.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import attrs

from ._output import HeadTail

__all__ = ["ProcessOutcome", "kill_group", "open_group", "run_process"]

logger = logging.getLogger(__name__)

#: seconds between SIGTERM and SIGKILL when a command times out
TERM_GRACE = 2.0
#: seconds to wait for the pipes to close after the group was killed
DRAIN_GRACE = 2.0
#: seconds to wait for a killed child to be reaped
REAP_TIMEOUT = 5.0


def kill_group(process: anyio.abc.Process, sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to the child's process group (the child alone where groups do not exist)."""
    if hasattr(os, "killpg"):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        return
    if process.returncode is None:  # pragma: no cover - not POSIX
        process.kill()


async def _wait_group_gone(pgid: int, timeout: float = 1.0) -> None:
    """Wait (bounded) until nothing is left in the killed group: SIGKILL is
    delivered asynchronously, and a caller may check right after we return."""
    if not hasattr(os, "killpg"):  # pragma: no cover - not POSIX
        return
    deadline = anyio.current_time() + timeout
    while anyio.current_time() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        await anyio.sleep(0.01)


@asynccontextmanager
async def open_group(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: bool = False,
) -> AsyncIterator[anyio.abc.Process]:
    """A child in its own process group; on exit (normal, error or cancel) the group is killed and reaped."""
    process = await anyio.open_process(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        with anyio.CancelScope(shield=True):
            kill_group(process)
            with anyio.move_on_after(REAP_TIMEOUT):
                await process.wait()
            await _wait_group_gone(process.pid)
            await process.aclose()


@attrs.define
class ProcessOutcome:
    returncode: int | None
    stdout: HeadTail
    stderr: HeadTail
    timed_out: bool
    duration_s: float


async def _pump(stream: anyio.abc.ByteReceiveStream | None, buffer: HeadTail, done: anyio.Event) -> None:
    try:
        if stream is not None:
            async for chunk in stream:
                buffer.feed(chunk)
    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    finally:
        done.set()


async def _feed(stream: anyio.abc.ByteSendStream | None, data: bytes) -> None:
    if stream is None:
        return
    try:
        await stream.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError):
        pass
    finally:
        try:
            await stream.aclose()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError):
            pass


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stdout_limit: int,
    stderr_limit: int,
    stdin: bytes | None = None,
) -> ProcessOutcome:
    """Run ``argv`` to completion or ``timeout``; output beyond the limits keeps head and tail.

    On timeout the group gets SIGTERM, then SIGKILL after :data:`TERM_GRACE`.
    When the child exits, whatever it left running in its group is killed.
    """
    out, err = HeadTail(stdout_limit), HeadTail(stderr_limit)
    started = time.monotonic()
    timed_out = False
    async with open_group(argv, cwd=cwd, env=env, stdin=stdin is not None) as process:
        out_done, err_done = anyio.Event(), anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_pump, process.stdout, out, out_done)
            tg.start_soon(_pump, process.stderr, err, err_done)
            if stdin is not None:
                tg.start_soon(_feed, process.stdin, stdin)
            with anyio.move_on_after(timeout) as scope:
                await process.wait()
            if scope.cancelled_caught:
                timed_out = True
                kill_group(process, signal.SIGTERM)
                with anyio.move_on_after(TERM_GRACE):
                    await process.wait()
            # the group's leftovers would hold the pipes open: end them
            kill_group(process, signal.SIGKILL)
            with anyio.move_on_after(DRAIN_GRACE):
                await out_done.wait()
                await err_done.wait()
            tg.cancel_scope.cancel()
        with anyio.move_on_after(REAP_TIMEOUT):
            await process.wait()
        returncode = process.returncode
    return ProcessOutcome(returncode, out, err, timed_out, time.monotonic() - started)
