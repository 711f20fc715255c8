"""The MCP legacy HTTP+SSE transport for Kairox (``type = "sse"``)."""

from __future__ import annotations

__all__ = ["SseTransport"]


def __getattr__(name: str) -> object:
    if name == "SseTransport":
        from ._transport import SseTransport

        return SseTransport
    raise AttributeError(f"module 'kairox_sse' has no attribute {name!r}")
