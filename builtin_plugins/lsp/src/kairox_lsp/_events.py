"""Lifecycle events of language servers, published on ``runtime.events``."""

from __future__ import annotations

import attrs

from kairox import Event

__all__ = ["LspServerFailed", "LspServerRunning", "LspServerStarting", "LspServerStopped"]


@attrs.frozen
class LspServerStarting(Event):
    """A server process is being started (``attempt`` > 1 for a restart)."""

    server: str
    command: str
    attempt: int = 1


@attrs.frozen
class LspServerRunning(Event):
    """The server answered ``initialize``; its tools are usable."""

    server: str
    pid: int
    position_encoding: str = "utf-16"
    server_name: str = ""


@attrs.frozen
class LspServerStopped(Event):
    """The server was stopped on purpose (runtime closing, provider stopping)."""

    server: str
    returncode: int | None = None


@attrs.frozen
class LspServerFailed(Event):
    """The server could not start or exited on its own.

    ``stderr_tail`` holds its last stderr lines; ``restart_in`` is the delay
    before the next attempt (``None`` when it will not be restarted).
    """

    server: str
    error: str
    stderr_tail: str = ""
    returncode: int | None = None
    restart_in: float | None = None
