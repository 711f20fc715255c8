"""The ``streamable_http`` transport as kairox registers it: its name and where its connection is.

Built at every open, so it imports nothing to be built: the connection (the SDK's
``streamable_http_client``, the HTTP client, OAuth, the peer watch) is
:mod:`kairox_streamable_http.streamable_http`, imported with the first connection
(:class:`kairox_mcp.lazytransport.LazyTransport`).
"""

from __future__ import annotations

from kairox_mcp.lazytransport import LazyTransport

__all__ = ["StreamableHttpTransport"]


class StreamableHttpTransport(LazyTransport):
    """``type = "streamable_http"`` (``http`` and ``streamable-http`` are aliases)."""

    name = "streamable_http"
    connection = "kairox_streamable_http.streamable_http:open_connection"
