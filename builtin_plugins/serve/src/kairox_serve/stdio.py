"""``kairox serve --stdio``: the gateway on this process's stdin and stdout (one client).

The SDK's ``stdio_server`` reads and writes through worker threads (``anyio.wrap_file``):
two thread hops per message. Where it can (asyncio on POSIX, stdin and stdout pipes or
sockets) the gateway reads and writes the descriptors directly on the event loop instead,
each message parsed (and written) in the task that receives (or sends) it, no reader or
writer task and channel in between. With the SDK's same safety: while serving, fd 0 reads
``/dev/null`` and fd 1 goes to stderr, so a stray ``print`` or a child's output never
reaches the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import AsyncResource
from mcp.shared.message import SessionMessage

from kairox import Runtime

from .gateway import Gateway
from .runtime import serve_config

__all__ = ["claim_stdio", "serve_stdio", "stdio_streams"]

logger = logging.getLogger(__name__)

#: the longest JSON-RPC line read (a longer one is answered as unreadable and skipped)
MAX_LINE = 64 * 1024 * 1024


def _pollable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


@contextlib.contextmanager
def claim_stdio() -> Iterator[tuple[int, int]]:
    """Take the protocol's ends of fd 0 and fd 1 before anything else runs (the runtime's
    plugins, servers and hooks included), leaving fd 0 reading ``/dev/null`` and fd 1 going
    to stderr, so nothing but JSON-RPC ever reaches the client: yields ``(wire_in, wire_out)``
    and restores both at the end."""
    import fcntl

    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield wire_in, wire_out
    finally:
        with contextlib.suppress(Exception):  # what print() buffered goes where it was written to
            sys.stdout.flush()
        with contextlib.suppress(OSError):
            os.dup2(wire_in, 0)
            os.dup2(wire_out, 1)
        for fd in (wire_in, wire_out):
            with contextlib.suppress(OSError):
                os.close(fd)


def _fast_path(wire: tuple[int, int]) -> bool:
    if sys.platform == "win32" or not (_pollable(wire[0]) and _pollable(wire[1])):
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # not asyncio (trio)
        return False
    return True


@contextlib.asynccontextmanager
async def stdio_streams(wire: tuple[int, int]) -> AsyncIterator[tuple[Any, Any]]:
    """``(read_stream, write_stream)`` of :class:`SessionMessage` over the protocol's ends of
    fd 0 and fd 1 (:func:`claim_stdio`; they are duplicated here, the caller keeps its own)."""
    wire_in, wire_out = os.dup(wire[0]), os.dup(wire[1])
    if not _fast_path(wire):
        import io

        from mcp.server.stdio import stdio_server

        stdin = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire_in, "rb"), encoding="utf-8", errors="replace"))
        stdout = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire_out, "wb"), encoding="utf-8"))
        try:
            async with stdio_server(stdin, stdout) as streams:
                yield streams
        finally:
            with contextlib.suppress(OSError):
                await stdin.aclose()
            with contextlib.suppress(OSError):
                await stdout.aclose()
        return
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    read_stream, write_stream = _LineReader(reader), _LineWriter(writer)
    try:
        yield read_stream, write_stream
    finally:
        read_transport.close()  # closes wire_in and wire_out, this function's own copies
        write_transport.close()


class _LineStream(AsyncResource):
    """What both line streams share: closing (the next use raises), and ``async with``
    (:class:`anyio.abc.AsyncResource`)."""

    def __init__(self) -> None:
        self._closed = False

    async def aclose(self) -> None:
        self._closed = True


class _LineReader(_LineStream):
    """The SDK's read stream over fd 0: each ``receive`` reads and parses the next line
    itself (no reader task and channel in between: one task hop less per message)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        super().__init__()
        self._reader = reader

    async def receive(self) -> SessionMessage | Exception:
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            try:
                line = await self._reader.readline()
            except ValueError as exc:  # over MAX_LINE: answered as unreadable, skipped
                return exc
            if not line:
                raise anyio.EndOfStream
            if not line.strip():
                continue
            try:
                return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
            except Exception as exc:
                return exc

    def __aiter__(self) -> _LineReader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _LineWriter(_LineStream):
    """The SDK's write stream over fd 1: each ``send`` serialises the message and writes
    it as one line, in the sender's task (no writer task in between); it waits only when
    the pipe is full."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        super().__init__()
        self._writer = writer

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8") + b"\n"
        try:
            self._writer.write(data)
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as exc:  # the client went away
            raise anyio.BrokenResourceError from exc


async def serve_stdio(rt: Runtime, wire: tuple[int, int]) -> None:
    """Serve ``rt`` until the client closes stdin; ``wire`` is :func:`claim_stdio`'s."""
    gateway = Gateway(rt, serve_config(rt), one_client=True)
    async with gateway.running(), stdio_streams(wire) as (read, write):
        await gateway.server.run(read, write, gateway.server.create_initialization_options())
