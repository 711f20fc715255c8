"""kairox-sse's hook implementations (cheap to import: no ``mcp``, no ``httpx2``; the
transport is imported when a server first connects through it)."""

from __future__ import annotations

from kairox.declare import adds

kairox_register_transports = adds("kairox_sse._transport:SseTransport")
