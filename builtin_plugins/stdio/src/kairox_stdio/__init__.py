"""The MCP stdio transport for Kairox (own process group, bounded stderr).

``StdioTransport`` is registered as transport ``stdio`` by :mod:`kairox_stdio.hooks`.
Names load on first use, so importing the hooks stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.lazy import lazy_exports

if TYPE_CHECKING:
    from ._env import BASE_ENV_VARS, build_env
    from .stdio import InvalidServerMessage, StdioServerError, StdioTransport

_EXPORTS = {
    "BASE_ENV_VARS": "_env",
    "build_env": "_env",
    "InvalidServerMessage": "stdio",
    "StdioServerError": "stdio",
    "StdioTransport": "stdio",
}
__all__ = ["BASE_ENV_VARS", "InvalidServerMessage", "StdioServerError", "StdioTransport", "build_env"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
