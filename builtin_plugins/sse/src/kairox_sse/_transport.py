"""The ``sse`` transport as kairox registers it: its name and where its connection is.

Built at every open, so it imports nothing to be built: the connection (the SDK's
``sse_client``, the HTTP client, OAuth, the peer watch) is :mod:`kairox_sse.sse`, imported
with the first connection (:class:`kairox_mcp.lazytransport.LazyTransport`).
"""

from __future__ import annotations

from kairox_mcp.lazytransport import LazyTransport

__all__ = ["SseTransport"]


class SseTransport(LazyTransport):
    """``type = "sse"``."""

    name = "sse"
    connection = "kairox_sse.sse:open_connection"
