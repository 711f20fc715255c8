"""DAP client whose operations become Kairox tools while a debug adapter is configured.

The peer layer (framing, child process, client loop, server lifecycle, tool
errors) comes from kairox-lsp's public names. Names are loaded lazily so that
importing the package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.lazy import lazy_exports

if TYPE_CHECKING:
    from ._client import ConnectionLost, DapClient, DapError, OutputBuffer, RequestTimeout
    from ._config import DapServerConfig
    from ._events import DapServerFailed, DapServerRunning, DapServerStarting, DapServerStopped
    from ._lifecycle import AdapterUnavailable, DapServerLifecycle
    from ._provider import DapToolProvider
    from ._session import Breakpoint, DebugSession, SessionEnded

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["ConnectionLost", "DapClient", "DapError", "OutputBuffer", "RequestTimeout"], "_client"),
    "DapServerConfig": "_config",
    **dict.fromkeys(["DapServerFailed", "DapServerRunning", "DapServerStarting", "DapServerStopped"], "_events"),
    **dict.fromkeys(["AdapterUnavailable", "DapServerLifecycle"], "_lifecycle"),
    "DapToolProvider": "_provider",
    **dict.fromkeys(["Breakpoint", "DebugSession", "SessionEnded"], "_session"),
}

__all__ = [
    "AdapterUnavailable",
    "Breakpoint",
    "ConnectionLost",
    "DapClient",
    "DapError",
    "DapServerConfig",
    "DapServerFailed",
    "DapServerLifecycle",
    "DapServerRunning",
    "DapServerStarting",
    "DapServerStopped",
    "DapToolProvider",
    "DebugSession",
    "OutputBuffer",
    "RequestTimeout",
    "SessionEnded",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
