"""The HTTP front door: what a connection may hold before the gateway has seen its token.

uvicorn reads a request's headers with no deadline (its ``timeout_keep_alive`` stops at the
first byte of the next request, and a new connection has none), and its ``limit_concurrency``
answers 503 only once a request's headers are in, while every socket it accepted stays open.
So a client that trickles its headers a byte at a time, or opens sockets and sends nothing,
holds a file descriptor for as long as it likes, before the token is ever checked.
:class:`GuardedHttp` is uvicorn's own h11 protocol with a watch around it, kept in one
:class:`FrontDoor` per server:

- a connection's request headers must be in within ``header_timeout`` seconds of the
  connection opening or of its previous response, and a request's body within
  ``body_timeout`` of its headers; a connection that misses either is aborted;
- at most ``max_connections`` connections are open at once: a new one beyond that closes the
  oldest connection that is waiting for a request's headers (it has not reached the token
  check, or is idle between requests); when every connection is inside a request, the new
  one is answered ``503`` and closed. Either way a socket costs a file descriptor for a
  bounded time, and a client that sends a request at once is served.

h11, not httptools: h11 bounds a request's headers (uvicorn's ``h11_max_incomplete_event_size``,
16 KiB by default), where uvicorn's httptools protocol keeps whatever headers come.

The app tells the guard where each request is (:func:`watching`). It reaches the guard
through the request's ``scope["state"]``: uvicorn copies a protocol's ``app_state`` into
the scope of each request it reads, and the guard hands its inner protocol an ``app_state``
of its own. The settings come the same way: the gateway's lifespan puts its
:class:`FrontDoor` into the lifespan state, which uvicorn hands every protocol it makes.

Outside ``kairox serve --http``: ``uvicorn --http kairox_serve.frontdoor:GuardedHttp --ws none
kairox_serve.asgi:app``.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs
from starlette.types import Message, Receive, Scope

from kairox import KairoxError

__all__ = ["DOOR_KEY", "DoorLimits", "FrontDoor", "GuardedHttp", "TooFewDescriptors", "ensure_descriptors", "watching"]

logger = logging.getLogger(__name__)

#: the lifespan-state key of the server's :class:`FrontDoor`
DOOR_KEY = "kairox_serve.front_door"
#: the request-state key of the connection's :class:`GuardedHttp`
GUARD_KEY = "kairox_serve.connection"

_BUSY_TEXT = b"refused: the gateway has as many connections open as it may ([serve] max_connections)\n"
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    + b"content-length: %d\r\n\r\n" % len(_BUSY_TEXT)
    + _BUSY_TEXT
)


@attrs.frozen
class DoorLimits:
    """``[serve]``'s ``header_timeout``, ``body_timeout`` (seconds) and ``max_connections``."""

    header_timeout: float
    body_timeout: float
    max_connections: int


class FrontDoor:
    """The open connections of one server, and the order in which those waiting for a
    request's headers began to wait (the oldest is closed first to make room)."""

    def __init__(self, limits: DoorLimits) -> None:
        self.limits = limits
        self._open: set[GuardedHttp] = set()
        #: open connections waiting for a request's headers, oldest first (a dict keeps order)
        self._waiting: dict[GuardedHttp, None] = {}
        #: connections refused since the last warning, and when that was (one a minute at most:
        #: a flood of refusals must not become a flood of log lines)
        self._refused = 0
        self._warned_at = -math.inf

    def admit(self, guard: GuardedHttp) -> bool:
        """Whether a new connection may stay: there is room, or the oldest connection waiting
        for headers is closed to make some."""
        if len(self._open) >= self.limits.max_connections:
            if not self._waiting:
                return False
            oldest = next(iter(self._waiting))
            self.forget(oldest)
            oldest.close("another connection needed its place")
        self._open.add(guard)
        return True

    def refused(self, now: float) -> None:
        self._refused += 1
        if now - self._warned_at >= 60:
            logger.warning(
                "kairox serve: refused %d connection(s): %d are open, each inside a request ([serve] max_connections)",
                self._refused,
                len(self._open),
            )
            self._refused, self._warned_at = 0, now

    def waiting(self, guard: GuardedHttp) -> None:
        """``guard`` waits for a request's headers from now (it goes last in line)."""
        if guard in self._open:
            self._waiting.pop(guard, None)
            self._waiting[guard] = None

    def busy(self, guard: GuardedHttp) -> None:
        self._waiting.pop(guard, None)

    def forget(self, guard: GuardedHttp) -> None:
        self._open.discard(guard)
        self._waiting.pop(guard, None)


class _Phase(enum.Enum):
    HEADERS = "header_timeout"  # the setting whose deadline runs
    BODY = "body_timeout"
    BUSY = ""


class GuardedHttp(asyncio.Protocol):
    """uvicorn's HTTP protocol for one connection, with the :class:`FrontDoor`'s deadlines
    and limit (made by uvicorn: ``uvicorn.Config(http=GuardedHttp)``)."""

    def __init__(
        self,
        config: Any,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        door = app_state.get(DOOR_KEY)
        self.door = door if isinstance(door, FrontDoor) else None
        self.loop = _loop or asyncio.get_running_loop()
        self.inner = H11Protocol(
            config=config, server_state=server_state, app_state={**app_state, GUARD_KEY: self}, _loop=_loop
        )
        self.transport: asyncio.Transport | None = None
        self.admitted = False
        self.phase = _Phase.HEADERS
        self._timer: asyncio.TimerHandle | None = None
        #: the number of the request in progress (a pipelined request's end must not end the next)
        self._request = 0

    # -- asyncio.Protocol, passed on to uvicorn's protocol once admitted ----------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.door is None:
            _log_once(
                logging.ERROR,
                "kairox serve: GuardedHttp serves only kairox_serve's gateway app (its [serve] limits come "
                "from the app's lifespan); refusing connections",
            )
            transport.abort()
            return
        if not self.door.admit(self):
            self.door.refused(self.loop.time())
            transport.write(_BUSY)
            transport.close()
            return
        self.admitted = True
        self.inner.connection_made(transport)
        self._await_headers()

    def data_received(self, data: bytes) -> None:
        if self.admitted:
            self.inner.data_received(data)

    def eof_received(self) -> None:  # None: the transport closes itself (h11 keeps no half-open connection)
        if self.admitted:
            self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        if self.door is not None:
            self.door.forget(self)
        if self.admitted:
            self.admitted = False
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.admitted:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.admitted:
            self.inner.resume_writing()

    # -- the deadlines --------------------------------------------------------------------
    def close(self, why: str) -> None:
        """Abort the connection (what it had not sent is not waited for, nor what it has not read)."""
        self._cancel()
        if self.transport is not None and not self.transport.is_closing():
            logger.info("kairox serve: closed a connection from %s: %s", self._peer(), why)
            self.transport.abort()

    def _peer(self) -> str:
        peer = self.transport.get_extra_info("peername") if self.transport is not None else None
        return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "?"

    def _arm(self, phase: _Phase, seconds: float) -> None:
        self._cancel()
        self.phase = phase
        self._timer = self.loop.call_later(seconds, self._expired, seconds)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self, seconds: float) -> None:
        self._timer = None
        if self.door is not None:
            self.door.forget(self)
        what = "a request's headers" if self.phase is _Phase.HEADERS else "its request's body"
        self.close(f"it did not send {what} within {seconds:g} s ([serve] {self.phase.value})")

    def _await_headers(self) -> None:
        assert self.door is not None
        self.door.waiting(self)
        self._arm(_Phase.HEADERS, self.door.limits.header_timeout)

    # -- what the app tells (through watching) ------------------------------------------------
    def request_started(self, has_body: bool) -> int:
        """A request's headers are in; its body (``has_body``) must follow in time. Returns the
        request's number, for :meth:`body_received` and :meth:`request_ended`."""
        assert self.door is not None
        self._request += 1
        self.door.busy(self)
        if has_body:
            self._arm(_Phase.BODY, self.door.limits.body_timeout)
        else:
            self._cancel()
            self.phase = _Phase.BUSY
        return self._request

    def body_received(self, request: int) -> None:
        if request == self._request and self.phase is _Phase.BODY:
            self._cancel()
            self.phase = _Phase.BUSY

    def request_ended(self, request: int) -> None:
        """The app is done with the request: the next one's headers are waited for. A body
        the app did not read (a refusal answers at once) counts against that wait: the next
        headers cannot come before it."""
        if request == self._request and self.transport is not None and not self.transport.is_closing():
            self._await_headers()


def _has_body(scope: Scope) -> bool:
    for key, value in scope.get("headers", ()):
        if key == b"transfer-encoding" or (key == b"content-length" and value.strip() not in (b"0", b"")):
            return True
    return False


_logged: set[str] = set()


def _log_once(level: int, message: str) -> None:
    if message not in _logged:
        _logged.add(message)
        logger.log(level, message)


@contextmanager
def watching(scope: Scope, receive: Receive) -> Iterator[Receive]:
    """While the app serves the HTTP request ``scope``: its connection's guard knows that the
    request's headers are in, when its body is, and when the app is done with it. Yields the
    ``receive`` to use (``receive`` itself where no guard watches the connection)."""
    guard = scope.get("state", {}).get(GUARD_KEY)
    if not isinstance(guard, GuardedHttp):
        _log_once(
            logging.WARNING,
            "kairox serve: the ASGI server does not enforce [serve] header_timeout, body_timeout and "
            "max_connections (run uvicorn with --http kairox_serve.frontdoor:GuardedHttp --ws none, or "
            "put a proxy with read timeouts in front)",
        )
        yield receive
        return
    request = guard.request_started(_has_body(scope))

    async def receive_watched() -> Message:
        message = await receive()
        if not message.get("more_body", False):  # the last part, or http.disconnect
            guard.body_received(request)
        return message

    try:
        yield receive_watched
    finally:
        guard.request_ended(request)


class TooFewDescriptors(KairoxError):
    """This process may not open the files ``[serve] max_connections`` takes."""


#: file descriptors kept for everything but connections (backends' pipes, logs, config reads)
RESERVE = 64


def ensure_descriptors(max_connections: int) -> None:
    """Make sure this process may open the file descriptors ``max_connections`` takes: the
    connections, and as many again for a burst of new ones (each is accepted, then closed on
    the next turn of the loop when there is no room; the listen queue is as long as the
    limit), beside those already open and :data:`RESERVE`. The soft limit (``ulimit -n``) is
    raised up to the hard one when it is lower; past that this raises
    :class:`TooFewDescriptors`."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        in_use = len(os.listdir("/dev/fd"))
    except OSError:  # pragma: no cover - every POSIX system kairox runs on has /dev/fd
        in_use = RESERVE
    needed = in_use + 2 * max_connections + RESERVE
    if soft == resource.RLIM_INFINITY or needed <= soft:
        return
    if hard == resource.RLIM_INFINITY or needed <= hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
        return
    raise TooFewDescriptors(
        f"[serve] max_connections = {max_connections} needs about {needed} open files ({in_use} are open), "
        f"and this process may open at most {hard} (ulimit -Hn); lower max_connections or raise the limit"
    )
