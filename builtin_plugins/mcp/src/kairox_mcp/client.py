"""McpClient: the SDK's ``mcp.Client`` with one server, over a kairox transport.

This module imports ``mcp`` (about 0.4 s on an idle 2-core machine, more when it is busy): it is imported
lazily, the first time a server connects (see ``lifecycle.import_client``).
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager, nullcontext
from contextvars import ContextVar
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, cast

import anyio
import mcp.types as types
from mcp import Client, ClientSession, InputRequiredRoundsExceededError
from mcp.client.caching import MAX_TTL_MS, CacheConfig, CacheMode, ResponseCacheStore
from mcp.client.extension import advertise
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from kairox import redact_text
from kairox.errors import ToolError
from kairox.ext import redact

from ._sdklog import sdk_diagnostics, watch_sdk_loggers
from ._streams import UNREADABLE, Exchange, GuardedReadStream, GuardedWriteStream
from .caching import OWN_CONTEXT
from .config import LOG_LEVELS, McpServerConfig
from .events import McpLogMessage, McpResourceUpdated
from .host import HostBridge
from .skills import EXTENSION as SKILLS_EXTENSION
from .transport import ConnectContext, Diagnostics

if sys.version_info < (3, 11):  # pragma: no cover - 3.10 only
    from exceptiongroup import BaseExceptionGroup

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


def listing_ttl_ms(pages: list[Any]) -> int:
    """How long (ms) a 2026-07-28 listing may be kept: the shortest ``ttlMs`` of its pages
    (one that has none: 0, stale at once, as the spec says), at most the SDK's cap (24 h)."""
    ttls = [page.ttl_ms if "ttl_ms" in page.model_fields_set else 0 for page in pages]
    return min([*ttls, MAX_TTL_MS])


def _cache_mode(cached: bool) -> CacheMode:
    return "use" if cached else "bypass"


#: when the ``tools/call`` running in this task began (``time.monotonic()``) and how long it
#: may take to be sent (a duration, so the common path, the write goes through, reads no clock)
_send_by: ContextVar[tuple[float, float] | None] = ContextVar("kairox_mcp_send_by", default=None)


class _SendStalled(Exception):
    """A ``tools/call`` could not be written by its deadline (the server is not taking input)."""


class _BoundedWriteStream(GuardedWriteStream):
    """The session's write side: a message goes straight to the transport when it can take it
    (no timer); only a write that has to wait is bounded, by the deadline of the ``tools/call``
    sending it (``_send_by``). Reading the answer is the SDK's read timeout."""

    async def send(self, item: Any) -> None:
        self._exchange.sent(getattr(item, "message", None))
        send_nowait = getattr(self._inner, "send_nowait", None)
        if send_nowait is not None:
            try:
                send_nowait(item)
                return
            except anyio.WouldBlock:
                pass
        bound = _send_by.get()
        if bound is None:
            await self._inner.send(item)
            return
        started, budget = bound  # a duration from time.monotonic(), so any loop's clock will do
        with anyio.CancelScope(deadline=anyio.current_time() + budget - (time.monotonic() - started)) as scope:
            await self._inner.send(item)
        if scope.cancelled_caught:
            raise _SendStalled


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


def _mapped(server: str, exc: MCPError, what: str, timeout: float | None = None) -> ToolError:
    """A kairox error for an SDK one; URL secrets in its text (the HTTP stack's) redacted."""
    if exc.code == types.CONNECTION_CLOSED:
        # the SDK names a lost response stream ("SSE stream ended without a response")
        why = f" ({redact(exc.message)})" if exc.message and exc.message != "Connection closed" else ""
        return McpConnectionClosed(f"MCP server {server} closed the connection during {what}{why}")
    if exc.code == types.REQUEST_TIMEOUT:
        after = f" after {timeout:g} s" if timeout is not None else ""
        return McpCallTimeout(f"{what} timed out{after} (MCP server {server}; the request was cancelled)")
    if exc.code == types.URL_ELICITATION_REQUIRED:
        urls = _url_elicitations(exc.data)
        opens = "; ".join(f"open {redact(url)}" + (f" ({message})" if message else "") for url, message in urls)
        text = f"{what} failed (MCP server {server}): {redact(exc.message)}" + (
            f": {opens}, then try again" if opens else ""
        )
        return McpUrlElicitationRequired(text, exc.code, urls)
    if exc.data == UNREADABLE:  # made by GuardedReadStream: the reason is the whole story
        return McpRequestError(f"{what} failed (MCP server {server}): {exc.message}", exc.code)
    message, prefix = redact(exc.message), f"MCP error {exc.code}: "
    # the TypeScript SDK's servers send their message with this prefix already: say it once
    shown = message if message.startswith(prefix) else prefix + message
    return McpRequestError(f"{what} failed (MCP server {server}): {shown}", exc.code)


def _handshake_error(server: str, exc: Exception) -> Exception:
    """What entering the SDK's client raised, as kairox says it. The client negotiates inside
    its session's task group, so a failure arrives as a group of one; the SDK's error for
    it (a JSON-RPC error, no revision in common with the server) becomes a kairox error,
    anything else (the transport's) is passed on as it is."""
    leaf: BaseException = exc
    while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
        leaf = leaf.exceptions[0]
    if isinstance(leaf, MCPError):
        return _mapped(server, leaf, "initialize")
    if isinstance(leaf, RuntimeError):
        return McpRequestError(f"initialize failed (MCP server {server}): {redact(str(leaf))}", 0)
    return exc


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
    """A connected, initialised MCP session with one server: the SDK's :class:`mcp.Client`.

    Open it with :meth:`over` on a connected transport's streams (an async context
    manager that enters the SDK's client in the calling task and settles the protocol
    revision; the lifecycle connects the transport first, so a server process starts
    while the SDK is still being imported). Requests map SDK errors to kairox errors:
    :class:`McpConnectionClosed`, :class:`McpCallTimeout`, :class:`McpRequestError`.
    """

    def __init__(
        self,
        server: str,
        client: Client,
        diagnostics: Diagnostics,
        closed: anyio.Event,
        exchange: Exchange | None = None,
        host: HostBridge | None = None,
    ) -> None:
        self.server = server
        self._client = client
        #: the SDK's session under the client (entered): what the host callbacks are given
        self.session: ClientSession = client.session
        self.diagnostics = diagnostics
        #: set when the server closed the connection (EOF on the read stream)
        self.closed = closed
        self.exchange = exchange or Exchange(server, diagnostics)
        self.initialize_result: types.InitializeResult | None = self.session.initialize_result
        # the tools/list check validates each tool against the negotiated revision's shape
        self.exchange.protocol_version = self.session.protocol_version
        #: answers what the server asks (sampling, elicitation, roots)
        self.host = host or HostBridge(server, None, None)
        #: resources subscribed to; on 2026-07-28 they ride the ``subscriptions/listen`` stream
        self._subscribed: set[str] = set()
        self._relisten = anyio.Event()
        self._on_list_changed: ListChanged | None = None  # re-lists after a lost listen stream
        #: 2026-07-28: the log level asked for with each request, once :meth:`set_log_level` set one
        self._meta: types.RequestParamsMeta | None = None
        #: how long (ms) the last tools listing may be kept (2026-07-28 ``ttlMs``); ``None`` on the
        #: handshake revisions, whose listings are kept until the server says ``list_changed``
        self.tools_ttl_ms: int | None = None

    @classmethod
    @asynccontextmanager
    async def over(
        cls,
        server: str,
        streams: Any,
        config: McpServerConfig,
        context: ConnectContext,
        *,
        protocol: str = "auto",
        on_list_changed: ListChanged | None = None,
        runtime: Runtime | None = None,
        publish: Callable[[Event], None] | None = None,
        store: ResponseCacheStore | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> AsyncIterator[McpClient]:
        """Enter the SDK's client over a connected transport's ``(read, write)`` streams and
        settle the revision. ``protocol="auto"``: the SDK's ``Client(mode="auto")``
        (``server/discover`` at 2026-07-28; a server that does not answer it gets the
        2025-11-25 ``initialize`` handshake); anything else: the handshake only.

        With ``runtime``, the server's requests are answered with its host callbacks
        (:class:`~kairox_mcp.host.HostBridge`): the client declares sampling and
        elicitation exactly when the runtime has those callbacks, and roots always.
        ``publish`` gets the server's resource updates and log records as events.

        With ``store`` (:class:`~kairox_mcp.caching.ResultStore`), the SDK keeps the server's
        prompt, resource and template listings and resource reads there as long as their
        ``ttlMs`` allows (2026-07-28 only; ``clock``, seconds, decides when they expire)."""
        read, write = streams
        closed = anyio.Event()
        host = HostBridge(server, config, runtime)
        diagnostics = context.diagnostics
        exchange = Exchange(server, diagnostics)
        watch_sdk_loggers()  # the SDK's modules are imported by now, the transport's included

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

        # the transport is the lifecycle's: the client is handed its streams, and closes only those
        connected = nullcontext((GuardedReadStream(read, exchange, closed), _BoundedWriteStream(write, exchange)))
        cache = None
        if store is not None:
            # a key of this connection's own: a restarted server's entries are never served
            target = f"{server}/{uuid.uuid4().hex}"
            cache = CacheConfig(store=store, partition=OWN_CONTEXT, target_id=target, clock=clock)
        sdk = Client(
            cast(Any, connected),
            mode="auto" if protocol == "auto" else "legacy",
            cache=cache,
            message_handler=message_handler,
            logging_callback=logging_callback,
            client_info=_client_info(),
            # 2026-07-28: log records are opted into per request (the handshake revisions
            # ignore it and get logging/setLevel after the handshake)
            log_level=cast(Any, config.log_level),
            # kairox reads skills a server offers (kairox_mcp.skills); a server may refuse
            # skills/list to a client that did not declare the extension (SEP-2133)
            extensions=[advertise(SKILLS_EXTENSION)],
            **host.kwargs(),
        )
        async with AsyncExitStack() as stack:
            try:
                await stack.enter_async_context(sdk)
            except Exception as exc:
                said = _handshake_error(server, exc)
                if said is exc:
                    raise
                raise said from exc
            client = cls(server, sdk, diagnostics, closed, exchange, host)
            client._on_list_changed = on_list_changed
            yield client

    # -- errors ---------------------------------------------------------------
    def _map(self, exc: MCPError, what: str, timeout: float | None = None) -> ToolError:
        return _mapped(self.server, exc, what, timeout)

    @contextmanager
    def _bounded(self, what: str, timeout: float | None) -> Iterator[None]:
        """A request (``what``: ``resources/read URI``) whose ``InputRequiredResult`` rounds are
        answered, ``timeout`` bounding the whole; its failures as :class:`~kairox.ToolError`."""
        try:
            with anyio.fail_after(timeout) if timeout else nullcontext(), self.host.calling():
                yield
        except InputRequiredRoundsExceededError as exc:
            raise McpRequestError(f"{what} failed (MCP server {self.server}): {exc}", 0) from exc
        except MCPError as exc:
            raise self._map(exc, what, timeout) from exc
        except TimeoutError:
            raise McpCallTimeout(f"{what} timed out after {timeout:g} s") from None

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
        if self.modern:
            # the session asks for the level it was opened with in each request's _meta; a
            # request's own _meta entry overrides it (the SDK's documented way; it has no setter)
            self._meta = cast(types.RequestParamsMeta, {types.LOG_LEVEL_META_KEY: level})
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
                # the client's listen: its events evict what the cache holds of the changed lists
                async with self._client.listen(
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
        params = types.CompleteRequestParams(
            ref=reference,
            argument=types.CompletionArgument(name=argument, value=value),
            context=types.CompletionContext(arguments=context) if context is not None else None,
            _meta=self._meta,
        )
        try:
            result = await self.session.send_request(types.CompleteRequest(params=params), types.CompleteResult)
        except MCPError as exc:
            raise self._map(exc, "completion/complete") from exc
        return result.completion

    async def ping(self) -> None:
        try:
            await self.session.send_ping()
        except MCPError as exc:
            raise self._map(exc, "ping") from exc

    # -- listings ---------------------------------------------------------------
    async def _paginate(
        self, what: str, fetch: Callable[..., Awaitable[Any]], field: str, mode: CacheMode
    ) -> tuple[list[Any], list[Any]]:
        """Every page of a listing, and the pages: ``fetch(cursor=..., meta=..., cache_mode=mode)``
        is one of the SDK client's ``list_*`` (which serves a first page it keeps while fresh)."""
        items: list[Any] = []
        pages: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            try:
                page = await fetch(cursor=cursor, meta=self._meta, cache_mode=mode)
            except MCPError as exc:
                raise self._map(exc, what) from exc
            pages.append(page)
            items.extend(getattr(page, field))
            cursor = page.next_cursor
            if cursor is None:
                return items, pages
            if cursor in seen:
                logger.warning("MCP server %s repeated the cursor %r in %s; stopping", self.server, cursor, what)
                return items, pages
            seen.add(cursor)
        logger.warning("MCP server %s: %s has more than %d pages; stopping", self.server, what, MAX_PAGES)
        return items, pages

    async def list_tools(self) -> list[types.Tool]:
        """Every tool, following ``nextCursor``; invalid tools are left out (:attr:`rejected_tools`).
        Always asked of the server (the tool registry keeps the tools); :attr:`tools_ttl_ms` says
        how long the listing may be kept."""
        self.exchange.start_listing()
        tools, pages = await self._paginate("tools/list", self._client.list_tools, "tools", "bypass")
        self.tools_ttl_ms = listing_ttl_ms(pages) if self.modern else None
        return tools

    @property
    def rejected_tools(self) -> dict[str, str]:
        """Tools of the last listing left out as invalid: shown name -> why."""
        return dict(self.exchange.rejected_tools)

    async def list_resources(self, *, cached: bool = True) -> list[types.Resource]:
        """Every resource; ``cached``: a first page the server let kairox keep (``ttlMs``) is
        served while fresh; ``False``: asked of the server, nothing kept."""
        resources, _ = await self._paginate(
            "resources/list", self._client.list_resources, "resources", _cache_mode(cached)
        )
        return resources

    async def list_resource_templates(self, *, cached: bool = True) -> list[types.ResourceTemplate]:
        templates, _ = await self._paginate(
            "resources/templates/list",
            self._client.list_resource_templates,
            "resource_templates",
            _cache_mode(cached),
        )
        return templates

    async def list_prompts(self, *, cached: bool = True) -> list[types.Prompt]:
        prompts, _ = await self._paginate("prompts/list", self._client.list_prompts, "prompts", _cache_mode(cached))
        return prompts

    # -- requests -----------------------------------------------------------------
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        timeout: float | None = None,
        progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
    ) -> types.CallToolResult:
        """``tools/call``; on timeout the SDK sends ``notifications/cancelled`` to the server.

        ``timeout`` is the SDK's read timeout of each round of the call: a 2026-07-28 server
        may answer with an ``InputRequiredResult`` (it needs sampling, elicitation or roots),
        whose requests the host callbacks answer before the SDK sends the call again, at most
        ``input_required_max_rounds`` times. As the SDK measures it, a timeout is the server's
        time: a round's clock runs from its request's write to its answer, not while a person
        answers. A call that cannot even be sent within ``timeout + SEND_GRACE`` s fails with
        :class:`McpCallTimeout` too, and the connection is declared broken (:attr:`closed`),
        so the lifecycle reconnects.
        """
        # the SDK's records from this (the caller's) task go to the server's diagnostics (the
        # log capture was installed when the session opened); the request's write is bounded
        # by timeout + SEND_GRACE (only when it has to wait, see _BoundedWriteStream)
        logs = sdk_diagnostics.set(self.diagnostics)
        send_by = _send_by.set(None if timeout is None else (time.monotonic(), timeout + SEND_GRACE))
        stalled = False
        try:
            with self.host.calling():  # the caller's session answers what the server asks meanwhile
                result = await self._client.call_tool(
                    name,
                    arguments or {},
                    read_timeout_seconds=timeout,
                    progress_callback=cast(Any, progress),
                    meta=self._meta,
                )
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
            sdk_diagnostics.reset(logs)
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
        return result

    async def read_resource(
        self, uri: str, *, timeout: float | None = None, cached: bool = True
    ) -> types.ReadResourceResult:
        """``resources/read``, its ``InputRequiredResult`` rounds answered as :meth:`call_tool`'s;
        ``timeout`` bounds the whole read. ``cached``: a result the server let kairox keep
        (``ttlMs``) is served while fresh (one reached through input rounds never is);
        ``False``: asked of the server, nothing kept."""
        with self._bounded(f"resources/read {uri}", timeout):
            return await self._client.read_resource(uri, meta=self._meta, cache_mode=_cache_mode(cached))

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, timeout: float | None = None
    ) -> types.GetPromptResult:
        """``prompts/get``, its ``InputRequiredResult`` rounds answered as :meth:`call_tool`'s;
        ``timeout`` bounds the whole request."""
        with self._bounded(f"prompts/get {name}", timeout):
            return await self._client.get_prompt(name, arguments, meta=self._meta)
