"""McpClient: one SDK ``ClientSession`` to one server, over a kairox transport.

This module imports ``mcp`` (about 0.4 s on an idle 2-core machine, more when it is busy): it is imported
lazily, the first time a server connects (see ``lifecycle.import_client``).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, nullcontext
from contextvars import ContextVar
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, cast

import anyio
import mcp.types as types
from mcp import ClientSession

# The SDK's SEP-2322 loop (an ``InputRequiredResult``: answer its requests with the host
# callbacks, retry), as ``Client._drive_input_required`` runs it; private module too.
from mcp.client._input_required import InputRequiredRoundsExceededError, run_input_required_driver

# The SDK's own ``Client(mode="auto")`` policy (server/discover, else initialize, one
# corrective re-probe on -32022), reused as is: ``mcp.client._probe`` is a private module
# of the SDK (no public name exports it in mcp 2.3); kairox pins no version for it.
from mcp.client._probe import negotiate_auto
from mcp.client.session import ClientRequestContext
from mcp.client.subscriptions import SubscriptionLost, listen
from mcp.shared.exceptions import MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

# The clock of the request being sent (the SDK's per-request cancel scope, which its read
# timeout drives): a private module of the SDK. Without it (another SDK) every tools/call
# gets the SDK's own read timeout, one timer a call, as before (:class:`_CallTimer`).
try:
    from mcp.shared._request_clock import _clock as _sdk_request_clock
except ImportError:  # pragma: no cover - an SDK without it
    _sdk_request_clock = None  # type: ignore[assignment]

from kairox import redact_text
from kairox.errors import ToolError
from kairox.ext import current_session, redact

from ._sdklog import _current as _sdk_diagnostics
from ._streams import UNREADABLE, Exchange, GuardedReadStream, GuardedWriteStream
from .config import LOG_LEVELS, McpServerConfig
from .events import McpLogMessage, McpResourceUpdated
from .host import HostBridge
from .transport import ConnectContext, Diagnostics

if TYPE_CHECKING:
    from kairox import Event, Runtime

__all__ = ["McpCallTimeout", "McpClient", "McpConnectionClosed", "McpRequestError", "McpUrlElicitationRequired"]

logger = logging.getLogger(__name__)

#: pagination guard: a server that never stops handing out cursors
MAX_PAGES = 1000
#: a tools/call may take this long past its timeout while it is still being *sent*
#: (the SDK's timeout starts after the write; a server that stopped reading, or an
#: HTTP session wedged on a hung POST, would hold the write much longer)
SEND_GRACE = 1.0

#: first wait before a lost ``subscriptions/listen`` stream is re-opened, s (doubles, at most the next)
LISTEN_BACKOFF = 0.5
#: a listen stream that lasted this long (s) before it ended starts the backoff afresh
LISTEN_STEADY = 30.0
MAX_LISTEN_BACKOFF = 30.0

ListChanged = Callable[[str], Awaitable[None]]

#: when the ``tools/call`` running in this task began (``time.monotonic()``), how long it may
#: take to be sent (a duration, so the common path, the write goes through, reads no clock),
#: and its read timeout when the connection's :class:`_CallTimer` keeps it (else ``None``)
_send_by: ContextVar[tuple[float, float, float | None] | None] = ContextVar("kairox_mcp_send_by", default=None)


class _CallTimer:
    """The read timeouts of one connection's ``tools/call`` requests, on one timer.

    The SDK's read timeout arms a timer for every request (its clock's cancel scope gets a
    deadline). Here a request is sent with no SDK timeout and its clock's scope is noted
    with its deadline instead (:meth:`arm`, once the write went through, as the SDK's clock
    starts); one event-loop timer wakes at the earliest deadline and cancels the scopes whose
    time is up, which the SDK handles exactly as its own timeout: a ``TimeoutError`` out of
    its clock, the courtesy ``notifications/cancelled`` to the server (its reason written by
    :class:`_BoundedWriteStream` from :attr:`expired`), a ``REQUEST_TIMEOUT`` error. A request
    answered is dropped from the timer with its pending entry (:class:`Exchange`); the timer
    is not moved for it, so a stream of calls re-arms it about once per timeout, not per call.

    asyncio only (the loop's ``call_at``), on transports without a person in the loop of a
    request (stdio: the SDK's clock also pauses while an OAuth login waits on the user)."""

    def __init__(self, loop: Any) -> None:
        self._loop = loop
        #: request key -> (loop time it expires, the SDK clock's cancel scope, its timeout)
        self._calls: dict[str, tuple[float, anyio.CancelScope, float]] = {}
        #: request key -> timeout, for requests timed out whose courtesy cancel is not written yet
        self.expired: dict[str, float] = {}
        self._handle: Any = None
        self._wake_at = math.inf
        #: the SDK's request clock could not be found (:meth:`arm_current`)
        self.broken = False

    def arm(self, key: str, scope: anyio.CancelScope, timeout: float) -> None:
        at = self._loop.time() + timeout
        self._calls[key] = (at, scope, timeout)
        if at < self._wake_at:
            if self._handle is not None:
                self._handle.cancel()
            self._wake_at = at
            self._handle = self._loop.call_at(at, self._fire)

    def arm_current(self, key: str, timeout: float) -> None:
        """:meth:`arm` request ``key`` with the clock of the request this task is sending. An SDK
        that sets no clock (or keeps its scope elsewhere) leaves this request without a timeout:
        the timer is then :attr:`broken` (warned once) and later calls get the SDK's own."""
        clock = _sdk_request_clock.get()
        scope = getattr(clock, "_scope", None)
        if isinstance(scope, anyio.CancelScope):
            self.arm(key, scope, timeout)
            return
        if not self.broken:
            self.broken = True
            logger.warning("the MCP SDK's request clock was not found: tools/call timeouts fall back to the SDK's own")

    def disarm(self, key: str) -> None:
        self._calls.pop(key, None)

    def _fire(self) -> None:
        self._handle = None
        now = self._loop.time() + TIMER_SLACK
        wake = math.inf
        for key, (at, scope, timeout) in list(self._calls.items()):
            if at <= now:
                del self._calls[key]
                self.expired[key] = timeout
                scope.cancel()
            elif at < wake:
                wake = at
        self._wake_at = wake
        if wake < math.inf:
            self._handle = self._loop.call_at(wake, self._fire)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._wake_at = math.inf
        self._calls.clear()
        self.expired.clear()


def _call_timer(config: McpServerConfig) -> _CallTimer | None:
    """A :class:`_CallTimer` for a connection to ``config``'s server, where one can keep its
    read timeouts: stdio (no person in the loop of a request), on asyncio, with an SDK whose
    request clock it knows."""
    if _sdk_request_clock is None or config.transport != "stdio":
        return None
    try:
        import asyncio

        return _CallTimer(asyncio.get_running_loop())
    except RuntimeError:  # not asyncio (trio): the SDK's timeout
        return None


#: a call whose deadline is this close (s) when the timer fires is due: the loop may run a
#: timer this much early (its clock's resolution), and a second wake-up for it would be waste
TIMER_SLACK = 0.001


class _SendStalled(Exception):
    """A ``tools/call`` could not be written by its deadline (the server is not taking input)."""


class _BoundedWriteStream(GuardedWriteStream):
    """The session's write side: a message goes straight to the transport when it can take it
    (no timer); only a write that has to wait is bounded, by the deadline of the ``tools/call``
    sending it (``_send_by``). A call's read timeout is the connection's :class:`_CallTimer`
    (``timer``), armed here once its request is written; without one, the SDK's own."""

    def __init__(self, inner: Any, exchange: Exchange, timer: _CallTimer | None = None) -> None:
        super().__init__(inner, exchange)
        self._timer = timer

    async def send(self, item: Any) -> None:
        message = getattr(item, "message", None)
        key = self._exchange.sent(message)
        timer = self._timer
        if timer is not None and timer.expired and key is not None:
            item = _timed_out_reason(item, timer.expired.pop(key, None))
        send_nowait = getattr(self._inner, "send_nowait", None)
        bound = _send_by.get()
        written = False
        if send_nowait is not None:
            try:
                send_nowait(item)
                written = True
            except anyio.WouldBlock:
                pass
        if not written:
            if bound is None:
                await self._inner.send(item)
                return
            started, budget, _ = bound  # a duration from time.monotonic(), so any loop's clock will do
            with anyio.CancelScope(deadline=anyio.current_time() + budget - (time.monotonic() - started)) as scope:
                await self._inner.send(item)
            if scope.cancelled_caught:
                raise _SendStalled
        if bound is not None and bound[2] is not None and key is not None and timer is not None:
            if isinstance(message, types.JSONRPCRequest):
                timer.arm_current(key, bound[2])


def _timed_out_reason(item: Any, timeout: float | None) -> Any:
    """The SDK's courtesy ``notifications/cancelled`` for a request the :class:`_CallTimer` timed
    out, with the reason the SDK gives its own timeouts (it was sent with none, so it would say
    ``None``); any other message as it is."""
    message = item.message
    if timeout is None or not isinstance(message, types.JSONRPCNotification):
        return item
    params = {**(message.params or {}), "reason": f"timed out after {timeout:g}s"}
    notification = types.JSONRPCNotification(jsonrpc="2.0", method=message.method, params=params)
    return type(item)(notification, metadata=item.metadata)


#: characters of a log record's data kept in its event and in the logs
MAX_LOG_DATA = 4000


def log_data_text(data: Any) -> str:
    """A log record's data as one bounded, redacted text (JSON unless it is a string)."""
    if isinstance(data, str):
        text = data
    else:
        try:
            text = json.dumps(data, ensure_ascii=False, default=repr)
        except (TypeError, ValueError):  # pragma: no cover - default=repr makes anything dump
            text = repr(data)
    return redact_text(text, MAX_LOG_DATA)  # cut before it is read: a server's megabyte costs 4,000 characters


class McpConnectionClosed(ToolError):
    """The server went away (crashed, exited, closed the connection)."""


class McpCallTimeout(ToolError):
    """A request took longer than its timeout; the server was told to cancel it."""


class McpRequestError(ToolError):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class McpUrlElicitationRequired(McpRequestError):
    """The server answered ``-32042`` (URL elicitation required): the user must open
    ``urls`` (each with the server's message) before the request can succeed."""

    def __init__(self, message: str, code: int, urls: list[tuple[str, str]]) -> None:
        super().__init__(message, code)
        #: (url, the server's message for it)
        self.urls = urls


def _url_elicitations(data: Any) -> list[tuple[str, str]]:
    """The ``(url, message)`` pairs of a ``-32042`` error's ``data.elicitations`` (what is
    well formed of it: a server's error data is outside input)."""
    items = data.get("elicitations") if isinstance(data, dict) else None
    out: list[tuple[str, str]] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            message = item.get("message")
            out.append((item["url"], message if isinstance(message, str) else ""))
    return out


@functools.cache
def _client_version() -> str:
    """kairox-mcp's version, read from its metadata once (a read parses the METADATA file:
    about 0.7 ms, once per server at 100 servers)."""
    try:
        return version("kairox-mcp")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


def _client_info() -> types.Implementation:
    return types.Implementation(name="kairox", version=_client_version())


class McpClient:
    """A connected, initialised MCP session with one server.

    Open it with :meth:`over` on a connected transport's streams (an async context
    manager that enters the session in the calling task; the lifecycle connects the
    transport first, so a server process starts while the SDK is still being imported),
    then :meth:`initialize`. Requests map SDK errors to kairox errors:
    :class:`McpConnectionClosed`, :class:`McpCallTimeout`, :class:`McpRequestError`.
    """

    def __init__(
        self,
        server: str,
        session: ClientSession,
        diagnostics: Diagnostics,
        closed: anyio.Event,
        exchange: Exchange | None = None,
        host: HostBridge | None = None,
    ) -> None:
        self.server = server
        self.session = session
        self.diagnostics = diagnostics
        #: set when the server closed the connection (EOF on the read stream)
        self.closed = closed
        self.exchange = exchange or Exchange(server, diagnostics)
        self.initialize_result: types.InitializeResult | None = None
        #: answers what the server asks (sampling, elicitation, roots)
        self.host = host or HostBridge(server, None, None)
        #: resources subscribed to; on 2026-07-28 they ride the ``subscriptions/listen`` stream
        self._subscribed: set[str] = set()
        self._relisten = anyio.Event()
        self._on_list_changed: ListChanged | None = None  # re-lists after a lost listen stream
        #: keeps the read timeouts of tools/call (else the SDK does, a timer a call)
        self._timer: _CallTimer | None = None

    @classmethod
    @asynccontextmanager
    async def over(
        cls,
        server: str,
        streams: Any,
        config: McpServerConfig,
        context: ConnectContext,
        *,
        on_list_changed: ListChanged | None = None,
        runtime: Runtime | None = None,
        publish: Callable[[Event], None] | None = None,
    ) -> AsyncIterator[McpClient]:
        """Enter the session over a connected transport's ``(read, write)`` streams (not yet
        initialised: call :meth:`initialize`).

        With ``runtime``, the server's requests are answered with its host callbacks
        (:class:`~kairox_mcp.host.HostBridge`): the client declares sampling and
        elicitation exactly when the runtime has those callbacks, and roots always.
        ``publish`` gets the server's resource updates and log records as events."""
        read, write = streams
        closed = anyio.Event()
        host = HostBridge(server, config, runtime)
        diagnostics = context.diagnostics
        exchange = Exchange(server, diagnostics)
        timer = _call_timer(config)
        exchange.timer = timer

        async def message_handler(message: Any) -> None:
            if isinstance(message, Exception):
                diagnostics.stderr.append(f"[kairox] unreadable message from the server: {message}")
                return
            method = getattr(message, "method", None)
            if isinstance(message, types.ResourceUpdatedNotification):
                if publish is not None:
                    publish(McpResourceUpdated(server=server, uri=str(message.params.uri)))
                return
            if on_list_changed is None or not isinstance(method, str):
                return
            if method.startswith("notifications/") and method.endswith("/list_changed"):
                kind = method.removeprefix("notifications/").removesuffix("/list_changed")
                await on_list_changed(kind)

        async def logging_callback(params: types.LoggingMessageNotificationParams) -> None:
            source = f" {params.logger}" if params.logger else ""
            data = log_data_text(params.data)
            diagnostics.stderr.append(f"[log {params.level}{source}] {data}")
            if publish is not None:
                publish(McpLogMessage(server=server, level=str(params.level), logger=params.logger, data=data))

        async with ClientSession(
            GuardedReadStream(read, exchange, closed),
            _BoundedWriteStream(write, exchange, timer),
            message_handler=message_handler,
            logging_callback=logging_callback,
            client_info=_client_info(),
            # 2026-07-28: log records are opted into per request (the handshake revisions
            # ignore it and get logging/setLevel after initialize)
            log_level=cast(Any, config.log_level),
            **host.kwargs(),
        ) as session:
            client = cls(server, session, diagnostics, closed, exchange, host)
            client._on_list_changed = on_list_changed
            client._timer = timer
            try:
                yield client
            finally:
                if timer is not None:
                    timer.close()

    # -- errors ---------------------------------------------------------------
    def _map(self, exc: MCPError, what: str, timeout: float | None = None) -> ToolError:
        """A kairox error for an SDK one; URL secrets in its text (the HTTP stack's) redacted."""
        if exc.code == types.CONNECTION_CLOSED:
            # the SDK names a lost response stream ("SSE stream ended without a response")
            why = f" ({redact(exc.message)})" if exc.message and exc.message != "Connection closed" else ""
            return McpConnectionClosed(f"MCP server {self.server} closed the connection during {what}{why}")
        if exc.code == types.REQUEST_TIMEOUT:
            after = f" after {timeout:g} s" if timeout is not None else ""
            return McpCallTimeout(f"{what} timed out{after} (MCP server {self.server}; the request was cancelled)")
        if exc.code == types.URL_ELICITATION_REQUIRED:
            urls = _url_elicitations(exc.data)
            opens = "; ".join(f"open {redact(url)}" + (f" ({message})" if message else "") for url, message in urls)
            text = f"{what} failed (MCP server {self.server}): {redact(exc.message)}" + (
                f": {opens}, then try again" if opens else ""
            )
            return McpUrlElicitationRequired(text, exc.code, urls)
        if exc.data == UNREADABLE:  # made by GuardedReadStream: the reason is the whole story
            return McpRequestError(f"{what} failed (MCP server {self.server}): {exc.message}", exc.code)
        return McpRequestError(
            f"{what} failed (MCP server {self.server}): MCP error {exc.code}: {redact(exc.message)}", exc.code
        )

    # -- lifecycle ------------------------------------------------------------
    async def initialize(self, protocol: str = "auto") -> None:
        """Settle the revision. ``"auto"``: what the SDK's ``Client(mode="auto")`` does
        (``server/discover`` at 2026-07-28; a server that does not answer it gets the
        2025-11-25 ``initialize`` handshake); anything else: the handshake only."""
        try:
            if protocol == "auto":
                await negotiate_auto(self.session)
            else:
                await self.session.initialize()
        except MCPError as exc:
            raise self._map(exc, "initialize") from exc
        except RuntimeError as exc:  # the SDK: no revision in common with the server
            raise McpRequestError(f"initialize failed (MCP server {self.server}): {redact(str(exc))}", 0) from exc
        self.initialize_result = self.session.initialize_result
        # the tools/list check validates each tool against the negotiated revision's shape
        self.exchange.protocol_version = self.session.protocol_version

    @property
    def capabilities(self) -> types.ServerCapabilities | None:
        return self.session.server_capabilities

    @property
    def protocol_version(self) -> str:
        return self.session.protocol_version or ""

    @property
    def modern(self) -> bool:
        """Negotiated 2026-07-28 (or later): no session state on the server; change
        notifications arrive on a ``subscriptions/listen`` stream (:meth:`listen_changes`)."""
        return self.session.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def server_info(self) -> str:
        info = self.session.server_info  # optional on 2026-07-28
        return f"{info.name} {info.version}".strip() if info is not None else ""

    @property
    def instructions(self) -> str | None:
        return self.session.instructions

    def supports(self, feature: str) -> bool:
        """Whether the server declared ``tools`` / ``resources`` / ``prompts``."""
        caps = self.capabilities
        return caps is not None and getattr(caps, feature, None) is not None

    async def roots_changed(self) -> None:
        """``notifications/roots/list_changed`` (the roots kairox reports changed); nothing on
        2026-07-28, which has no such notification (a server asks for the roots with each
        request that needs them)."""
        if self.modern:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated as of 2026-07-28; the handshake revisions have it
            await self.session.send_roots_list_changed()

    async def set_log_level(self, level: str) -> None:
        """``logging/setLevel``: the server sends log records of ``level`` and above. On
        2026-07-28 (no such request) every later request asks for that level instead."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r} (one of {', '.join(LOG_LEVELS)})")
        discovered = self.session.discover_result
        if self.modern and discovered is not None:
            # the session stamps its log level into each request's _meta from adopt(); the SDK
            # has no public setter, so set its (private) level and adopt the same result again
            self.session._log_level = cast(Any, level)
            self.session.adopt(discovered)
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated as of 2026-07-28
                await self.session.set_logging_level(cast(Any, level))
        except MCPError as exc:
            raise self._map(exc, "logging/setLevel") from exc

    async def subscribe(self, uri: str) -> None:
        """``resources/subscribe``: the server sends ``notifications/resources/updated`` for ``uri``
        (on 2026-07-28 the URI joins the ``subscriptions/listen`` stream, which is re-opened)."""
        if self.modern:
            self._subscribed.add(uri)
            self._relisten.set()
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # removed in 2026-07-28 (listen); the handshake revisions have it
                await self.session.subscribe_resource(uri)
        except MCPError as exc:
            raise self._map(exc, f"resources/subscribe {uri}") from exc

    async def unsubscribe(self, uri: str) -> None:
        if self.modern:
            if uri in self._subscribed:
                self._subscribed.discard(uri)
                self._relisten.set()
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await self.session.unsubscribe_resource(uri)
        except MCPError as exc:
            raise self._map(exc, f"resources/unsubscribe {uri}") from exc

    async def listen_changes(self) -> None:
        """2026-07-28: keep one ``subscriptions/listen`` stream open for the list changes the
        server declared and the subscribed resources, until cancelled or the connection
        closes. Its events reach the message handler as the handshake revisions'
        notifications do (list_changed re-lists, resource updates become events). A lost
        stream is re-opened after a backoff; a server without ``subscriptions/listen`` is
        left alone. Returns at once on a handshake connection."""
        caps = self.capabilities
        if not self.modern or caps is None:
            return
        wanted = {
            "tools_list_changed": bool(caps.tools and caps.tools.list_changed),
            "prompts_list_changed": bool(caps.prompts and caps.prompts.list_changed),
            "resources_list_changed": bool(caps.resources and caps.resources.list_changed),
        }
        can_subscribe = bool(caps.resources and caps.resources.subscribe)
        delay = LISTEN_BACKOFF
        lost = False
        while not self.closed.is_set():
            self._relisten = anyio.Event()
            uris = sorted(self._subscribed) if can_subscribe else []
            if not any(wanted.values()) and not uris:
                await self._relisten.wait()
                continue
            ended: list[Exception] = []
            try:
                async with listen(
                    self.session,
                    tools_list_changed=wanted["tools_list_changed"],
                    prompts_list_changed=wanted["prompts_list_changed"],
                    resources_list_changed=wanted["resources_list_changed"],
                    resource_subscriptions=uris,
                ) as sub:
                    acknowledged = anyio.current_time()
                    if lost and self._on_list_changed is not None:
                        # no replay: what changed while no stream was open is fetched again
                        for key, kind in (
                            ("tools_list_changed", "tools"),
                            ("prompts_list_changed", "prompts"),
                            ("resources_list_changed", "resources"),
                        ):
                            if wanted[key]:
                                await self._on_list_changed(kind)
                    lost = False
                    async with anyio.create_task_group() as tg:

                        async def drain(ended: list[Exception] = ended) -> None:
                            # caught here: out of the task group it would be an ExceptionGroup
                            # that no handler below matches (and the connection would restart)
                            try:
                                async for _event in sub:  # delivered to the message handler already
                                    pass
                            except (SubscriptionLost, MCPError) as exc:
                                ended.append(exc)
                            tg.cancel_scope.cancel()  # the stream ended

                        tg.start_soon(drain)
                        await self._relisten.wait()
                        tg.cancel_scope.cancel()
                    # a stream that lasted is a fresh start; one that ends at once backs off
                    if anyio.current_time() - acknowledged >= LISTEN_STEADY:
                        delay = LISTEN_BACKOFF
                if ended:  # raised out here, past listen()'s own exit
                    raise ended[0]
                if self._relisten.is_set():
                    continue
            except MCPError as exc:
                if exc.code == types.METHOD_NOT_FOUND:
                    self.diagnostics.stderr.append("[kairox] the server has no subscriptions/listen")
                    return
                if self.closed.is_set():
                    return
                self.diagnostics.stderr.append(f"[kairox] subscriptions/listen failed: {redact(exc.message)}")
            except SubscriptionLost as exc:
                self.diagnostics.stderr.append(f"[kairox] {exc}")
            lost = True
            with anyio.move_on_after(delay):
                await self._relisten.wait()
            delay = min(delay * 2, MAX_LISTEN_BACKOFF)

    async def complete(
        self, ref: dict[str, str], argument: str, value: str, context: dict[str, str] | None = None
    ) -> types.Completion:
        """``completion/complete`` for ``argument`` of a prompt (``{"type": "ref/prompt", "name":
        ...}``) or a resource template (``{"type": "ref/resource", "uri": ...}``)."""
        reference: types.PromptReference | types.ResourceTemplateReference
        if ref.get("type") == "ref/prompt":
            reference = types.PromptReference.model_validate(ref)
        else:
            reference = types.ResourceTemplateReference.model_validate(ref)
        try:
            result = await self.session.complete(reference, {"name": argument, "value": value}, context)
        except MCPError as exc:
            raise self._map(exc, "completion/complete") from exc
        return result.completion

    async def ping(self) -> None:
        try:
            await self.session.send_ping()
        except MCPError as exc:
            raise self._map(exc, "ping") from exc

    # -- listings ---------------------------------------------------------------
    async def _paginate(self, what: str, fetch: Callable[[Any], Awaitable[Any]], field: str) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            try:
                page = await fetch(params)
            except MCPError as exc:
                raise self._map(exc, what) from exc
            items.extend(getattr(page, field))
            cursor = page.next_cursor
            if cursor is None:
                return items
            if cursor in seen:
                logger.warning("MCP server %s repeated the cursor %r in %s; stopping", self.server, cursor, what)
                return items
            seen.add(cursor)
        logger.warning("MCP server %s: %s has more than %d pages; stopping", self.server, what, MAX_PAGES)
        return items

    async def list_tools(self) -> list[types.Tool]:
        """Every tool, following ``nextCursor``; invalid tools are left out (:attr:`rejected_tools`)."""
        self.exchange.start_listing()
        return await self._paginate("tools/list", lambda p: self.session.list_tools(params=p), "tools")

    @property
    def rejected_tools(self) -> dict[str, str]:
        """Tools of the last listing left out as invalid: shown name -> why."""
        return dict(self.exchange.rejected_tools)

    async def list_resources(self) -> list[types.Resource]:
        return await self._paginate("resources/list", lambda p: self.session.list_resources(params=p), "resources")

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        return await self._paginate(
            "resources/templates/list",
            lambda p: self.session.list_resource_templates(params=p),
            "resource_templates",
        )

    async def list_prompts(self) -> list[types.Prompt]:
        return await self._paginate("prompts/list", lambda p: self.session.list_prompts(params=p), "prompts")

    # -- requests -----------------------------------------------------------------
    async def _resolve_input(self, send: Callable[[Any, str | None], Awaitable[Any]], first: Any = None) -> Any:
        """``send(None, None)``; a 2026-07-28 server that answers with an ``InputRequiredResult``
        (it needs sampling, elicitation or roots) has its requests answered by the host
        callbacks (as the handshake revisions' server-to-client requests are) and the
        request sent again with the answers, as the SDK's ``Client`` does. ``first``: the
        answer of the first round when the caller sent it already."""
        if first is None:
            first = await send(None, None)
        if not isinstance(first, types.InputRequiredResult):
            return first
        session = self.session

        async def dispatch(key: str, request: Any) -> Any:
            meta = request.params.meta if request.params else None
            return await session.dispatch_input_request(
                ClientRequestContext(session=session, request_id=key, meta=meta), request
            )

        return await run_input_required_driver(first, dispatch=dispatch, retry=send)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        timeout: float | None = None,
        progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
    ) -> types.CallToolResult:
        """``tools/call``; on timeout the SDK sends ``notifications/cancelled`` to the server.

        ``timeout`` bounds the whole call: one that cannot even be sent within
        ``timeout + SEND_GRACE`` s fails with :class:`McpCallTimeout` too, and the
        connection is declared broken (:attr:`closed`), so the lifecycle reconnects.
        """
        # the SDK's records from this (the caller's) task go to the server's diagnostics (the
        # log capture was installed when the session opened); the request's write is bounded
        # by timeout + SEND_GRACE (only when it has to wait, see _BoundedWriteStream)
        started = time.monotonic()
        logs = _sdk_diagnostics.set(self.diagnostics)
        # the connection's timer keeps the first round's timeout (the SDK is given none)
        timer = self._timer
        own = timeout if timer is not None and not timer.broken else None
        send_by = _send_by.set(None if timeout is None else (started, timeout + SEND_GRACE, own))
        arguments = arguments or {}
        session = self.session
        stalled = False
        # what HostBridge.track() records, written out (the one call every tool call makes):
        # the caller's session answers what the server asks meanwhile
        calls, caller = self.host.calls, current_session()
        calls.append(caller)
        try:
            try:
                # one round; a 2026-07-28 server may ask for input and get the call sent again
                # (_resolve_input): each later round gets what is left of the one timeout
                first = await session.call_tool(
                    name,
                    arguments,
                    read_timeout_seconds=timeout if own is None else None,
                    progress_callback=progress,  # type: ignore[arg-type]
                    allow_input_required=True,
                )
                if isinstance(first, types.InputRequiredResult):

                    async def send(responses: types.InputResponses | None, state: str | None) -> Any:
                        left = None if timeout is None else max(timeout - (time.monotonic() - started), 0.001)
                        # later rounds: the SDK's own timeout, what is left of the one
                        bound = _send_by.set(None if timeout is None else (started, timeout + SEND_GRACE, None))
                        try:
                            return await session.call_tool(
                                name,
                                arguments,
                                read_timeout_seconds=left,
                                progress_callback=cast(Any, progress),
                                input_responses=responses,
                                request_state=state,
                                allow_input_required=True,
                            )
                        finally:
                            _send_by.reset(bound)

                    result = await self._resolve_input(send, first)
                else:
                    result = first
            finally:
                calls.remove(caller)
        except InputRequiredRoundsExceededError as exc:
            raise McpRequestError(
                f"tools/call {name} failed (MCP server {self.server}): the server asked for input "
                "again and again in one call (answered, it kept asking); the call was given up",
                0,
            ) from exc
        except MCPError as exc:
            raise self._map(exc, f"tools/call {name}", timeout) from exc
        except _SendStalled:
            stalled = True
        finally:
            _send_by.reset(send_by)
            _sdk_diagnostics.reset(logs)
        if stalled:
            assert timeout is not None
            if self.diagnostics.error is None:
                self.diagnostics.error = (
                    f"a request could not be sent within {timeout + SEND_GRACE:g} s (the server is not taking input)"
                )
            self.closed.set()
            raise McpCallTimeout(
                f"tools/call {name} timed out after {timeout:g} s (MCP server {self.server}; "
                "the request could not be sent: the server is not taking input)"
            )
        if not isinstance(result, types.CallToolResult):  # pragma: no cover - extension results
            raise McpRequestError(f"tools/call {name}: unexpected result {type(result).__name__}", 0)
        return result

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> types.ReadResourceResult:
        try:
            with anyio.fail_after(timeout) if timeout else nullcontext():
                return cast(
                    types.ReadResourceResult,
                    await self._resolve_input(
                        lambda r, st: self.session.read_resource(
                            uri, input_responses=r, request_state=st, allow_input_required=True
                        )
                    ),
                )
        except InputRequiredRoundsExceededError as exc:
            raise McpRequestError(f"resources/read {uri} failed (MCP server {self.server}): {exc}", 0) from exc
        except MCPError as exc:
            raise self._map(exc, f"resources/read {uri}", timeout) from exc
        except TimeoutError:
            raise McpCallTimeout(f"resources/read {uri} timed out after {timeout:g} s") from None

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, timeout: float | None = None
    ) -> types.GetPromptResult:
        try:
            with anyio.fail_after(timeout) if timeout else nullcontext():
                return cast(
                    types.GetPromptResult,
                    await self._resolve_input(
                        lambda r, st: self.session.get_prompt(
                            name, arguments, input_responses=r, request_state=st, allow_input_required=True
                        )
                    ),
                )
        except InputRequiredRoundsExceededError as exc:
            raise McpRequestError(f"prompts/get {name} failed (MCP server {self.server}): {exc}", 0) from exc
        except MCPError as exc:
            raise self._map(exc, f"prompts/get {name}", timeout) from exc
        except TimeoutError:
            raise McpCallTimeout(f"prompts/get {name} timed out after {timeout:g} s") from None
