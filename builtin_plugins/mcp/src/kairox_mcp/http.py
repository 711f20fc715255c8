"""The HTTP client the sse and streamable_http transports share (imports ``httpx2``).

Headers come from :meth:`McpServerConfig.resolve_headers` (secrets stay in the
client, never in logs); every HTTP error status is noted in the server's
diagnostics (method, URL with secrets redacted, status), so ``kairox mcp logs``
explains a failing remote server.

:class:`PeerWatch` notices that the server went away: a refused connection, or
a response stream that broke and a server that no longer accepts connections.
Streamable HTTP has no connection to lose (the SDK retries for seconds), so the
transport uses it to end the session's read stream at once, and pending calls
fail with the diagnostic instead of hanging in reconnection attempts. A 404 to a
request carrying our ``Mcp-Session-Id`` ends the connection the same way: the
server forgot the session, and the lifecycle's restart opens a new one.

The watching transport also bounds a response body that is not an event stream
(a JSON answer) to :data:`~kairox_mcp.transport.MAX_MESSAGE_BYTES`: past it, reading
fails with :class:`ResponseTooLarge` (an ``httpx2.StreamError``, which the SDK turns
into an error response for the request it answered, so the call fails at once).
Event streams are bounded per event by the SDK (``max_sse_event_size``).
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2

from kairox.ext import redact

from .config import McpServerConfig, redact_url
from .transport import MAX_MESSAGE_BYTES, ConnectContext, Diagnostics, size_text

__all__ = ["PeerWatch", "ResponseTooLarge", "WatchingTransport", "connection_parts", "make_http_client", "oauth_for"]

logger = logging.getLogger(__name__)

#: how long the liveness probe may take in all, seconds
PROBE_TIMEOUT = 1.0
#: pauses between the liveness probe's connection attempts, seconds: a server being
#: killed can still accept a connection on its listening socket for a moment after
#: the stream broke, so one accepted connection does not prove it alive
PROBE_PAUSES = (0.05, 0.1, 0.2)


class PeerWatch:
    """Decides that an HTTP server is gone (and says why, in the diagnostics)."""

    def __init__(self, url: str, diagnostics: Diagnostics) -> None:
        self.url = url
        self.diagnostics = diagnostics
        self.dead = anyio.Event()
        parts = urllib.parse.urlsplit(url)
        self._host = parts.hostname or "localhost"
        self._port = parts.port or (443 if parts.scheme == "https" else 80)

    def mark_dead(self, reason: str) -> None:
        self._end(f"the server at {redact_url(self.url)} went away: {reason}")

    def mark_session_lost(self, status: int) -> None:
        """The server answered a request of our session with 404: it no longer knows the
        session (expired, or the server restarted). The spec's remedy is a new session,
        which the lifecycle's restart does (a new ``initialize``)."""
        self._end(
            f"the server at {redact_url(self.url)} no longer knows our session "
            f"(HTTP {status} for its Mcp-Session-Id: expired, or the server restarted)"
        )

    def mark_unauthorized(self, message: str) -> None:
        """The server wants an OAuth login (``kairox_mcp.auth``): end the connection with
        ``message`` (which says the command to run); the lifecycle waits for the login."""
        self._end(message)

    @asynccontextmanager
    async def relay(self, read: Any) -> AsyncIterator[Any]:
        """``read`` (a transport's read stream) through a relay that ends as soon as this
        watch declares the server gone or unauthorized, so the session's pending requests
        fail at once (CONNECTION_CLOSED) instead of at their timeout."""
        relay_send, relay_receive = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            with relay_send:
                try:
                    async for item in read:
                        await relay_send.send(item)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass

        async def watchdog() -> None:
            await self.dead.wait()
            relay_send.close()

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            tg.start_soon(watchdog)
            try:
                yield relay_receive
            finally:
                relay_receive.close()
                tg.cancel_scope.cancel()

    def _end(self, error: str) -> None:
        if self.dead.is_set():
            return
        error = redact(error)  # the HTTP stack's exception texts may name the URL
        self.diagnostics.error = error
        self.diagnostics.stderr.append(f"[kairox] {error}")
        self.dead.set()

    async def probe(self, why: BaseException) -> None:
        """After a broken stream: dead if the server refuses connections now.

        Connects once, and again after each of :data:`PROBE_PAUSES`, all within
        :data:`PROBE_TIMEOUT`; one refusal is enough. A connection that cannot be made
        in time proves nothing (a loaded server, a slow network): the SDK's own
        reconnection then decides. A server that closed the stream on purpose keeps
        accepting, and the SDK's reconnection waits longer than these pauses anyway."""
        with anyio.move_on_after(PROBE_TIMEOUT):
            for pause in (0.0, *PROBE_PAUSES):
                if self.dead.is_set():
                    return
                await anyio.sleep(pause)
                try:
                    stream = await anyio.connect_tcp(self._host, self._port)
                except OSError as exc:
                    self.mark_dead(f"{type(why).__name__}: {why} (and then: {exc or type(exc).__name__})")
                    return
                await stream.aclose()


class ResponseTooLarge(httpx2.StreamError):
    """A response body over the limit (it is not read any further)."""


class _WatchedByteStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, watch: PeerWatch, limit: int | None = None, declared: int | None = None) -> None:
        self._inner = inner
        self._watch = watch
        self._limit = limit
        self._declared = declared

    def _too_large(self, size: str) -> ResponseTooLarge:
        assert self._limit is not None
        return ResponseTooLarge(f"response of {size} exceeds the {size_text(self._limit)} limit")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        limit = self._limit
        if limit is not None and self._declared is not None and self._declared > limit:
            raise self._too_large(size_text(self._declared))
        seen = 0
        try:
            async for chunk in self._inner:
                seen += len(chunk)
                if limit is not None and seen > limit:
                    raise self._too_large(f"more than {size_text(limit)}")
                yield chunk
        except (httpx2.ReadError, httpx2.RemoteProtocolError) as exc:
            await self._watch.probe(exc)
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


class WatchingTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport that reports refused connections and broken streams to a :class:`PeerWatch`."""

    def __init__(
        self, inner: httpx2.AsyncBaseTransport, watch: PeerWatch, *, max_body: int | None = MAX_MESSAGE_BYTES
    ) -> None:
        self._inner = inner
        self._watch = watch
        self._max_body = max_body

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.ConnectError as exc:
            self._watch.mark_dead(f"cannot connect: {exc}")
            raise
        if response.status_code == 404 and "mcp-session-id" in request.headers:
            self._watch.mark_session_lost(response.status_code)
        event_stream = response.headers.get("content-type", "").lower().startswith("text/event-stream")
        limit = None if event_stream else self._max_body
        try:
            declared: int | None = int(response.headers.get("content-length", ""))
        except ValueError:
            declared = None
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_WatchedByteStream(response.stream, self._watch, limit, declared),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def oauth_for(
    server: McpServerConfig, context: ConnectContext, headers: dict[str, str], watch: PeerWatch
) -> httpx2.Auth | None:
    """The OAuth ``httpx2.Auth`` of ``server`` (stored token, refresh; a challenge marks the
    attempt as needing ``kairox mcp login`` and ends it), or ``None`` when the entry sends its
    own ``Authorization`` header or disables OAuth. A damaged token file raises
    :class:`kairox_mcp.auth.TokenFileError` (naming the file)."""
    from . import auth

    if not auth.wants_oauth(server, headers):
        return None

    def needed(message: str) -> None:
        auth.mark_needs_authorization(context.diagnostics, message)
        watch.mark_unauthorized(message)

    return auth.runtime_auth(context.server_name, server, context.env, needed)


def connection_parts(
    server: McpServerConfig, context: ConnectContext
) -> tuple[str, dict[str, str], PeerWatch, httpx2.Auth | None]:
    """What an HTTP transport connects ``server`` with: its ``url``, its headers, a
    :class:`PeerWatch` over it and its OAuth (:func:`oauth_for`). Raises ``ValueError`` when
    the entry has no ``url``."""
    if not server.url:
        raise ValueError(f"a {server.type} server needs `url`")
    headers = server.resolve_headers(context.env)
    watch = PeerWatch(server.url, context.diagnostics)
    return server.url, headers, watch, oauth_for(server, context, headers, watch)


def make_http_client(
    server: McpServerConfig,
    context: ConnectContext,
    *,
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
    watch: PeerWatch | None = None,
) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` for ``server`` (the caller enters and closes it)."""
    diag = context.diagnostics

    async def on_response(response: httpx2.Response) -> None:
        if response.status_code >= 400:
            request = response.request
            diag.stderr.append(f"[http] {request.method} {redact_url(str(request.url))} -> {response.status_code}")

    kwargs: dict[str, Any] = {
        "headers": server.resolve_headers(context.env) if headers is None else headers,
        "timeout": timeout or httpx2.Timeout(server.http_timeout, read=server.sse_read_timeout),
        "event_hooks": {"response": [on_response]},
    }
    if auth is not None:
        kwargs["auth"] = auth
    if watch is not None:
        kwargs["transport"] = WatchingTransport(httpx2.AsyncHTTPTransport(), watch)
    return httpx2.AsyncClient(**kwargs)
