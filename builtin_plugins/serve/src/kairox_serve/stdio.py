"""``kairox serve --stdio``: the gateway on this process's stdin and stdout (one client).

The SDK's ``stdio_server`` reads and writes through worker threads (``anyio.wrap_file``):
two thread hops per message. Where it can (asyncio on POSIX, stdin and stdout pipes or
sockets) the gateway reads and writes the descriptors directly on the event loop instead,
with the SDK's same safety: while serving, fd 0 reads ``/dev/null`` and fd 1 goes to
stderr, so a stray ``print`` or a child's output never reaches the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from kairox import Runtime

from .gateway import Gateway
from .runtime import serve_config

__all__ = ["serve_stdio", "stdio_streams"]

logger = logging.getLogger(__name__)

#: the longest JSON-RPC line read (a longer one is answered as unreadable and skipped)
MAX_LINE = 64 * 1024 * 1024


def _pollable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def _fast_path() -> bool:
    if sys.platform == "win32" or not (_pollable(0) and _pollable(1)):
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # not asyncio (trio)
        return False
    return True


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """``(read_stream, write_stream)`` of :class:`SessionMessage` over fd 0 and fd 1."""
    if not _fast_path():
        from mcp.server.stdio import stdio_server

        async with stdio_server() as streams:
            yield streams
        return
    import fcntl

    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    to_server, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_server = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_lines() -> None:
        async with to_server:
            while True:
                try:
                    line = await reader.readline()
                except ValueError as exc:  # over MAX_LINE: skipped
                    await to_server.send(exc)
                    continue
                if not line:
                    return
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:
                    await to_server.send(exc)
                    continue
                await to_server.send(SessionMessage(message))

    async def write_lines() -> None:
        async with from_server:
            async for session_message in from_server:
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                writer.write(data.encode("utf-8") + b"\n")
                await writer.drain()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_lines)
            tg.start_soon(write_lines)
            try:
                yield read_stream, write_stream
            finally:
                tg.cancel_scope.cancel()
    finally:
        with contextlib.suppress(OSError):
            os.dup2(wire_in, 0)
            os.dup2(wire_out, 1)
        read_transport.close()
        write_transport.close()


async def serve_stdio(rt: Runtime) -> None:
    """Serve ``rt`` until the client closes stdin."""
    gateway = Gateway(rt, serve_config(rt), one_client=True)
    async with gateway.running(), stdio_streams() as (read, write):
        await gateway.server.run(read, write, gateway.server.create_initialization_options())
