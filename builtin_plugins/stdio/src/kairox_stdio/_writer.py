"""The session's write stream to a server's stdin: a non-blocking pipe written in the sender's task.

A message the pipe takes at once (the usual case: a request of a few hundred bytes into an
empty 64 KiB pipe) is written by the task that sends it, with no hand-over to a writer task;
the SDK's ``stdio_client`` hands every message to a task of its own, which costs a task
switch a message. What the pipe cannot take yet waits, in order, for :meth:`StdinWriter.run`
(the connection's writer task), which writes it as the server reads:

- :meth:`send_nowait` writes a message only when nothing is waiting before it (order is kept:
  otherwise :class:`anyio.WouldBlock`); what of it the pipe does not take is finished by the
  writer task, before anything else;
- :meth:`send` waits until its message is written (the back-pressure a memory stream of size 0
  gives: at most one message is accepted and not yet written); cancelled before any byte of it
  was written, the message is not sent; once a byte went out it is finished (the framing);
- a write not done ``stall_timeout`` after it began (the server stopped reading; the time
  counts from the write's start, as the watchdog this replaces counted) calls
  ``on_stall(size)`` and the writer task ends: the one timer of the connection's writes,
  armed only while the writer task waits for the pipe; a head withdrawn by its cancelled
  sender stops its timer. :attr:`writing` is that write, ``(since, its size)``, ``None``
  when nothing waits;
- a broken pipe (the server closed its stdin or died) drops the message and every later one
  (their calls fail when the connection ends, with why) and calls ``on_broken`` once, in the
  writer task; after :meth:`close` (the connection ended) a send raises
  :class:`anyio.BrokenResourceError` and the messages waiting get it too; after :meth:`aclose`
  (the session is done with it) :class:`anyio.ClosedResourceError`, and a message already
  begun is still finished by the writer task (:meth:`finish` waits for it, bounded, before
  the transport closes the pipe).

The message is encoded as the SDK's ``stdio_client`` encodes it: one line of
``model_dump_json(by_alias=True, exclude_unset=True)``.
"""

from __future__ import annotations

import math
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import AsyncResource

__all__ = ["StdinWriter", "encode"]


def encode(item: Any) -> bytes:
    """One ``SessionMessage`` as the line the server reads."""
    line: str = item.message.model_dump_json(by_alias=True, exclude_unset=True)
    return (line + "\n").encode()


class _Waiting:
    """A message not (fully) written yet."""

    __slots__ = ("done", "error", "rest", "since", "size")

    def __init__(self, data: bytes | memoryview, size: int, done: anyio.Event | None) -> None:
        self.rest = memoryview(data)
        self.size = size
        #: set when it is written (or dropped, or failed: ``error``); ``None``: nobody waits for it
        self.done = done
        self.error: type[Exception] | None = None
        #: when its write began (``time.monotonic()``), for the stall watchdog
        self.since: float | None = time.monotonic() if self.started else None

    @property
    def started(self) -> bool:
        """A byte of it was written: it must be finished before anything else."""
        return len(self.rest) < self.size


class StdinWriter(AsyncResource):
    """See the module docstring. ``fd`` is the write end of the server's stdin pipe, made
    non-blocking here; the writer owns it (:meth:`close_fd`)."""

    def __init__(
        self,
        fd: int,
        *,
        on_broken: Callable[[OSError], Awaitable[None]],
        stall_timeout: float = math.inf,
        on_stall: Callable[[int], None] | None = None,
    ) -> None:
        os.set_blocking(fd, False)
        self._fd: int | None = fd
        self._on_broken = on_broken
        self._stall_timeout = stall_timeout
        self._on_stall = on_stall
        self._queue: deque[_Waiting] = deque()
        self._work = anyio.Event()
        self._scope = anyio.CancelScope()
        #: the writer task's wait for the pipe going on (the head's stall timer)
        self._wait_scope: anyio.CancelScope | None = None
        #: the writer task ends (the connection ended, or the session closed with nothing started)
        self._stopped = False
        #: the pipe broke (``EPIPE``...): messages are dropped from now on
        self.broken: OSError | None = None
        self._ended: type[Exception] | None = None
        #: the write going on: (when it began, ``time.monotonic()``; its size); ``None``: none
        self.writing: tuple[float, int] | None = None

    # -- the session's side --------------------------------------------------------
    def send_nowait(self, item: Any) -> None:
        if self._ended is not None:
            raise self._ended
        if self._queue:
            raise anyio.WouldBlock
        if self.broken is not None or self._fd is None:
            return  # the connection is ending: the call fails with why
        data = encode(item)
        written = self._write(data)
        if written < len(data):
            waiting = _Waiting(memoryview(data)[written:], len(data), None)
            self._queue.append(waiting)
            self.writing = (waiting.since or time.monotonic(), len(data))
            self._work.set()

    async def send(self, item: Any) -> None:
        try:
            self.send_nowait(item)
            return
        except anyio.WouldBlock:
            pass
        data = encode(item)
        waiting = _Waiting(data, len(data), anyio.Event())
        assert waiting.done is not None
        self._queue.append(waiting)
        self._work.set()
        try:
            await waiting.done.wait()
        except BaseException:
            if not waiting.started and waiting in self._queue:
                head = self._queue[0] is waiting
                self._queue.remove(waiting)  # not a byte of it out: it is not sent
                if head:  # nobody waits for it: its stall timer stops, the next one's starts
                    self.writing = None
                    if self._wait_scope is not None:
                        self._wait_scope.cancel()
            raise
        if waiting.error is not None:
            raise waiting.error

    async def aclose(self) -> None:
        """The session is done with the stream: sends fail (:class:`anyio.ClosedResourceError`)
        and what waits is dropped, except a message of which some bytes went out: the writer
        task finishes it (:meth:`finish` waits for that), so the server's last line is whole."""
        if self._ended is None:
            self._ended = anyio.ClosedResourceError
        head = self._queue[0] if self._queue and self._queue[0].started else None
        if head is not None:
            self._queue.popleft()
        self._drop_waiting(self._ended)
        if head is None:
            self._stop()
        else:
            self._queue.append(head)
            self._work.set()

    # -- the connection's side ---------------------------------------------------------
    def close(self) -> None:
        """The connection ended: sends fail (:class:`anyio.BrokenResourceError`) from now on."""
        self._end(anyio.BrokenResourceError)

    async def finish(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for the message of which some bytes went out (before
        :meth:`close_fd`: the server's last line is not cut short when it reads on)."""
        head = self._queue[0] if self._queue else None
        if head is None or not head.started:
            return
        if head.done is None:
            head.done = anyio.Event()
        with anyio.move_on_after(timeout):
            await head.done.wait()

    def close_fd(self) -> None:
        """Close the pipe (the server reads EOF); a write waiting for it is woken first."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        anyio.notify_closing(fd)
        os.close(fd)
        self.writing = None

    async def run(self) -> None:
        """The writer task: writes what waits, as the pipe takes it; ends when the pipe breaks
        (after ``on_broken``), is closed, or the connection ends."""
        try:
            with self._scope:  # cancelled by close(): a wait for a full pipe ends with it
                while not self._stopped and not (self._ended is not None and not self._queue):
                    await self._work.wait()
                    self._work = anyio.Event()
                    await self._drain()
                    if self.broken is not None:
                        break
            if self.broken is not None and not self._stopped:
                await self._on_broken(self.broken)
        except anyio.ClosedResourceError:
            pass  # close_fd() during a wait: shutting down

    async def _drain(self) -> None:
        queue = self._queue
        while queue and self.broken is None and not self._stopped:
            head = queue[0]
            if head.since is None:
                head.since = time.monotonic()
            self.writing = (head.since, head.size)
            fd = self._fd
            if fd is None:
                return
            with anyio.move_on_after(head.since + self._stall_timeout - time.monotonic()) as waited:
                self._wait_scope = waited  # send() cancels it when it withdraws the head
                try:
                    await anyio.wait_writable(fd)
                finally:
                    self._wait_scope = None
            if self._fd is None or not queue or queue[0] is not head:
                continue  # its sender was cancelled before a byte of it went out (see send)
            if waited.cancelled_caught:  # the server stopped reading
                self.writing = None
                if self._on_stall is not None:
                    self._on_stall(head.size)
                self._end(anyio.BrokenResourceError)
                return
            written = self._write(head.rest)
            if written:
                head.rest = head.rest[written:]
            if not head.rest or self.broken is not None:
                queue.popleft()
                if head.done is not None:
                    head.done.set()
        self.writing = None
        if self.broken is not None:
            self._drop_waiting(None)

    def _write(self, data: bytes | memoryview) -> int:
        """What of ``data`` the pipe took; a broken pipe is noted (:attr:`broken`) and counts
        as all of it (nobody will read it)."""
        assert self._fd is not None
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            if self.broken is None:
                self.broken = exc
                self._work.set()
            return len(data)

    def _end(self, error: type[Exception]) -> None:
        if self._ended is None:
            self._ended = error
        self._drop_waiting(self._ended)
        self._stop()

    def _stop(self) -> None:
        """The writer task ends now (what it was writing is left as it is)."""
        self._stopped = True
        self.writing = None
        self._scope.cancel()

    def _drop_waiting(self, error: type[Exception] | None) -> None:
        while self._queue:
            waiting = self._queue.popleft()
            waiting.error = error
            if waiting.done is not None:
                waiting.done.set()
