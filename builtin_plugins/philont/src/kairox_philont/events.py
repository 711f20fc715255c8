"""Lifecycle events of Philont plugin hosts (workers and the shared Node process)."""

from __future__ import annotations

import attrs

from kairox import Event

__all__ = ["PhilontWorkerFailed", "PhilontWorkerReady", "PhilontWorkerStarting", "PhilontWorkerStopped"]


@attrs.frozen
class PhilontWorkerStarting(Event):
    worker: str
    #: 0 for the first start, n for the n-th restart
    attempt: int = 0


@attrs.frozen
class PhilontWorkerReady(Event):
    worker: str
    pid: int = 0
    plugins: tuple[str, ...] = ()


@attrs.frozen
class PhilontWorkerFailed(Event):
    """The host could not start, or died; its pending calls failed with ``error``."""

    worker: str
    error: str
    exit_code: int | None = None
    stderr_tail: tuple[str, ...] = ()
    #: a restart follows after ``retry_in_s`` seconds
    will_restart: bool = False
    retry_in_s: float = 0.0
    restarts: int = 0


@attrs.frozen
class PhilontWorkerStopped(Event):
    worker: str
