"""Keep the SDK's log records out of the terminal: they go to the server's diagnostics.

The SDK logs transport trouble with ``logger.exception`` (a traceback per dead
SSE stream). While a server connects and runs, its task (and every task the
SDK starts from it) carries that server's :class:`Diagnostics` in a context
variable; records from the SDK's loggers are appended there as one line and
dropped, unless ``kairox_mcp`` logs at DEBUG (``kairox -vv``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .transport import Diagnostics

__all__ = ["SDK_LOGGERS", "capture_sdk_logs"]

#: loggers of the mcp SDK's client side ("client" is the session's logger name)
SDK_LOGGERS = (
    "client",
    "mcp.client.sse",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.client.session",
    "mcp.shared.jsonrpc_dispatcher",
    "mcp.shared.dispatcher",
    "mcp.shared.tool_name_validation",
)

_current: ContextVar[Diagnostics | None] = ContextVar("kairox_mcp_diagnostics", default=None)
_installed = False


class _ToDiagnostics(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        diag = _current.get()
        if diag is None:
            return True
        if record.levelno >= logging.WARNING:
            line = f"[mcp sdk {record.levelname.lower()}] {record.getMessage()}"
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                line += f": {type(exc).__name__}: {exc}"
            diag.stderr.append(line)
        return logging.getLogger("kairox_mcp").isEnabledFor(logging.DEBUG)


def _install() -> None:
    global _installed
    if _installed:
        return
    flt = _ToDiagnostics()
    for name in SDK_LOGGERS:
        logging.getLogger(name).addFilter(flt)
    _installed = True


@contextmanager
def capture_sdk_logs(diagnostics: Diagnostics) -> Iterator[None]:
    """Route SDK log records of this task (and tasks it starts) to ``diagnostics``."""
    _install()
    token = _current.set(diagnostics)
    try:
        yield
    finally:
        _current.reset(token)
