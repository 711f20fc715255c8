"""The MCP stdio transport for Kairox (own process group, bounded stderr).

``StdioTransport`` is registered as transport ``stdio`` by :mod:`kairox_stdio.hooks`.
"""

from __future__ import annotations

from ._env import BASE_ENV_VARS, build_env
from .stdio import InvalidServerMessage, StdioServerError, StdioTransport

__all__ = ["BASE_ENV_VARS", "InvalidServerMessage", "StdioServerError", "StdioTransport", "build_env"]
