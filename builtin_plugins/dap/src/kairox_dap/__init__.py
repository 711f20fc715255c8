"""DAP client whose operations become Kairox tools while a debug adapter is configured.

Framing and child-process handling come from kairox-lsp. Names are loaded
lazily so that importing the package is cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kairox_dap' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
