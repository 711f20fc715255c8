"""The CLI's log output: one stderr handler, its level from ``-v``/``-vv``, secrets redacted.

Without ``-v`` only errors are printed (``kairox: ERROR: ...``); ``-v`` shows INFO
(a provider that failed to start, a server that was restarted), ``-vv`` DEBUG
(every MCP message), ``-vvv`` the HTTP client's own records too. Whatever a record says, the line printed
passes :func:`kairox.ext.redact`: URL passwords, secret-looking query values and
``--token=...`` arguments are hidden, tracebacks included.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TextIO

from kairox.ext import redact

__all__ = ["configure_logging"]

#: records of these loggers are noise below WARNING even at -v (they repeat per request)
_CHATTY = ("asyncio", "httpx", "httpx2", "httpcore", "httpcore2", "hpack", "markdown_it")


class RedactingFormatter(logging.Formatter):
    """Formats as usual, then redacts the whole text (message, traceback, stack)."""

    def format(self, record: logging.LogRecord) -> str:
        return str(redact(super().format(record)))


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """Ours, so configuring again replaces it instead of adding a second one."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr  # whatever sys.stderr is now (the CLI's guard, a test's capture)

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def configure_logging(verbose: int = 0) -> Callable[[], None]:
    """Route log records to stderr at ERROR, INFO (``verbose=1``) or DEBUG (``verbose>=2``).

    Returns a function that puts the logging configuration back as it was (an
    in-process run, ``KairoxHarness.cli``, must leave the host's logging alone)."""
    root = logging.getLogger()
    saved_level = root.level
    saved_handlers = list(root.handlers)
    saved_chatty = {name: logging.getLogger(name).level for name in _CHATTY}
    for handler in list(root.handlers):
        if isinstance(handler, _Handler):
            root.removeHandler(handler)
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose == 1 else logging.ERROR
    handler = _Handler()
    handler.setFormatter(
        RedactingFormatter(
            "kairox: %(levelname)s: %(name)s: %(message)s" if verbose else "kairox: %(levelname)s: %(message)s"
        )
    )
    handler.setLevel(level)
    root.addHandler(handler)
    root.setLevel(level)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose > 2 else logging.WARNING)

    def restore() -> None:
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
        for name, chatty_level in saved_chatty.items():
            logging.getLogger(name).setLevel(chatty_level)

    return restore
