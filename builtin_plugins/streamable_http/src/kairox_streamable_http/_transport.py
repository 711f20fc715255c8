"""The ``streamable_http`` transport as kairox registers it: its name and ``connect``.

Built at every open, so it imports nothing to be built: the connection (the SDK's
``streamable_http_client``, the HTTP client, OAuth, the peer watch) is
:mod:`kairox_streamable_http.streamable_http`, imported with the first connection.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kairox_mcp.config import McpServerConfig
    from kairox_mcp.transport import ConnectContext, Streams

__all__ = ["StreamableHttpTransport"]


class StreamableHttpTransport:
    """``type = "streamable_http"`` (``http`` and ``streamable-http`` are aliases)."""

    name = "streamable_http"

    def connect(self, server: McpServerConfig, context: ConnectContext) -> AbstractAsyncContextManager[Streams]:
        from .streamable_http import open_connection

        return open_connection(server, context)

    def __repr__(self) -> str:
        return "<StreamableHttpTransport>"
