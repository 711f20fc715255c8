"""The MCP SDK's private names that kairox-mcp uses, in one place, each with why.

kairox-mcp uses the SDK through its public API: ``mcp.Client`` (the protocol revision's
negotiation, the ``InputRequiredResult`` rounds, the requests), ``mcp.ClientSession`` (what
the host callbacks are given), ``mcp.types``, ``mcp.shared.exceptions``,
``mcp.shared.message``, ``mcp.client.subscriptions``, ``mcp.client.auth``. What no public
name offers is imported here and nowhere else (``tests/mcp/test_compat.py`` checks that no
other module imports a private SDK module, imports each name below against the installed
SDK, and fails on a release that moved or removed one).

:data:`RUNTIME_NAMES` are used when kairox-mcp runs: while there is one, kairox-mcp's
pyproject stops the ``mcp`` range at the newest release the test ran against.
:data:`TYPING_NAMES` are named in annotations only (imported under ``TYPE_CHECKING``):
a release that moves one breaks the type check, not a user.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # What a transport's ``connect`` yields, the ``(read, write)`` pair the SDK's client
    # runs over (kairox_mcp.transport.Streams). The SDK's public ``mcp.client.Transport``
    # is a context manager of that pair, but the pair's type (``TransportStreams``) and its
    # two stream protocols are defined in private modules only (``mcp.client._transport``,
    # ``mcp.shared._stream_protocols``); no public module exports them.
    from mcp.shared._stream_protocols import ReadStream as ReadStream
    from mcp.shared._stream_protocols import WriteStream as WriteStream

__all__ = ["RUNTIME_NAMES", "TYPING_NAMES"]

#: (module, name) of each private name used at run time
RUNTIME_NAMES: tuple[tuple[str, str], ...] = ()
#: (module, name) of each private name used in annotations only
TYPING_NAMES: tuple[tuple[str, str], ...] = (
    ("mcp.shared._stream_protocols", "ReadStream"),
    ("mcp.shared._stream_protocols", "WriteStream"),
)
