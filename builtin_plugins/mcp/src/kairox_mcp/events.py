"""Lifecycle events of MCP servers (published on ``runtime.events`` and to ``kairox_event``)."""

from __future__ import annotations

import attrs

from kairox import Event

__all__ = ["McpServerFailed", "McpServerReady", "McpServerStarting", "McpServerStopped", "McpToolsRefreshed"]


@attrs.frozen
class McpServerStarting(Event):
    server: str
    transport: str
    #: 0 for the first start, n for the n-th restart
    attempt: int = 0


@attrs.frozen
class McpServerReady(Event):
    server: str
    tools: int
    protocol_version: str = ""
    server_info: str = ""
    startup_s: float = 0.0


@attrs.frozen
class McpServerFailed(Event):
    """The server could not start, or died. The diagnostic explains why."""

    server: str
    error: str
    exit_code: int | None = None
    stderr_tail: tuple[str, ...] = ()
    #: a restart is scheduled (after ``retry_in_s`` seconds)
    will_restart: bool = False
    retry_in_s: float = 0.0
    restarts: int = 0


@attrs.frozen
class McpServerStopped(Event):
    server: str


@attrs.frozen
class McpToolsRefreshed(Event):
    """The server's tool list was re-read after ``notifications/tools/list_changed``."""

    server: str
    tools: int
