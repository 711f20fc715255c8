"""When a supervised child that crashed starts again: :class:`Restarts`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypedDict

import anyio

if TYPE_CHECKING:
    from ._tail import OutputTail

__all__ = ["MAX_BACKOFF", "RESET_AFTER", "Failure", "Restarts"]

#: longest wait between two restarts, seconds
MAX_BACKOFF = 30.0
#: a child that stayed ready this long starts a new row of crashes
RESET_AFTER = 60.0

#: stderr lines a failure event quotes
FAILURE_STDERR_LINES = 20


class Failure(TypedDict):
    """What a supervised child's failure event says (``McpServerFailed``, ``PhilontWorkerFailed``)."""

    error: str
    exit_code: int | None
    stderr_tail: tuple[str, ...]
    #: a restart is scheduled (after ``retry_in_s`` seconds)
    will_restart: bool
    retry_in_s: float
    restarts: int


class Restarts:
    """The restart policy of one supervised child (an MCP server, a Philont plugin host).

    After a crash the child starts again after ``backoff`` seconds, doubling with each
    crash in a row, at most :data:`MAX_BACKOFF`; at most ``max_restarts`` crashes in a
    row are restarted, and a child that stayed ready :data:`RESET_AFTER` seconds starts
    a new row. A child that fails its first start is not retried: its configuration
    wants fixing, and retrying would only repeat the error.
    """

    def __init__(self, max_restarts: int, backoff: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_restarts = max_restarts
        self.backoff = backoff
        #: ``time.monotonic`` unless a test moves time by hand
        self.clock = clock
        #: restarts so far
        self.count = 0
        #: crashes restarted in the current row
        self.in_a_row = 0

    def delay(self, ready_at: float | None) -> float | None:
        """After an attempt ended on its own: the seconds before the next start, or ``None``
        when none follows. ``ready_at`` is when (``clock``) the attempt became ready, ``None``
        if it never did. Nothing is counted until :meth:`wait`."""
        if ready_at is not None and self.clock() - ready_at >= RESET_AFTER:
            self.in_a_row = 0
        if (ready_at is None and self.count == 0) or self.in_a_row >= self.max_restarts:
            return None
        return min(self.backoff * 2.0**self.in_a_row, MAX_BACKOFF)

    def failure(self, error: str, delay: float | None, *, exit_code: int | None, stderr: OutputTail) -> Failure:
        """The fields of the event for an attempt that failed with ``error``, restarting in
        ``delay`` seconds (:meth:`delay`) or, ``None``, not at all."""
        return Failure(
            error=error,
            exit_code=exit_code,
            stderr_tail=tuple(stderr.tail(FAILURE_STDERR_LINES)),
            will_restart=delay is not None,
            retry_in_s=0.0 if delay is None else delay,
            restarts=self.count,
        )

    async def restart(self, ready_at: float | None, fail: Callable[[float | None], None], stop: anyio.Event) -> bool:
        """After an attempt ended on its own (``ready_at`` as for :meth:`delay`): report it with
        ``fail(delay)``, then :meth:`wait` that long. Returns whether the child starts again."""
        delay = self.delay(ready_at)
        fail(delay)
        if delay is None:
            return False
        await self.wait(delay, stop)
        return True

    def reset(self) -> None:
        """Start a new row: what ended the attempt was no crash (a login the server asked for)."""
        self.in_a_row = 0

    async def wait(self, delay: float, stop: anyio.Event) -> None:
        """Count a restart, then wait ``delay`` seconds (:meth:`delay`) or until ``stop`` is set."""
        self.in_a_row += 1
        self.count += 1
        with anyio.move_on_after(delay):
            await stop.wait()
