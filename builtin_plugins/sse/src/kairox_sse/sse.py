"""The legacy HTTP+SSE transport: GET ``url`` opens the event stream, the server's
``endpoint`` event names where to POST messages.

Server entry fields: ``url``, ``headers`` / ``http_headers`` (``${VAR}`` expanded),
``env_http_headers``, ``api_key_env`` / ``bearer_token_env_var`` (sent as
``Authorization: Bearer``), ``http_timeout`` (connect and POST, default 30 s),
``sse_read_timeout`` (silence allowed on the stream, default 300 s), ``oauth``
(``kairox mcp login``: a server that answers 401 with ``WWW-Authenticate`` needs it; the
stored token is sent on the stream's GET and every message POST, and refreshed).

A server that goes away, or answers a message POST with a challenge the stored token
cannot meet, ends the connection at once (:class:`kairox_mcp.http.PeerWatch`): the SDK's
POST writer only logs a failed POST and stops, which would leave pending calls waiting
for their timeout.

Limits: the SDK's ``sse_client`` reads events of at most 1 MiB (httpx2's default;
it has no setting for it). A larger event breaks the event stream, which carries
every message, so the connection ends: pending calls fail at once and the server
restarts (it is marked failed with the reason). A message event that is not JSON
or nested deeper than the parser allows answers its request with an error at once
(``kairox_mcp._streams``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from kairox.ext import redact_url

from ._transport import SseTransport

if TYPE_CHECKING:
    from kairox_mcp.config import McpServerConfig
    from kairox_mcp.transport import ConnectContext, Streams

# SseTransport (what the plugin registers) is defined in ._transport, which imports none of this
# until it connects; re-exported here, where it has always been. kairox_mcp's server config and
# transport contract load with the first connection.

__all__ = ["SseTransport", "open_connection"]


@asynccontextmanager
async def open_connection(server: McpServerConfig, context: ConnectContext) -> AsyncIterator[Streams]:
    """:meth:`SseTransport.connect`: connect to ``server.url`` and yield the session's streams."""
    import httpx2
    from mcp.client.sse import sse_client

    from kairox_mcp.http import connection_parts, make_http_client

    # OAuth (kairox mcp login): the stored token, refreshed; a 401 challenge ends the
    # connection with "needs authorization" instead of an opaque error
    url, headers, watch, auth = connection_parts(server, context)

    def factory(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        return make_http_client(server, context, headers=headers or {}, timeout=timeout, auth=auth, watch=watch)

    def on_session(session_id: str) -> None:
        context.diagnostics.stderr.append(f"[sse] connected to {redact_url(url)}")

    async with sse_client(
        url,
        headers=headers,
        timeout=server.http_timeout,
        sse_read_timeout=server.sse_read_timeout,
        httpx_client_factory=factory,
        auth=auth,
        on_session_created=on_session,
    ) as (read, write):
        # the session reads through the watch's relay: pending requests fail as soon as
        # the watch declares the server gone or unauthorized
        async with watch.relay(read) as relayed:
            yield relayed, write
