"""A streamable-HTTP MCP server that can be switched to fail, for the HTTP fault tests.

- :func:`mcp_app` — an SDK ``MCPServer`` (tools ``echo``, ``slow_echo``) as an ASGI app.
- :class:`FaultSwitch` — ASGI middleware in front of it: ``ok``; ``500`` (every request
  answers 500); ``expire`` (the sessions that exist now are forgotten: their requests
  answer 404, as a server does for an expired or unknown ``Mcp-Session-Id``; a new
  ``initialize`` works); ``hang`` (requests are read, never answered).
- :class:`TcpProxy` — a TCP relay in front of the server that can ``drop`` every open
  connection and, while ``refusing``, close new ones at once without a byte (the
  client sees "server disconnected without sending a response").
- :func:`served` — runs an ASGI app with uvicorn on a free 127.0.0.1 port (in-process).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.abc import SocketStream
from shared_helpers import serve_asgi


def mcp_app(name: str) -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name, version="1")

    @server.tool()
    def echo(message: str) -> str:
        """Return the message."""
        return message

    @server.tool()
    async def slow_echo(message: str, delay: float = 0.0) -> str:
        """Return the message after ``delay`` seconds."""
        await anyio.sleep(delay)
        return message

    return server.streamable_http_app()


class FaultSwitch:
    """ASGI middleware failing on demand (see the module docstring). Counts what it failed."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.mode = "ok"
        self.expired: set[str] = set()
        self.seen_sessions: set[str] = set()
        self.failed: dict[str, int] = {}
        self.initializes = 0

    def expire_sessions(self) -> None:
        """Forget every session that exists now (its requests get 404 from now on)."""
        self.expired |= self.seen_sessions

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        sid = headers.get("mcp-session-id")
        if sid is not None:
            self.seen_sessions.add(sid)
        elif scope["method"] == "POST":
            self.initializes += 1
        if sid is not None and sid in self.expired:
            await self._answer(send, 404, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no session"}}')
            self.failed["404"] = self.failed.get("404", 0) + 1
            return
        if self.mode == "500" and scope["method"] == "POST":
            await self._answer(send, 500, b"internal error", content_type=b"text/plain")
            self.failed["500"] = self.failed.get("500", 0) + 1
            return
        if self.mode == "hang" and scope["method"] == "POST":
            self.failed["hang"] = self.failed.get("hang", 0) + 1
            await anyio.sleep_forever()
        await self.app(scope, receive, send)

    @staticmethod
    async def _answer(send: Any, status: int, body: bytes, content_type: bytes = b"application/json") -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


def served(app: Any) -> contextlib.AbstractAsyncContextManager[int]:
    """Serve ``app`` with uvicorn on 127.0.0.1; yields the port. Stopping does not wait for
    the open streams of hung requests."""
    return serve_asgi(app, log_level="critical", force_exit=True)


class TcpProxy:
    """Relays 127.0.0.1:``port`` to ``upstream``; can drop and refuse connections."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.port = 0
        self.refusing = False
        self.dropped = 0
        self._open: set[SocketStream] = set()

    def drop(self) -> None:
        """Close every open connection now (mid-request, mid-stream)."""
        for stream in list(self._open):
            self.dropped += 1
            with contextlib.suppress(Exception):
                stream.extra(anyio.abc.SocketAttribute.raw_socket).shutdown(2)  # both directions

    async def _handle(self, client: SocketStream) -> None:
        async with client:
            if self.refusing:
                self.dropped += 1
                return
            try:
                upstream = await anyio.connect_tcp("127.0.0.1", self.upstream)
            except OSError:
                return
            async with upstream:
                self._open |= {client, upstream}
                try:
                    async with anyio.create_task_group() as tg:

                        async def pipe(src: SocketStream, dst: SocketStream) -> None:
                            with contextlib.suppress(Exception):
                                async for chunk in src:
                                    await dst.send(chunk)
                            tg.cancel_scope.cancel()

                        tg.start_soon(pipe, client, upstream)
                        tg.start_soon(pipe, upstream, client)
                finally:
                    self._open -= {client, upstream}

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[TcpProxy]:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, self._handle)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()
