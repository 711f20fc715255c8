"""The MCP streamable HTTP transport for Kairox (``type = "streamable_http"``, alias ``http``)."""

from __future__ import annotations

__all__ = ["StreamableHttpTransport"]


def __getattr__(name: str) -> object:
    if name == "StreamableHttpTransport":
        from ._transport import StreamableHttpTransport

        return StreamableHttpTransport
    raise AttributeError(f"module 'kairox_streamable_http' has no attribute {name!r}")
