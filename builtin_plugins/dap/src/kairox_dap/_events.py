"""Lifecycle events of debug adapters, published on ``runtime.events``."""

from __future__ import annotations

import attrs

from kairox import Event

__all__ = ["DapServerFailed", "DapServerRunning", "DapServerStarting", "DapServerStopped"]


@attrs.frozen
class DapServerStarting(Event):
    """A debug adapter process is being started (by ``dap.launch``)."""

    server: str
    command: str


@attrs.frozen
class DapServerRunning(Event):
    """The adapter answered ``initialize``."""

    server: str
    pid: int


@attrs.frozen
class DapServerStopped(Event):
    """The adapter was stopped on purpose (``dap.disconnect``, runtime closing) or ended with its session."""

    server: str
    returncode: int | None = None


@attrs.frozen
class DapServerFailed(Event):
    """The adapter could not start or exited on its own; ``stderr_tail`` holds its last stderr lines."""

    server: str
    error: str
    stderr_tail: str = ""
    returncode: int | None = None
