"""Hook implementations of kairox-stdio (cheap to import: no ``mcp`` here; the transport
machinery is imported when a server first connects through it)."""

from __future__ import annotations

from kairox.declare import adds

kairox_register_transports = adds("kairox_stdio._transport:StdioTransport")
