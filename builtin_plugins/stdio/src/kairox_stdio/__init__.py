"""The MCP stdio transport for Kairox (own process group, bounded stderr).

``StdioTransport`` is registered as transport ``stdio`` by :mod:`kairox_stdio.hooks`.
Names load on first use, so importing the hooks stays cheap.
"""

from __future__ import annotations

from kairox.declare import stub_exports

__getattr__, __dir__ = stub_exports(__name__, __file__)
