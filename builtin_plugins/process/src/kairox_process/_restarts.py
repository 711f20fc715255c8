"""When a supervised child that crashed starts again: :class:`Restarts`."""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio

__all__ = ["MAX_BACKOFF", "RESET_AFTER", "Restarts"]

#: longest wait between two restarts, seconds
MAX_BACKOFF = 30.0
#: a child that stayed ready this long starts a new row of crashes
RESET_AFTER = 60.0


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

    def reset(self) -> None:
        """Start a new row: what ended the attempt was no crash (a login the server asked for)."""
        self.in_a_row = 0

    async def wait(self, delay: float, stop: anyio.Event) -> None:
        """Count a restart, then wait ``delay`` seconds (:meth:`delay`) or until ``stop`` is set."""
        self.in_a_row += 1
        self.count += 1
        with anyio.move_on_after(delay):
            await stop.wait()
