"""The contract between kairox-mcp and its transport plugins.

A transport plugin (``kairox-stdio``, ``kairox-sse``, ``kairox-streamable-http``
or a third party's) registers an object implementing :class:`McpTransport`
through ``kairox_register_transports`` (a hook kairox-mcp declares, see
:mod:`kairox_mcp.hookspecs`). A server's lifecycle opens its connection with
``transport.connect(server, context)`` and runs the SDK's ``mcp.Client`` over the
streams it yields.

This module must stay cheap to import: it never imports ``mcp`` at module
level (the stream item types are named in strings only).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from kairox.ext import redact, terminal_safe
from kairox_process import OutputTail

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

    from ._compat import ReadStream, WriteStream  # the SDK's stream protocols (private there)

    #: what ``connect`` yields: (read stream of SessionMessage | Exception, write stream of SessionMessage);
    #: anyio memory object streams satisfy both protocols
    Streams = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]

__all__ = [
    "MAX_MESSAGE_BYTES",
    "MAX_MESSAGE_VALUES",
    "UNREADABLE_HEAD",
    "UNREADABLE_TAIL",
    "ConnectContext",
    "Diagnostics",
    "McpTransport",
    "StderrBuffer",
    "import_sdk",
    "size_text",
    "too_many_values",
]

MiB = 1024 * 1024
#: the largest message a transport reads (a stdio line, a JSON response body)
MAX_MESSAGE_BYTES = 64 * MiB
#: the most JSON values a message may hold: parsed (then made into the SDK's models), each
#: small value costs hundreds of bytes, so 64 MiB of ``{"type":"text","text":"x"},`` took
#: 4.45 GB and 48 s; this many stay under a few hundred MB (tests/security/test_server_messages.py)
MAX_MESSAGE_VALUES = 300_000
#: a JSON string once its escaped backslashes and quotes are gone: no backtracking (one pass)
_STRING = re.compile(rb'"[^"]*"')
#: of a message that cannot be read, the first bytes a transport passes on (``head``) ...
UNREADABLE_HEAD = 64 * 1024
#: ... and the last bytes (``tail``), so the client can tell which request it answered
UNREADABLE_TAIL = 4096


def too_many_values(data: bytes, limit: int = MAX_MESSAGE_VALUES) -> int | None:
    """How many JSON values the message ``data`` holds when that is more than ``limit``
    (``None`` otherwise), counted before it is parsed, in time and memory linear in it.

    Every value but the first follows a ``,`` or opens a ``{`` or ``[``: their count outside
    strings is the number of values, within one. Counted first with the strings in (an
    over-count, at C speed), and only when that passes ``limit`` again without them."""
    quick = data.count(b",") + data.count(b"{") + data.count(b"[")
    if quick <= limit:
        return None
    inside = 0
    # one string at a time (re.sub over millions of strings took 1.4 GB)
    for string in _STRING.finditer(data.replace(b"\\\\", b"").replace(b'\\"', b"")):
        text = string.group()
        inside += text.count(b",") + text.count(b"{") + text.count(b"[")
    count = quick - inside
    return count if count > limit else None


def size_text(n: int) -> str:
    """``70.0 MiB``, ``12.5 KiB``, ``800 bytes``; a whole number of MiB or KiB without decimals
    (``64 MiB``), as limits are written."""
    for unit, scale in (("MiB", MiB), ("KiB", 1024)):
        if n >= scale:
            return f"{n // scale} {unit}" if n % scale == 0 else f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


class StderrBuffer(OutputTail):
    """A server's stderr (and what kairox notes about the connection), bounded whatever the
    server writes: :class:`kairox_process.OutputTail` keeps the first ``head`` lines and the
    last ``max_bytes`` bytes of lines, counting what it drops between them (50 MB of stderr
    costs a few KB here), read back redacted (``redact=True``: URL passwords, secret-looking
    values, whoever wrote them: the server, the HTTP stack's errors, the SDK's log records).
    Transports :meth:`append` lines."""

    def __init__(self, head: int = 50, max_bytes: int = 16 * 1024, max_line: int = 2000) -> None:
        super().__init__(max_bytes, max_line, head_lines=head, redact=True)


@attrs.define
class Diagnostics:
    """What a transport knows about its server's health; the client reads it
    to explain a failure (``McpServerFailed`` carries it)."""

    stderr: StderrBuffer = attrs.field(factory=StderrBuffer)
    exit_code: int | None = None
    pid: int | None = None
    error: str | None = None

    def summary(self, tail: int = 20) -> str:
        """The error, the exit code and the last stderr lines (secrets redacted)."""
        parts = []
        if self.error:
            parts.append(self.stderr.scrub(str(redact(self.error))))
        if self.exit_code is not None:
            parts.append(f"exit code {self.exit_code}")
        # shown, not obeyed, wherever the summary goes (a gateway's remote client included)
        lines = [terminal_safe(line) for line in self.stderr.tail(tail)]
        if lines:
            parts.append("stderr (last lines):\n  " + "\n  ".join(lines))
        return "; ".join(parts[:2]) + ("\n" + parts[2] if len(parts) > 2 else "")


async def import_sdk() -> object:
    """The one shared import of the ``mcp`` SDK (with ``kairox_mcp.client``), run off the
    event loop in one worker thread however many connections wait for it
    (:func:`kairox_mcp.lifecycle.import_client`). Returns when ``mcp`` is importable at no cost."""
    from .lifecycle import import_client

    return await import_client()


@attrs.define
class ConnectContext:
    """Given to ``connect``: where the server runs and where to report.

    A transport whose ``connect`` imports nothing of ``mcp`` before it awaits
    :attr:`import_sdk` says so with a class attribute ``imports_sdk_lazily = True``:
    the lifecycle then enters ``connect`` before the SDK is imported, so a server
    process starts while the SDK loads (about 0.4 s) instead of after it.
    """

    server_name: str
    workspace: Path
    env: Mapping[str, str]  # the runtime's environment (for `""` = inherit, ${VAR} already expanded)
    diagnostics: Diagnostics = attrs.field(factory=Diagnostics)
    log_file: Path | None = None  # optional: also append stderr here
    startup_timeout: float = 30.0
    #: await before using ``mcp`` in ``connect`` (the shared import, see :func:`import_sdk`)
    import_sdk: Callable[[], Awaitable[object]] = import_sdk


@runtime_checkable
class McpTransport(Protocol):
    """One transport kind. ``name`` is the ``type`` value in a server entry."""

    name: str

    def connect(self, server: Any, context: ConnectContext) -> AbstractAsyncContextManager[Streams]:
        """Open the connection; yield ``(read_stream, write_stream)`` for ``ClientSession``.

        ``server`` is the server's config entry (``kairox_mcp.config.McpServerConfig``).
        On exit, close everything; for processes: no child (or grandchild) may survive.
        A dead peer must end the read stream promptly (so pending requests fail),
        after filling ``context.diagnostics``.

        A message that cannot be read (over the transport's size limit, nested deeper
        than the JSON parser allows, not JSON-RPC) goes into the read stream as an
        exception that may carry ``reason`` (``str``: why, said to the caller, e.g.
        ``"response of 70.0 MiB exceeds the 64 MiB limit"``), ``head`` and ``tail``
        (``bytes``: the message's first :data:`UNREADABLE_HEAD` and last
        :data:`UNREADABLE_TAIL` bytes). The client reads from them which of its
        requests the message answered and fails that request at once with the reason.
        """
        ...
