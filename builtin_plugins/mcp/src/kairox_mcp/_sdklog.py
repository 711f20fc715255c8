"""Keep secrets out of log records, and the SDK's records out of the terminal.

Redaction. The SDK, httpx2 and our own error paths log URLs (``Connecting to SSE
endpoint: https://user:PASSWORD@...``, ``HTTP Request: GET ...?token=...``, tracebacks
of ``HTTPStatusError``). Every record of a module of the SDK (``mcp``, and ``client``,
the name its session logs under), of httpx2 and httpcore2, and of a kairox plugin package
(every top-level ``kairox_*`` package imported: ``kairox_mcp``, the transports, ...)
has its message and traceback text redacted (URL passwords, secret-looking query values
and arguments, :func:`kairox.ext.redact`) before a handler of the program's prints it, so
``-vv`` or an embedding program's own DEBUG handler shows no secret either.

Logging hands a record to the handlers of the logger that made it, then to those of each
logger above it, up to the root logger's (where a program's handlers are). So each of
those packages' own logger (``mcp``, ``kairox_stdio``, ...) has a handler of ours that
redacts the record in place and prints nothing (:class:`RedactingHandler`): it sees the
record of every module of the package, one imported long after (``kairox_stdio.newmod``)
included, before the root's handlers do; no module is named here. (A logger's *filter*
would see only the records made at that logger itself.) The handlers are installed when
the MCP manager gets its first server (:func:`install_log_redaction`), and each connection
gives one back to a package logger that lost it. One consequence: a program that
configured no logging at all no longer gets those packages' warnings printed by Python's
last-resort handler (a handler was found: ours).

Diagnostics. While a server connects and runs, its task (and every task the SDK starts
from it) carries that server's :class:`Diagnostics` in a context variable; records of
the SDK's client side are appended there as one line and dropped, unless ``kairox_mcp``
logs at DEBUG (``kairox -vv``): the SDK logs transport trouble with ``logger.exception``
(a traceback per dead SSE stream). Dropping a record takes a filter on the logger that
made it, so every logger of the SDK's client side that exists when a server connects gets
one (:func:`watch_sdk_loggers`: once the SDK and the transport's SDK module are
imported); a logger made after that gets it at the next connection, and until then its
records are redacted and printed as any other.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from kairox.ext import redact

if TYPE_CHECKING:
    from .transport import Diagnostics

__all__ = [
    "RedactingHandler",
    "capture_sdk_logs",
    "install_log_redaction",
    "redact_record",
    "sdk_diagnostics",
    "watch_sdk_loggers",
]

#: the package loggers of the libraries whose records are redacted: the SDK (its session logs
#: as "client"), and the HTTP stack of its HTTP transports
LIBRARY_LOGGERS = ("mcp", "client", "httpx2", "httpcore2")
#: the top-level packages of kairox plugins (``kairox_<feature>``): theirs are redacted too
PLUGIN_PREFIX = "kairox_"

#: the diagnostics this task's SDK records go to (set around a connection, and around each
#: call from the caller's task: :func:`capture_sdk_logs` does both for a block)
sdk_diagnostics: ContextVar[Diagnostics | None] = ContextVar("kairox_mcp_diagnostics", default=None)
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


class RedactingHandler(logging.Handler):
    """Redacts every record that reaches it, in place, and prints nothing. On a package's
    logger it sees the records of all the package's modules before the handlers of the
    loggers above (the root's) do."""

    def handle(self, record: logging.LogRecord) -> bool:
        redact_record(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:  # pragma: no cover - handle() emits nothing
        pass


class _ToDiagnostics(logging.Filter):
    """On a logger of the SDK's client side: a record made while a server connects or runs
    goes to that server's diagnostics, and to the handlers only at DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        diag = sdk_diagnostics.get()
        if diag is None:
            return True
        if record.levelno >= logging.WARNING:
            line = f"[mcp sdk {record.levelname.lower()}] {record.getMessage()}"
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                line += f": {type(exc).__name__}: {exc}"
            diag.stderr.append(line)  # redacted when shown (StderrBuffer.lines)
        return logging.getLogger("kairox_mcp").isEnabledFor(logging.DEBUG)


_handler = RedactingHandler()
_to_diagnostics = _ToDiagnostics()
#: the package loggers given the handler so far (those of the plugin packages found since)
_packages: set[str] = set(LIBRARY_LOGGERS)


def install_log_redaction() -> None:
    """Give the package logger of each library in :data:`LIBRARY_LOGGERS` and of each kairox
    plugin package imported (``kairox_*`` in ``sys.modules``: a plugin's package is imported
    when the plugin host loads it) the :class:`RedactingHandler`. Idempotent; called when
    the MCP manager is made."""
    _packages.update(name for name in list(sys.modules) if name.startswith(PLUGIN_PREFIX) and "." not in name)
    _restore()


def _restore() -> None:
    """Give the handler to each package logger found so far that lacks it (made since, or
    lost it): run at each connection, it costs a look at a dozen loggers."""
    for name in list(_packages):
        logger = logging.getLogger(name)
        if _handler not in logger.handlers:
            logger.addHandler(_handler)


def _sdk_client_side(name: str) -> bool:
    """Whether logger ``name`` is one of the SDK's client side (its server side serves
    ``kairox serve``'s clients: not a server connection's business)."""
    return name == "client" or (name.startswith("mcp.") and not name.startswith("mcp.server"))


def watch_sdk_loggers() -> None:
    """Give every logger of the SDK's client side that exists the filter that sends its
    records to the connecting server's diagnostics (see the module docstring). Run at each
    connection once the SDK is imported: a logger made since, or one that lost the filter,
    gets it then."""
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and _sdk_client_side(name) and _to_diagnostics not in logger.filters:
            logger.addFilter(_to_diagnostics)


@contextmanager
def capture_sdk_logs(diagnostics: Diagnostics) -> Iterator[None]:
    """Route SDK log records of this task (and tasks it starts) to ``diagnostics`` (those of
    the loggers :func:`watch_sdk_loggers` has seen); the redaction is in place from here on."""
    _restore()
    token = sdk_diagnostics.set(diagnostics)
    try:
        yield
    finally:
        sdk_diagnostics.reset(token)
