"""The streamable HTTP transport: one endpoint, POST per message, optional SSE streams,
``Mcp-Session-Id`` session, ``DELETE`` on close.

Server entry fields: ``url``, ``headers`` / ``http_headers`` (``${VAR}`` expanded),
``env_http_headers``, ``api_key_env`` / ``bearer_token_env_var`` (sent as
``Authorization: Bearer``), ``http_timeout`` (default 30 s), ``sse_read_timeout``
(default 300 s), ``oauth`` (``kairox mcp login``: a server that answers 401 with
``WWW-Authenticate`` needs it; the stored token is sent and refreshed).

A message is at most 64 MiB (``MAX_MESSAGE_BYTES``, as on stdio): a JSON response
body over it, or one SSE event over it, fails the request it answered at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from ._transport import StreamableHttpTransport

if TYPE_CHECKING:
    from kairox_mcp.config import McpServerConfig
    from kairox_mcp.transport import ConnectContext, Streams

# StreamableHttpTransport (what the plugin registers) is defined in ._transport, which imports none of this
# until it connects; re-exported here, where it has always been. kairox_mcp's server config and
# transport contract load with the first connection.

__all__ = ["StreamableHttpTransport", "open_connection"]


@asynccontextmanager
async def open_connection(server: McpServerConfig, context: ConnectContext) -> AsyncIterator[Streams]:
    """:meth:`StreamableHttpTransport.connect`: connect to ``server.url`` and yield the session's streams."""
    from mcp.client.streamable_http import streamable_http_client

    from kairox_mcp.http import connection_parts, make_http_client
    from kairox_mcp.transport import MAX_MESSAGE_BYTES

    # OAuth (kairox mcp login): the stored token, refreshed; a 401 challenge ends the
    # connection with "needs authorization" instead of an opaque error
    url, headers, watch, auth = connection_parts(server, context)
    # We own the client (headers, timeouts, error notes, the watch); the SDK sends the
    # session's DELETE through it when the connection closes normally.
    async with make_http_client(server, context, headers=headers, watch=watch, auth=auth) as client:
        async with streamable_http_client(
            url, http_client=client, terminate_on_close=True, max_sse_event_size=MAX_MESSAGE_BYTES
        ) as (read, write):
            # the session reads through the watch's relay: pending requests fail as soon as
            # the watch declares the server gone or unauthorized
            async with watch.relay(read) as relayed:
                yield relayed, write
