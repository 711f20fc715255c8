"""MCP client, server lifecycle, manager and tool adapter for Kairox.

``import kairox_mcp`` stays cheap: the SDK (``mcp``) is imported the first
time a server connects. The names below load on first use.
"""

from __future__ import annotations

from kairox.declare import stub_exports

__getattr__, __dir__ = stub_exports(__name__, __file__)
