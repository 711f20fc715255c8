"""DapClient: the Debug Adapter Protocol over a framed message peer.

Messages are plain dicts (``seq``, ``type`` request/response/event). A request
can be sent without waiting (``launch`` must not be awaited before
``configurationDone``) and its response collected later. Events are kept in
order with an absolute index, so a caller takes a cursor *before* sending a
request and then waits for the first matching event after it: nothing that
arrives in between is missed. Requests from the adapter (``runInTerminal``,
``startDebugging``) are answered in their own tasks; kairox supports none.
"""

from __future__ import annotations

import collections
import itertools
import logging
from collections.abc import Callable, Collection
from typing import Any

import anyio
import anyio.abc

from kairox_peer import MessagePeer, PeerClient, PendingRequest

__all__ = ["ConnectionLost", "DapClient", "DapError", "OutputBuffer", "RequestTimeout", "as_dict"]

logger = logging.getLogger(__name__)

MAX_EVENTS = 2000


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else an empty one (outside input is not trusted)."""
    return value if isinstance(value, dict) else {}


class DapError(Exception):
    """The adapter answered a request with ``success: false``."""

    def __init__(self, command: str, message: str, body: Any = None) -> None:
        self.command = command
        self.message = message
        self.body = body
        detail = ""
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            detail = str(body["error"].get("format") or "")
        super().__init__(f"{command} failed: {detail or message or 'no reason given'}")


class RequestTimeout(TimeoutError):
    """No response in time."""


class ConnectionLost(ConnectionError):
    """The adapter's output closed before the response came."""


_PLAIN = ("stdout", "console")


def _stream(category: str) -> str:
    return "" if category in _PLAIN else category


def _render_chunk(category: str, text: str, at_start: bool, previous: str | None) -> str:
    """One output chunk as shown: lines of other categories than stdout/console get ``[category] ``.

    Adapters split output anywhere (debugpy sends a traceback line in pieces), so the prefix goes at
    the start of each *line*, not of each event; a line cut off by another category ends first.
    """
    out = []
    if previous is not None and _stream(previous) != _stream(category) and not at_start:
        out.append("\n")
        at_start = True
    if category in _PLAIN:
        return "".join(out) + text
    for line in text.splitlines(keepends=True):
        out.append(f"[{category}] {line}" if at_start else line)
        at_start = line.endswith(("\n", "\r"))
    return "".join(out)


class OutputBuffer:
    """The program's output (``output`` events), bounded, with a read mark for "what is new"."""

    def __init__(self, max_chars: int = 256 * 1024) -> None:
        self.max_chars = max_chars
        # (category, text, starts a line, category of the chunk before)
        self._chunks: collections.deque[tuple[str, str, bool, str | None]] = collections.deque()
        self._size = 0
        self._total = 0  # characters ever added
        self._read = 0  # characters handed out by read_new
        self._at_start = True
        self._last: str | None = None
        self.dropped = 0

    def add(self, category: str, text: str) -> None:
        if not text:
            return
        self._chunks.append((category, text, self._at_start, self._last))
        self._at_start = text.endswith(("\n", "\r"))
        self._last = category
        self._size += len(text)
        self._total += len(text)
        while self._size > self.max_chars and len(self._chunks) > 1:
            old = self._chunks.popleft()[1]
            self._size -= len(old)
            self.dropped += len(old)

    def text(self) -> str:
        return "".join(_render_chunk(c, t, s, p) for c, t, s, p in self._chunks)

    def read_new(self) -> str:
        """Output added since the last call (what was dropped meanwhile is noted)."""
        start = self._total - self._size  # absolute offset of the first kept character
        skipped = max(0, start - self._read)
        parts: list[str] = []
        offset = start
        for category, text, at_start, previous in self._chunks:
            end = offset + len(text)
            if end > self._read:
                cut = max(0, self._read - offset)
                if cut:
                    at_start, previous = text[cut - 1] in "\r\n", category
                parts.append(_render_chunk(category, text[cut:], at_start, previous))
            offset = end
        self._read = self._total
        note = f"[... {skipped} characters of output dropped]\n" if skipped else ""
        return note + "".join(parts)


class DapClient(PeerClient):
    """One connection to one debug adapter."""

    peer_label = "debug adapter"
    connection_lost = ConnectionLost

    def __init__(
        self,
        peer: MessagePeer,
        *,
        name: str = "dap",
        request_timeout: float = 30.0,
        describe_loss: Callable[[], str] | None = None,
    ) -> None:
        super().__init__(peer, name=name, request_timeout=request_timeout, describe_loss=describe_loss)
        self.capabilities: dict[str, Any] = {}
        self.output = OutputBuffer()
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        self._seq = itertools.count(1)
        self._events: collections.deque[dict[str, Any]] = collections.deque()
        self._event_base = 0  # absolute index of _events[0]
        self._changed = anyio.Event()

    def _poke(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # -- reading ------------------------------------------------------------
    def _dispatch(self, message: dict[str, Any], tg: anyio.abc.TaskGroup) -> None:
        kind = message.get("type")
        if kind == "response":
            seq = message.get("request_seq")
            pending = self._pending.get(seq) if isinstance(seq, int) else None
            if pending is not None:
                pending.response = message
                pending.done.set()
                self._poke()
        elif kind == "event" and isinstance(message.get("event"), str):
            self._on_event(message)
        elif kind == "request" and isinstance(message.get("command"), str):
            tg.start_soon(self._refuse, message)

    def _on_event(self, message: dict[str, Any]) -> None:
        body = message.get("body")
        if message["event"] == "output" and isinstance(body, dict):
            category = str(body.get("category") or "console")
            if category != "telemetry":
                self.output.add(category, str(body.get("output", "")))
        self._events.append(message)
        if len(self._events) > MAX_EVENTS:
            self._events.popleft()
            self._event_base += 1
        for listener in list(self.listeners):
            try:
                listener(message)
            except Exception:
                logger.exception("%s: event listener failed", self.name)
        self._poke()

    async def _refuse(self, message: dict[str, Any]) -> None:
        reply = {
            "seq": next(self._seq),
            "type": "response",
            "request_seq": message.get("seq"),
            "command": message["command"],
            "success": False,
            "message": f"kairox does not support {message['command']}",
        }
        try:
            await self._send(reply)
        except ConnectionLost:
            pass

    # -- events ---------------------------------------------------------------
    def cursor(self) -> int:
        """The index the next event will get: take it before sending what causes the event."""
        return self._event_base + len(self._events)

    def events_since(self, cursor: int) -> list[dict[str, Any]]:
        return list(self._events)[max(0, cursor - self._event_base) :]

    async def wait_event(
        self,
        names: Collection[str],
        *,
        after: int,
        timeout: float,
        unless: Callable[[], bool] | None = None,
    ) -> tuple[int, dict[str, Any]] | None:
        """The first event named one of ``names`` at index >= ``after`` (and its index).

        ``None`` on timeout, or as soon as ``unless()`` is true (checked on
        every message). Raises :class:`ConnectionLost` when the adapter goes
        away first.
        """
        with anyio.move_on_after(timeout):
            while True:
                for offset, event in enumerate(self.events_since(after)):
                    if event.get("event") in names:
                        return max(after, self._event_base) + offset, event
                if self._lost is not None:
                    raise ConnectionLost(self._lost)
                if unless is not None and unless():
                    return None
                await self._changed.wait()
        return None

    def answered(self, seq: int) -> bool:
        """Has the response to request ``seq`` arrived?"""
        pending = self._pending.get(seq)
        return pending is not None and pending.response is not None

    # -- requests ---------------------------------------------------------------
    async def send_request(self, command: str, arguments: Any = None) -> int:
        """Send a request without waiting; returns its ``seq`` for :meth:`response`."""
        seq = next(self._seq)
        message: dict[str, Any] = {"seq": seq, "type": "request", "command": command}
        if arguments is not None:
            message["arguments"] = arguments
        self._pending[seq] = PendingRequest(command)
        try:
            await self._send(message)
        except BaseException:
            self._pending.pop(seq, None)
            raise
        return seq

    async def response(self, seq: int, *, timeout: float | None = None) -> Any:
        """The ``body`` of the response to request ``seq``; raises :class:`DapError` when it failed."""
        pending = self._pending.get(seq)
        if pending is None:
            raise KeyError(f"no request {seq} is waiting")
        limit = self.request_timeout if timeout is None else timeout
        try:
            with anyio.fail_after(limit):
                await pending.done.wait()
        except TimeoutError:
            self._pending.pop(seq, None)
            await self._cancel(seq)
            raise RequestTimeout(f"{pending.name}: no answer from {self.name} within {limit:g} s") from None
        self._pending.pop(seq, None)
        response = pending.response
        if response is None:
            raise ConnectionLost(self._lost or self._loss_text())
        if not response.get("success", False):
            raise DapError(pending.name, str(response.get("message") or ""), response.get("body"))
        return response.get("body")

    async def request(self, command: str, arguments: Any = None, *, timeout: float | None = None) -> Any:
        seq = await self.send_request(command, arguments)
        try:
            return await self.response(seq, timeout=timeout)
        finally:
            self._pending.pop(seq, None)

    async def _cancel(self, seq: int) -> None:
        if self._lost is not None or not self.capabilities.get("supportsCancelRequest"):
            return
        message = {"seq": next(self._seq), "type": "request", "command": "cancel", "arguments": {"requestId": seq}}
        with anyio.move_on_after(1.0):
            try:
                await self._send(message)  # its answer is not awaited
            except ConnectionLost:
                pass
