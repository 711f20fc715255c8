"""Keep the SDK's log records out of the terminal: they go to the server's diagnostics.

The SDK logs transport trouble with ``logger.exception`` (a traceback per dead
SSE stream). While a server connects and runs, its task (and every task the
SDK starts from it) carries that server's :class:`Diagnostics` in a context
variable; records from the SDK's loggers are appended there as one line and
dropped, unless ``kairox_mcp`` logs at DEBUG (``kairox -vv``).

The SDK, httpx2 and our own error paths log URLs (``Connecting to SSE endpoint:
https://user:PASSWORD@...``, ``HTTP Request: GET ...?token=...``, tracebacks of
``HTTPStatusError``). Every record of those loggers that is emitted has its
message and traceback text redacted first (URL passwords, secret-looking query
values and arguments, :func:`kairox.ext.redact`), so ``-vv`` shows no secret either.
A logger's filter sees only its own records, so the loggers are named one by one
(:data:`REDACTED_LOGGERS`, plus every logger of ours that exists by then).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from kairox.ext import redact

if TYPE_CHECKING:
    from .transport import Diagnostics

__all__ = ["REDACTED_LOGGERS", "SDK_LOGGERS", "capture_sdk_logs", "install_log_redaction", "redact_record"]

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

#: other loggers whose records may carry a URL with its secrets (our own are added by prefix)
REDACTED_LOGGERS = (
    *SDK_LOGGERS,
    "mcp.client.auth.oauth2",
    "mcp.client.caching",
    "mcp.client.client",
    "httpx2",
    "httpcore2.connection",
    "httpcore2.http11",
    "httpcore2.http2",
    "httpcore2.proxy",
    "httpcore2.socks",
    # every module logger of ours, so that one made after the last connection's scan (a module
    # first imported later) is redacted too (tests/mcp/test_manager_redaction.py checks the list)
    "kairox_mcp.adapter",
    "kairox_mcp.auth",
    "kairox_mcp.client",
    "kairox_mcp.host",
    "kairox_mcp.http",
    "kairox_mcp.lifecycle",
    "kairox_mcp.manager",
    "kairox_mcp.sources",
    "kairox_mcp._streams",
    "kairox_sse.sse",
    "kairox_streamable_http.streamable_http",
    "kairox_stdio._env",
    "kairox_stdio.stdio",
)
_OURS = ("kairox_mcp", "kairox_sse", "kairox_streamable_http", "kairox_stdio")
#: the loggers given a redacting filter (the SDK's own records are redacted as diagnostics)
_LISTED = frozenset(REDACTED_LOGGERS) - frozenset(SDK_LOGGERS)

_current: ContextVar[Diagnostics | None] = ContextVar("kairox_mcp_diagnostics", default=None)
_redacting = False
_formatter = logging.Formatter()


def redact_record(record: logging.LogRecord) -> None:
    """Redact ``record`` in place: its message, and its traceback text (formatted here, so
    the handler's formatter prints the redacted one). Idempotent."""
    if getattr(record, "kairox_redacted", False):
        return
    record.kairox_redacted = True
    try:
        message = record.getMessage()
    except Exception:  # a broken format string: logging reports it itself
        return
    safe = redact(message)
    if safe != message:
        record.msg, record.args = safe, None
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        record.exc_text = redact(_formatter.formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = redact(record.stack_info)


class _Redact(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        redact_record(record)
        return True


class _ToDiagnostics(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        diag = _current.get()
        if diag is None:
            redact_record(record)
            return True
        if record.levelno >= logging.WARNING:
            line = f"[mcp sdk {record.levelname.lower()}] {record.getMessage()}"
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                line += f": {type(exc).__name__}: {exc}"
            diag.stderr.append(line)  # redacted when shown (StderrBuffer.lines)
        if not logging.getLogger("kairox_mcp").isEnabledFor(logging.DEBUG):
            return False
        redact_record(record)
        return True


def install_log_redaction() -> None:
    """Redact the records of :data:`REDACTED_LOGGERS` and of every logger of ours that exists.
    Idempotent; called when the MCP manager is made and when a server connects. Each call
    gives the filter back to a logger that lost it."""
    global _redacting
    if not _redacting:
        for name in _LISTED:  # made now, so that each has its filter from the first call on
            logging.getLogger(name)
        _redacting = True
    flt = _Redact()
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if (
            isinstance(logger, logging.Logger)
            and (name in _LISTED or name.startswith(_OURS))
            and not any(isinstance(f, _Redact) for f in logger.filters)
        ):
            logger.addFilter(flt)


def _install() -> None:
    """The redaction, and the SDK loggers' filter that sends their records to the connecting
    server's diagnostics (redacted); run at each connection, it gives a filter back to a
    logger that lost it."""
    install_log_redaction()
    flt = None
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _ToDiagnostics) for f in logger.filters):
            flt = flt or _ToDiagnostics()
            logger.addFilter(flt)


@contextmanager
def capture_sdk_logs(diagnostics: Diagnostics) -> Iterator[None]:
    """Route SDK log records of this task (and tasks it starts) to ``diagnostics``."""
    _install()
    token = _current.set(diagnostics)
    try:
        yield
    finally:
        _current.reset(token)
