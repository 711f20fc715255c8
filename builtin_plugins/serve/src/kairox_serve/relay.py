"""What the gateway's backends tell it, passed on to the clients that asked: their log
records (``logging/setLevel``), the updates of resources a client subscribed to
(``resources/subscribe``), and the changes of their prompt and resource lists.

Log records. A client that sent ``logging/setLevel`` gets the backends' records of that
level and above, each under the logger ``<prefix>`` (or ``<prefix>.<logger>``) of the
backend that sent it; a client that did not ask gets none. The backends are asked for the
most verbose level any client asked for (``logging/setLevel`` on a handshake-era backend, the
per-request level on a 2026-07-28 one), so a record one client wants is not lost.

Resource updates. ``resources/subscribe`` is forwarded to the one exposed backend that owns
the URI (as ``resources/read`` finds it); its ``notifications/resources/updated`` go to the
clients subscribed to that URI, and to no one else. The backend is unsubscribed when its last
client unsubscribes.

Everything passes :class:`~kairox_serve.exposure.Exposure` first: nothing of a backend that
forwards nothing (one of its tools is denied) reaches a client, however the client asked.

A 2026-07-28 client has no ``resources/subscribe``: the resources its ``subscriptions/listen``
stream names are subscribed the same way (the stream is a :class:`Listener`), and their
updates go out on the gateway's listen bus, which sends each stream the URIs it named.

Records and updates are queued in a bounded buffer (one that overflows drops the newest,
logged once) and sent in order by one task of the gateway, over each connection's
standalone channel (the handshake revisions) or the listen bus.
"""

from __future__ import annotations

import logging
import warnings
import weakref
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.subscriptions import ResourceUpdated, ServerEvent
from mcp.shared.exceptions import MCPError

from kairox import Event, Runtime

from .backends import Backend, BackendRefused, Backends

__all__ = ["LOG_LEVELS", "Listener", "Relay"]

logger = logging.getLogger(__name__)

#: MCP's log levels, least severe first
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
#: records and updates waiting to be sent; more are dropped
MAX_QUEUED = 1000


class Listener:
    """A 2026-07-28 ``subscriptions/listen`` stream, as a subscriber of resource updates
    (they reach it through the gateway's listen bus, which sends each stream the URIs it named)."""


class Relay:
    """The log levels and resource subscriptions of the gateway's client connections, and
    what of the backends' records and updates each is sent."""

    def __init__(self, runtime: Runtime, backends: Backends, publish: Callable[[ServerEvent], Awaitable[None]]) -> None:
        self.rt = runtime
        self.backends = backends
        #: the gateway's listen bus
        self._publish = publish
        #: the level each connection asked for
        self._levels: weakref.WeakKeyDictionary[Connection, str] = weakref.WeakKeyDictionary()
        #: whose records each connection may hear (by backend server), where its principal is narrowed
        self._hears: weakref.WeakKeyDictionary[Connection, Callable[[str], bool]] = weakref.WeakKeyDictionary()
        #: the URIs each connection (or listen stream) subscribed to
        self._subscribed: weakref.WeakKeyDictionary[Connection | Listener, set[str]] = weakref.WeakKeyDictionary()
        #: the backend each subscribed URI was subscribed at
        self._owners: dict[str, str] = {}
        #: the level the backends were last asked for
        self._backend_level: str | None = None
        self._send, self._receive = anyio.create_memory_object_stream[Event](MAX_QUEUED)
        self._overflowed = False

    # -- lifetime ------------------------------------------------------------------------
    def start(self, tg: anyio.abc.TaskGroup) -> Callable[[], None]:
        """Listen to the backends' events and send what they say from a task of ``tg``;
        returns what stops listening."""
        try:
            from kairox_mcp import McpLogMessage, McpResourceUpdated, McpServerReady
        except ImportError:  # pragma: no cover - without kairox-mcp there are no backends
            return lambda: None
        tg.start_soon(self._drain)
        stops = [
            self.rt.events.subscribe(self._queue, McpLogMessage, McpResourceUpdated),
            self.rt.events.subscribe(self._ready, McpServerReady),
        ]

        def stop_all() -> None:
            for stop in stops:
                stop()

        return stop_all

    async def _ready(self, event: Event) -> None:
        """A backend that (re)started is asked again for what clients asked of it: a new
        connection to it knows nothing of the level or the subscriptions of the last one."""
        server = getattr(event, "server", None)
        if not isinstance(server, str):
            return
        if self._backend_level is not None:
            await self.backends.set_log_level(self._backend_level, servers=[server])
        for uri, owner in list(self._owners.items()):
            if owner != server:
                continue
            try:
                await self.backends.subscribe(Backend(server, server), uri)
            except BackendRefused as exc:
                logger.warning("kairox serve: MCP server %s restarted; %s not subscribed again: %s", server, uri, exc)

    def _queue(self, event: Event) -> None:
        if not self._levels and not self._subscribed:
            return  # nobody asked: nothing to send
        try:
            self._send.send_nowait(event)
        except anyio.WouldBlock:
            if not self._overflowed:
                self._overflowed = True
                logger.warning("kairox serve: backend log records and updates arrive faster than sent; dropping")

    async def _drain(self) -> None:
        async with self._receive:
            async for event in self._receive:
                try:
                    await self._relay(event)
                except Exception:  # one failed send must not end the relay
                    logger.exception("kairox serve: relaying %s failed", type(event).__name__)

    async def _relay(self, event: Event) -> None:
        server = getattr(event, "server", None)
        if not isinstance(server, str) or not self.backends.exposure.exposes_backend(server):
            return
        uri = getattr(event, "uri", None)
        if isinstance(uri, str):
            if self._owners.get(uri) != server:
                return
            listened = False
            for who, uris in list(self._subscribed.items()):
                if uri not in uris:
                    continue
                if isinstance(who, Listener):
                    listened = True
                elif who.initialized.is_set():
                    await who.send_resource_updated(uri)
            if listened:  # the bus sends it to the streams that named the URI
                await self._publish(ResourceUpdated(uri=uri))
            return
        level = getattr(event, "level", None)
        if level not in LOG_LEVELS:
            return
        backend = self.backends.backend(server)
        if backend is None:
            return
        source = getattr(event, "logger", None)
        name = f"{backend.prefix}.{source}" if source else backend.prefix
        data = getattr(event, "data", "")
        rank = LOG_LEVELS.index(level)
        for connection, wanted in list(self._levels.items()):
            if rank < LOG_LEVELS.index(wanted) or not connection.initialized.is_set():
                continue
            hears = self._hears.get(connection)
            if hears is not None and not hears(server):
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated as of 2026-07-28; the handshake revisions have it
                await connection.log(level, data, logger=name)

    # -- logging/setLevel ----------------------------------------------------------------
    async def set_level(
        self, connection: Connection | None, level: str, hears: Callable[[str], bool] | None = None
    ) -> None:
        """``logging/setLevel`` from ``connection``: remember it, and have the backends send
        at least that much. ``hears``: whether the connection may be sent a backend server's
        records (``None``: every one's)."""
        if level not in LOG_LEVELS:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown log level {level!r}")
        if connection is None:  # a request without a connection to send records on
            return
        self._levels[connection] = level
        if hears is None:
            self._hears.pop(connection, None)
        else:
            self._hears[connection] = hears
        await self._tell_backends()

    async def _tell_backends(self) -> None:
        if not self._levels:
            return
        wanted = LOG_LEVELS[min(LOG_LEVELS.index(v) for v in self._levels.values())]
        if wanted == self._backend_level:
            return
        self._backend_level = wanted
        await self.backends.set_log_level(wanted)

    # -- resources/subscribe -------------------------------------------------------------
    async def subscribe(self, connection: Connection | Listener | None, uri: str) -> None:
        """``resources/subscribe`` from ``connection`` (or a listen stream that names ``uri``), forwarded to the backend that owns
        ``uri``. Raises :class:`BackendRefused` when none does or it refuses."""
        backend = await self.backends.owner(uri)
        if backend is None:
            raise BackendRefused(f"{uri}: no MCP server of the gateway has it")
        owner = self._owners.get(uri)
        if owner is not None and owner != backend.server:
            raise BackendRefused(f"{uri}: subscribed at MCP server {owner}, now {backend.server} has it")
        if owner is None:
            await self.backends.subscribe(backend, uri)
            self._owners[uri] = backend.server
        if connection is not None:
            self._subscribed.setdefault(connection, set()).add(uri)

    async def unsubscribe(self, connection: Connection | Listener | None, uri: str) -> None:
        """``resources/unsubscribe``: ``connection`` is sent no more updates of ``uri``; the
        backend is unsubscribed when no connection is subscribed any more."""
        if connection is not None:
            self._subscribed.get(connection, set()).discard(uri)
        if any(uri in uris for uris in self._subscribed.values()):
            return
        server = self._owners.pop(uri, None)
        if server is not None:
            await self.backends.unsubscribe(Backend(server, server), uri)

    def subscriptions(self, who: Connection | Listener) -> list[str]:
        """The URIs ``who`` is subscribed to now."""
        return sorted(self._subscribed.get(who, ()))
