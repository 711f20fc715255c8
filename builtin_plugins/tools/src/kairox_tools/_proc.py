"""Child processes for the tools: own process group, bounded output, always reaped.

Every child runs in a new session (``start_new_session=True``), so it and
everything it starts share one process group. When the child exits, times
out, or the call is cancelled, the whole group is killed and the child is
reaped; stdout/stderr are drained into bounded buffers, never to the terminal.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
import anyio.abc
import attrs

from kairox_process import kill_group, open_group

from ._output import HeadTail

__all__ = ["ProcessOutcome", "run_process"]

logger = logging.getLogger(__name__)

#: seconds between SIGTERM and SIGKILL when a command times out
TERM_GRACE = 2.0
#: seconds to wait for the pipes to close after the group was killed
DRAIN_GRACE = 2.0
#: seconds to wait for a killed child to be reaped
REAP_TIMEOUT = 5.0


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
                kill_group(process.pid, signal.SIGTERM)
                with anyio.move_on_after(TERM_GRACE):
                    await process.wait()
            # the group's leftovers would hold the pipes open: end them
            kill_group(process.pid, signal.SIGKILL)
            with anyio.move_on_after(DRAIN_GRACE):
                await out_done.wait()
                await err_done.wait()
            tg.cancel_scope.cancel()
        with anyio.move_on_after(REAP_TIMEOUT):
            await process.wait()
        returncode = process.returncode
    return ProcessOutcome(returncode, out, err, timed_out, time.monotonic() - started)
