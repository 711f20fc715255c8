"""The session's side of a transport's streams: what the server sends is checked
before the SDK's ``ClientSession`` sees it.

- The write side notes every request kairox sends (id and method) until it is
  answered or cancelled.
- The read side notices EOF (the server went away) as it happens.
- A message the transport could not read (an exception carrying ``reason``,
  ``head`` and ``tail``, see :class:`~kairox_mcp.transport.McpTransport`; or the
  SDK's own parse error carrying the raw input) that answers one of those
  requests becomes an error response for it, at once, with the reason. The SDK
  would drop it and the call would wait out its timeout. Which request it
  answered is read from its bytes (:func:`~kairox_mcp._sniff.sniff_response`);
  only a pending request of this session can be failed. When the message is a
  response whose id cannot be read, every pending request fails: any of them
  may be the one that will never be answered, and no other message is lost (the
  framing is intact), so the session carries on.
- A ``tools/list`` result is checked tool by tool (the name rule, the input
  schema, the SDK's model): a tool that fails is left out with a warning naming
  the server and the tool, the others load. The SDK validates the whole result at
  once and would fail the server for one bad tool. (A result whose tools all pass
  is seen to in one pass over the whole, the same checks at once.)

Imports ``mcp``: imported with :mod:`kairox_mcp.client`.
"""

from __future__ import annotations

import functools
import logging
from collections import deque
from collections.abc import Mapping
from typing import Any

import anyio
import mcp.types as types
from anyio.abc import AsyncResource
from mcp.shared.message import SessionMessage
from mcp.types import methods
from pydantic import TypeAdapter

from kairox.ext import terminal_safe

from ._sniff import Sniffed, sniff_response
from .adapter import tool_problem
from .transport import UNREADABLE_HEAD, UNREADABLE_TAIL, Diagnostics

__all__ = ["UNREADABLE", "Exchange", "GuardedReadStream", "GuardedWriteStream"]

logger = logging.getLogger(__name__)

#: ``data`` of the error responses made here for unreadable responses
UNREADABLE = "kairox: unreadable response"
#: how much of a rejected tool's name a warning shows
SHOWN_NAME = 80
#: tools checked in one pass (:meth:`Exchange._all_valid`): a slice's models alone are alive at
#: once, so a listing of thousands of tools costs no more collection than one by one did
CHECK_SLICE = 200

RequestId = int | str


def _key(rid: Any) -> str | None:
    """The SDK correlates ``7`` and ``"7"``; so do we."""
    if isinstance(rid, bool) or not isinstance(rid, int | str):
        return None
    return str(rid)


def _shown(name: Any) -> str:
    if not isinstance(name, str):
        return "<no name>" if name is None else f"<{type(name).__name__} name>"
    cut = name[:SHOWN_NAME]
    return '"' + terminal_safe(cut) + ('..."' if len(name) > SHOWN_NAME else '"')


def _pydantic_problem(exc: Exception, skip: int = 0) -> str:
    errors = getattr(exc, "errors", None)
    first: Mapping[str, Any] = {}
    if callable(errors):
        listed = errors()
        first = listed[0] if listed else {}
    loc = ".".join(str(p) for p in tuple(first.get("loc", ()))[skip:])
    msg = str(first.get("msg", exc))
    return terminal_safe(f"{loc}: {msg}" if loc else msg)


def _parse_failure(exc: Exception) -> tuple[str, bytes, bytes] | tuple[str, Mapping[str, Any]] | None:
    """What an SDK parse error (legacy SSE puts pydantic's error in the stream) holds: the raw
    message (``reason, head, tail``) or the parsed object (``reason, message``)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    try:
        listed = errors()
    except Exception:
        return None
    for error in listed:
        given = error.get("input")
        if error.get("type") == "json_invalid" and isinstance(given, str | bytes):
            raw = given.encode() if isinstance(given, str) else given
            why = str(error.get("msg", "")).removeprefix("Invalid JSON: ")
            reason = (
                f"the response is nested deeper than the JSON parser allows ({why})"
                if "recursion limit" in why
                else f"the response is not JSON ({why})"
            )
            return reason, raw[:UNREADABLE_HEAD], raw[-UNREADABLE_TAIL:]
        if isinstance(given, Mapping) and "id" in given:
            return "the response is not a valid JSON-RPC message", given
    return None


@functools.cache
def _tool_list() -> TypeAdapter[list[types.Tool]]:
    return TypeAdapter(list[types.Tool])


class Exchange:
    """The requests one session has pending, and what their answers said."""

    def __init__(self, server: str, diagnostics: Diagnostics) -> None:
        self.server = server
        self.diagnostics = diagnostics
        #: request id (as a string) -> (the id as sent, method)
        self.pending: dict[str, tuple[RequestId, str]] = {}
        #: the version the server chose in its ``initialize`` answer
        self.protocol_version: str | None = None
        #: tools of the last ``tools/list`` left out: shown name -> why
        self.rejected_tools: dict[str, str] = {}
        self._warned: set[tuple[str, str]] = set()

    def _done(self, key: str) -> tuple[RequestId, str] | None:
        """Request ``key`` is no longer pending (answered, failed, cancelled): its entry."""
        return self.pending.pop(key, None)

    # -- what we send ---------------------------------------------------------------
    def sent(self, message: Any) -> str | None:
        """Note a message the session sends; the key of the request it sends or cancels."""
        if isinstance(message, types.JSONRPCRequest):
            key = _key(message.id)
            if key is not None:
                self.pending[key] = (message.id, message.method)
            return key
        if isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            key = _key((message.params or {}).get("requestId"))
            if key is not None:
                self._done(key)  # the server must not answer it any more
            return key
        return None

    # -- what the server sends ------------------------------------------------------------
    def received(self, item: SessionMessage) -> SessionMessage:
        msg = item.message
        if not isinstance(msg, types.JSONRPCResponse | types.JSONRPCError):
            return item
        key = _key(msg.id)
        entry = self._done(key) if key is not None else None
        if entry is None or not isinstance(msg, types.JSONRPCResponse):
            return item
        method = entry[1]
        if method == "initialize":
            version = msg.result.get("protocolVersion")
            self.protocol_version = version if isinstance(version, str) else None
        elif method == "tools/list":
            checked = self._check_tools(msg.result)
            if checked is not msg.result:
                response = types.JSONRPCResponse(jsonrpc="2.0", id=msg.id, result=checked)
                return SessionMessage(response, metadata=item.metadata)
        return item

    def unreadable(self, exc: Exception) -> list[SessionMessage]:
        """Error responses for the pending requests an unreadable message answered (often none:
        most garbage answers nothing)."""
        head = getattr(exc, "head", None)
        if isinstance(head, bytes) and head:
            reason = str(getattr(exc, "reason", "") or exc)
            tail = getattr(exc, "tail", b"")
            sniffed = sniff_response(head, tail if isinstance(tail, bytes) else b"")
        else:
            failure = _parse_failure(exc)
            if failure is None:
                return []
            if len(failure) == 3:
                reason, head, tail = failure
                sniffed = sniff_response(head, tail)
            else:  # valid JSON, so its members can be read directly
                reason, message = failure
                rid = message.get("id")
                usable = _key(rid) is not None
                is_response = bool({"result", "error"} & message.keys()) and "method" not in message
                sniffed = Sniffed(is_response, rid if usable else None, id_unusable=not usable)
        if sniffed is None or not sniffed.is_response or sniffed.id_unusable:
            return []
        if sniffed.id is None and getattr(exc, "ended", True) is False:
            return []  # still arriving: its id may be in the last bytes; wait for the end
        if sniffed.id is not None:
            key = _key(sniffed.id)
            entry = self._done(key) if key is not None else None
            targets = [entry] if entry is not None else []
        else:  # a response, but which? Any pending request may be the one never to be answered
            targets = list(self.pending.values())
            for key in list(self.pending):
                self._done(key)
            if len(targets) > 1:
                reason += f"; its id could not be read, so all {len(targets)} pending requests fail"
        out = []
        for rid, method in targets:
            self.diagnostics.stderr.append(f"[kairox] {method} (request {rid}) failed: {reason}")
            error = types.ErrorData(code=types.PARSE_ERROR, message=reason, data=UNREADABLE)
            out.append(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=rid, error=error)))
        return out

    # -- tools ------------------------------------------------------------------------------
    def _check_tools(self, result: dict[str, Any]) -> dict[str, Any]:
        tools = result.get("tools")
        if not isinstance(tools, list):
            return result  # the SDK says what is wrong with the whole result
        kept = []
        for start in range(0, len(tools), CHECK_SLICE):
            part = tools[start : start + CHECK_SLICE]
            if self._all_valid({**result, "tools": part}, part):
                kept.extend(part)
                continue
            kept.extend(self._each_valid(part, result))
        if len(kept) == len(tools):
            return result
        return {**result, "tools": kept}

    def _each_valid(self, tools: list[Any], result: dict[str, Any]) -> list[Any]:
        """The tools that pass :meth:`_tool_problem`, each checked on its own; each one left
        out is reported (a warning naming the server and the tool, once)."""
        kept = []
        for raw in tools:
            problem = self._tool_problem(raw, result)
            if problem is None:
                kept.append(raw)
                continue
            shown = _shown(raw.get("name") if isinstance(raw, Mapping) else None)
            self.rejected_tools[shown] = problem
            if (shown, problem) not in self._warned:
                self._warned.add((shown, problem))
                logger.warning("MCP server %s: skipping tool %s: %s", self.server, shown, problem)
                self.diagnostics.stderr.append(f"[kairox] skipped tool {shown}: {problem}")
        return kept

    def _all_valid(self, result: dict[str, Any], tools: list[Any]) -> bool:
        """Whether every tool of ``tools`` (``result``'s, a slice of at most :data:`CHECK_SLICE`)
        passes :meth:`_tool_problem`, checked in one pass (the common case) instead of one a
        tool: a list validates exactly when each of its items does. ``False`` sends the slice
        tool by tool, to find the ones that fail."""
        if any(tool_problem(raw) is not None for raw in tools):
            return False
        try:
            if self.protocol_version is not None:
                try:
                    methods.validate_server_result("tools/list", self.protocol_version, result)
                except KeyError:
                    pass  # a (method, version) the SDK's table does not have: the model check below
            _tool_list().validate_python(tools, by_name=False)
        except ValueError:  # pydantic's ValidationError (or an unknown version)
            return False
        return True

    def _tool_problem(self, raw: Any, result: Mapping[str, Any]) -> str | None:
        problem = tool_problem(raw)
        if problem is not None:
            return terminal_safe(problem)
        if self.protocol_version is not None:
            try:  # the negotiated version's wire shape, as the SDK checks the whole result
                # the result's other members too (2026-07-28 requires ``ttlMs`` and ``cacheScope``)
                methods.validate_server_result("tools/list", self.protocol_version, {**result, "tools": [raw]})
            except KeyError:
                pass  # a (method, version) the SDK's table does not have: the model check below
            except ValueError as exc:  # pydantic's ValidationError (or an unknown version)
                if callable(getattr(exc, "errors", None)):
                    return _pydantic_problem(exc, skip=2)
        try:
            types.Tool.model_validate(raw, by_name=False)
        except ValueError as exc:
            return _pydantic_problem(exc)
        return None

    def start_listing(self) -> None:
        self.rejected_tools = {}


class _Wrapped(AsyncResource):
    """Forwards what the SDK needs of a wrapped stream: close, attributes (``async with``
    comes with :class:`anyio.abc.AsyncResource`)."""

    _inner: Any

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class GuardedReadStream(_Wrapped):
    """The transport's read stream as the session reads it (see the module docstring)."""

    def __init__(self, inner: Any, exchange: Exchange, closed: anyio.Event) -> None:
        self._inner = inner
        self._exchange = exchange
        self._closed = closed
        self._queued: deque[SessionMessage] = deque()

    async def receive(self) -> Any:
        if self._queued:
            return self._queued.popleft()
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._closed.set()
            raise
        if isinstance(item, SessionMessage):
            return self._exchange.received(item)
        if isinstance(item, Exception):
            errors = self._exchange.unreadable(item)
            if errors:
                self._queued.extend(errors[1:])
                return errors[0]
        return item

    def __aiter__(self) -> GuardedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class GuardedWriteStream(_Wrapped):
    """The transport's write stream as the session writes it: requests are noted first."""

    def __init__(self, inner: Any, exchange: Exchange) -> None:
        self._inner = inner
        self._exchange = exchange

    async def send(self, item: Any) -> None:
        self._exchange.sent(getattr(item, "message", None))
        await self._inner.send(item)
