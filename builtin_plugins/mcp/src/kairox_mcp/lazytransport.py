"""Transport kinds registered cheaply, their connection imported with the first ``connect``.

What ``kairox_register_transports`` adds is built at every open, and most workspaces
never connect over most kinds. A :class:`LazyTransport` subclass names its kind and
the function that opens a connection (a ``"package.module:function"`` target, called
as ``open_connection(server, context)``); building it imports nothing, and the
connection's module (the SDK's client, the HTTP client, OAuth) loads with the first
connection, as :class:`kairox_manifests.lazyformat.LazyFormat` does for a manifest
format. kairox-sse and kairox-streamable-http register one each::

    class SseTransport(LazyTransport):
        name = "sse"
        connection = "kairox_sse.sse:open_connection"
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from kairox.declare import load_target

if TYPE_CHECKING:
    from .config import McpServerConfig
    from .transport import ConnectContext, Streams

__all__ = ["LazyTransport"]


class LazyTransport:
    """An :class:`~kairox_mcp.transport.McpTransport` whose ``connect`` is :attr:`connection`."""

    #: the ``type`` value of a server entry
    name: str
    #: ``"package.module:function"``: ``function(server, context)`` opens the connection
    connection: str

    def connect(self, server: McpServerConfig, context: ConnectContext) -> AbstractAsyncContextManager[Streams]:
        open_connection = load_target(self.connection)
        result: AbstractAsyncContextManager[Streams] = open_connection(server, context)
        return result

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"
