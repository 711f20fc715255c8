"""MCP client, server lifecycle, manager and tool adapter for Kairox.

``import kairox_mcp`` stays cheap: the SDK (``mcp``) is imported the first
time a server connects. The names below load on first use.
"""

from __future__ import annotations

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
