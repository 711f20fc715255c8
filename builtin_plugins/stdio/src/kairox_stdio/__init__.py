"""The MCP stdio transport for Kairox (own process group, bounded stderr).

``StdioTransport`` is registered as transport ``stdio`` by :mod:`kairox_stdio.hooks`.
Names load on first use, so importing the hooks stays cheap.
"""

from __future__ import annotations

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
