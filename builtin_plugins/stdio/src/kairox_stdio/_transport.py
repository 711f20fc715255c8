"""The ``stdio`` transport as kairox registers it: its settings and ``connect``.

Built at every open, so it imports nothing to be built: the machinery (the process, the
pumps, the line splitter, kairox-mcp's transport contract) is :mod:`kairox_stdio.stdio`,
imported with the first connection. A workspace without a stdio server never imports it.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kairox_mcp.transport import ConnectContext, Streams

__all__ = ["StdioTransport"]


class StdioTransport:
    """The ``stdio`` transport kind. One instance serves any number of connections.

    :param shutdown_grace: seconds to wait for the server to exit after its stdin is closed.
    :param term_grace: seconds to wait after SIGTERM to the group before SIGKILL.
    :param kill_wait: seconds to wait for the leader after SIGKILL (then give up, logged).
    :param write_stall_timeout: a write to the server's stdin that blocks this long
        (the server stopped reading) ends the connection.
    :param max_message_bytes: longer stdout lines are dropped and reported (``None``:
        kairox-mcp's :data:`~kairox_mcp.transport.MAX_MESSAGE_BYTES`, 64 MiB).
    :param max_stderr_line: longer stderr lines are cut (the rest is skipped).
    :param exit_drain: after the server died, how long to wait for the output it
        wrote before dying (its children may keep the pipes open).
    """

    name = "stdio"
    #: ``connect`` imports ``mcp`` only through ``context.import_sdk()``, after the spawn
    imports_sdk_lazily = True

    def __init__(
        self,
        *,
        shutdown_grace: float = 2.0,
        term_grace: float = 2.0,
        kill_wait: float = 2.0,
        write_stall_timeout: float = 60.0,
        max_message_bytes: int | None = None,
        max_stderr_line: int = 8192,
        exit_drain: float = 0.25,
    ) -> None:
        self.shutdown_grace = shutdown_grace
        self.term_grace = term_grace
        self.kill_wait = kill_wait
        self.write_stall_timeout = write_stall_timeout
        self.max_message_bytes = max_message_bytes
        self.max_stderr_line = max_stderr_line
        self.exit_drain = exit_drain

    def connect(self, server: Any, context: ConnectContext) -> AbstractAsyncContextManager[Streams]:
        from .stdio import open_connection

        return open_connection(self, server, context)

    def __repr__(self) -> str:
        return "StdioTransport()"
