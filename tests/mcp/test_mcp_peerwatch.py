"""PeerWatch.probe, the liveness check after a broken HTTP response stream, against
real TCP listeners on 127.0.0.1: one that stays up, one that is going away (it
accepts one more connection and then closes, as a server being killed can), and
none at all."""

from __future__ import annotations

import socket

import anyio
import pytest
from anyio.abc import SocketStream

from kairox_mcp import http
from kairox_mcp.http import PROBE_PAUSES, PeerWatch
from kairox_mcp.transport import Diagnostics

pytestmark = pytest.mark.anyio


async def test_a_server_that_keeps_accepting_is_alive_after_every_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "PROBE_TIMEOUT", 30.0)  # every attempt is made, however loaded the machine
    accepted = 0

    async def handle(stream: SocketStream) -> None:
        nonlocal accepted
        accepted += 1
        await stream.aclose()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        watch = PeerWatch(f"http://127.0.0.1:{port}/mcp", Diagnostics())
        await watch.probe(ConnectionResetError("stream broke"))
        assert not watch.dead.is_set()
        assert watch.diagnostics.error is None
        with anyio.fail_after(10):  # the listener's handlers may run after the probe returned
            while accepted < 1 + len(PROBE_PAUSES):  # noqa: ASYNC110
                await anyio.sleep(0.01)
        assert accepted == 1 + len(PROBE_PAUSES)
        tg.cancel_scope.cancel()


async def test_a_server_that_accepts_once_more_and_then_goes_is_dead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "PROBE_TIMEOUT", 30.0)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    port = sock.getsockname()[1]
    closed = anyio.Event()

    async def close_after_first_accept() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except BlockingIOError:
                await anyio.sleep(0.005)
                continue
            conn.close()
            sock.close()
            closed.set()
            return

    sock.setblocking(False)
    watch = PeerWatch(f"http://127.0.0.1:{port}/mcp", Diagnostics())
    async with anyio.create_task_group() as tg:
        tg.start_soon(close_after_first_accept)
        await watch.probe(ConnectionResetError("stream broke"))
    assert closed.is_set()
    assert watch.dead.is_set()
    error = watch.diagnostics.error or ""
    assert error.startswith(f"the server at http://127.0.0.1:{port}/mcp went away: ConnectionResetError: stream broke")
    assert "and then:" in error


async def test_nothing_listening_is_dead_at_the_first_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "PROBE_PAUSES", (60.0,))  # a second attempt would end in PROBE_TIMEOUT: alive
    with socket.socket() as sock:  # a port that was free a moment ago and is closed now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    watch = PeerWatch(f"http://127.0.0.1:{port}/", Diagnostics())
    await watch.probe(OSError("broken"))
    assert watch.dead.is_set()
    assert "[kairox] the server at" in watch.diagnostics.stderr.tail(1)[0]


async def test_a_connection_that_cannot_be_made_in_time_proves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded server (a full SYN backlog) or a slow network: the SDK's reconnection decides."""
    attempts = 0

    async def hanging_connect(host: str, port: int) -> None:
        nonlocal attempts
        attempts += 1
        await anyio.sleep_forever()

    monkeypatch.setattr(http, "PROBE_TIMEOUT", 0.3)
    monkeypatch.setattr(http.anyio, "connect_tcp", hanging_connect)
    watch = PeerWatch("http://127.0.0.1:9/mcp", Diagnostics())
    with anyio.fail_after(10):
        await watch.probe(ConnectionResetError("stream broke"))
    assert attempts == 1 and not watch.dead.is_set() and watch.diagnostics.error is None
