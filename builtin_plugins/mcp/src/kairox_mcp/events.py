"""Lifecycle events of MCP servers (published on ``runtime.events`` and to ``kairox_event``)."""

from __future__ import annotations

import attrs

from kairox import Event

__all__ = [
    "McpLogMessage",
    "McpPromptsChanged",
    "McpResourceUpdated",
    "McpResourcesChanged",
    "McpServerFailed",
    "McpServerReady",
    "McpServerStarting",
    "McpServerStopped",
    "McpToolsRefreshed",
]


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


@attrs.frozen
class McpResourcesChanged(Event):
    """The server's resource list changed (``notifications/resources/list_changed``)."""

    server: str


@attrs.frozen
class McpResourceUpdated(Event):
    """A resource the client subscribed to changed (``notifications/resources/updated``)."""

    server: str
    uri: str


@attrs.frozen
class McpPromptsChanged(Event):
    """The server's prompt list changed (``notifications/prompts/list_changed``)."""

    server: str


@attrs.frozen
class McpLogMessage(Event):
    """A log record the server sent (``notifications/message``); also in ``kairox mcp logs``.

    ``data`` is the record's data as text (JSON unless it was a string), secrets redacted,
    at most :data:`kairox_mcp.client.MAX_LOG_DATA` characters."""

    server: str
    level: str
    logger: str | None
    data: str
