"""The gateway: a kairox runtime behind the MCP SDK's low-level ``Server``.

One :class:`Gateway` per runtime. Every ``tools/call`` is a :meth:`kairox.Session.call_tool`
of the kairox session that belongs to the client's connection (so an "allow for this
session" lasts as long as that connection); an Ask goes to the client
(:mod:`kairox_serve.approval`). A 2026-07-28 client's call whose backend may ask it
something runs in the gateway's task group, held between the client's retries
(:mod:`kairox_serve.held`). Skills are prompts, their files resources, and entries of the skills
extension (:mod:`kairox_serve.skillsext`), beside the backends' prompts, resources and
completions (:mod:`kairox_serve.backends`); the backends' log
records and resource updates go to the clients that asked (:mod:`kairox_serve.relay`). What
a client can see, every route asks one :class:`~kairox_serve.exposure.Exposure`.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import warnings
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kairox import Event, PolicyDenied, Runtime, Session, SkillsChanged, ToolError, ToolNotFound, ToolsChanged, ToolSpec
from kairox.ext import SkillDef, SkillError, user_home
from kairox.files import Root, is_inside

from .approval import ClientApprover, InputNeeded, NotAskable, UnofferedAnswer, refusal
from .audit import Auditor
from .backends import Backend, BackendRefused, Backends, contents_of, match_template
from .config import ServeConfig
from .convert import (
    SKILL_SCHEME,
    BadSkillUri,
    call_result,
    error_result,
    mcp_tool,
    parse_skill_uri,
    prompt_for,
    read_contents,
    skill_files,
    skill_uri,
)
from .exposure import Exposure
from .forward import ClientLink, backend_of_tool, missing_capability
from .held import EXPIRED, HeldCall, HeldCalls, fingerprint, minted
from .identity import LOCAL_PRINCIPAL, Principal
from .limits import Limited, Limits
from .relay import Listener, Relay
from .skillsext import SkillsExtension
from .state import StateUnavailable, open_store
from .telemetry import Telemetry

if TYPE_CHECKING:
    from kairox_mcp import McpPrompt

__all__ = ["PRINCIPAL_KEY", "Gateway", "principal_of"]

logger = logging.getLogger(__name__)

RESOURCE_NOT_FOUND = -32002
#: the most resources one listen stream subscribes to
MAX_LISTEN_URIS = 100
_STATE_KEY = "kairox_serve.session"
#: the ASGI scope key where the HTTP app puts a request's :class:`~kairox_serve.identity.Principal`
PRINCIPAL_KEY = "kairox_serve.principal"
_UNSHARED_NOW = CacheHint(ttl_ms=0, scope="private")
#: ``ttlMs`` / ``cacheScope`` of the gateway's cacheable results on 2026-07-28 (the SDK leaves
#: them out on the handshake revisions). Private: what a client sees is behind the gateway's
#: token, policy and ``[serve]``, never for a shared cache to hand to whoever asks. 0: each
#: list is made when asked, from a registry and backends that change at any moment (a
#: restart, a backend's list_changed, an edited skill); changes are announced, and no window
#: of freshness can be promised.
CACHE_HINTS: dict[CacheableMethod, CacheHint] = {
    "server/discover": _UNSHARED_NOW,
    "tools/list": _UNSHARED_NOW,
    "prompts/list": _UNSHARED_NOW,
    "resources/list": _UNSHARED_NOW,
    "resources/templates/list": _UNSHARED_NOW,
    "resources/read": _UNSHARED_NOW,
}


def package_version() -> str:
    try:
        return version("kairox-serve")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
        return "0"


class _Server(Server[Any]):
    """``Server`` whose initialize result always advertises ``listChanged`` (the HTTP
    session manager builds it without notification options)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(
            prompts_changed=True, resources_changed=True, tools_changed=True
        )
        return super().create_initialization_options(options, experimental_capabilities, extensions)


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection | None:
    """The SDK's per-client :class:`Connection` of a request. mcp 2.3 hands handlers the
    per-request ``ServerSession``, which holds it; ``Context.connection`` (its public
    spelling) is not built by the runner yet."""
    connection = getattr(ctx.session, "_connection", None)
    return connection if isinstance(connection, Connection) else None


def principal_of(ctx: ServerRequestContext[Any, Any], *, one_client: bool) -> Principal:
    """Who sent ``ctx``'s request: the principal the HTTP app found (its token's), or the
    local user where no HTTP request is (stdio, an in-memory client). An HTTP request
    without one is refused (it did not come through the app's checks)."""
    if one_client or ctx.request is None:  # stdio, or in memory: no HTTP request, the local user
        return LOCAL_PRINCIPAL
    scope = getattr(ctx.request, "scope", None)
    principal = scope.get(PRINCIPAL_KEY) if isinstance(scope, dict) else None
    if not isinstance(principal, Principal):
        raise MCPError(code=types.INVALID_REQUEST, message="refused: the request carries no principal")
    return principal


class _ConnectionSession:
    """The kairox session of one client connection, made once (concurrent first requests wait),
    and the principal it belongs to."""

    def __init__(self, principal: Principal) -> None:
        self.principal = principal
        self.ready = anyio.Event()
        self.session: Session | None = None
        self.link: ClientLink | None = None
        self.error: BaseException | None = None


class Gateway:
    """Serve ``runtime`` as one MCP server.

    ``one_client``: the process serves a single client (stdio), so one kairox session lasts
    the whole process. ``stateless``: nothing is kept between requests (each call has a
    session of its own), for replicas behind a load balancer.
    """

    def __init__(
        self, runtime: Runtime, config: ServeConfig, *, stateless: bool = False, one_client: bool = False
    ) -> None:
        self.rt = runtime
        self.config = config
        self.stateless = stateless
        self.one_client = one_client
        self._process_session: Session | None = None
        self._process_link: ClientLink | None = None
        #: what clients see: every route asks it (tools, prompts, resources, notifications)
        self.exposure = Exposure(runtime, config)
        #: the backends' prompts, resources and completions, as the exposure lets them through
        self.backends = Backends(runtime, self.exposure)
        #: connections that can take notifications (handshake era with a standalone channel)
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        #: 2026-07-28 clients get change notifications on the ``subscriptions/listen``
        #: streams they open (one bus per process: each replica announces its own changes)
        self._bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self._bus, max_subscriptions=config.max_listens)
        #: the backends' log records and resource updates, to the clients that asked
        self.relay = Relay(runtime, self.backends, self._bus.publish)
        #: open listen streams: in all, and by the client session that opened them
        self._listens = 0
        self._listens_of: dict[object, int] = {}
        #: 2026-07-28 calls whose backend waits for the client's answers (see kairox_serve.held)
        self._held = HeldCalls(config.max_held_calls, config.held_call_timeout, self._held_full)
        #: one audit line and event per tool call (``[serve.audit]``)
        self.auditor = Auditor(runtime, config.audit)
        #: per-principal rate and concurrency limits of tool calls (``[serve.limits]``)
        #: with ``[serve.state] redis``, counted in Redis by every replica (kairox_serve.state)
        self._store = open_store(config.state) if config.state is not None else None
        self.limits = Limits(config.limits, self._store)
        #: what the gateway adds to the SDK's OpenTelemetry span of each call, and its metrics
        self.telemetry = Telemetry()
        self._tg: anyio.abc.TaskGroup | None = None
        handlers: dict[str, Any] = {
            "on_list_tools": self._list_tools,
            "on_call_tool": self._call_tool,
            "on_subscriptions_listen": self._subscriptions_listen,
            "on_set_logging_level": self._set_level,
        }
        if config.prompts:
            handlers.update(on_list_prompts=self._list_prompts, on_get_prompt=self._get_prompt)
        if config.resources:
            handlers.update(
                on_list_resources=self._list_resources,
                on_list_resource_templates=self._list_resource_templates,
                on_read_resource=self._read_resource,
                on_subscribe_resource=self._subscribe,
                on_unsubscribe_resource=self._unsubscribe,
            )
        if config.prompts or config.resources:
            handlers.update(on_completion=self._complete)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # logging is deprecated as of 2026-07-28; the handshake revisions have it
            self.server = _Server(
                config.name,
                version=config.version or package_version(),
                instructions=config.instructions,
                cache_hints=CACHE_HINTS,
                **handlers,
            )
        self.server.middleware.append(self._observe)
        #: the skills extension (SEP-2640) beside the prompts: it needs the resources capability
        self.skills_extension: SkillsExtension | None = None
        if config.resources and SkillsExtension.available():
            self.skills_extension = SkillsExtension(
                self.exposure, lambda ctx, name: self.principal(ctx).may_use_skill(self.config.principals, name)
            )
            self.skills_extension.install(self.server)

    # -- lifetime ----------------------------------------------------------------
    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        """While open, registry changes become ``list_changed`` notifications (and with
        ``one_client`` the process's kairox session is open); at the end open
        ``subscriptions/listen`` streams are closed gracefully."""
        unsubscribe = [
            self.rt.events.subscribe(self._on_change, ToolsChanged),
            self.rt.events.subscribe(self._on_change, SkillsChanged),
            *self._backend_changes(),
        ]
        unsubscribe.append(self.rt.events.subscribe(self.telemetry.on_event, *Telemetry.EVENTS))
        self.exposure.tools_changed()  # what changed since it was made
        self.exposure.skills_changed(())
        try:
            with self.auditor.running():
                if self._store is not None:
                    await self._store.check()  # a replica that cannot share its limits does not serve
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    if self._store is not None:
                        tg.start_soon(self._store.run)
                        if not self.one_client:  # retries of the calls this replica holds, from the others
                            tg.start_soon(self._store.serve, self._relayed)
                    unsubscribe.append(self.relay.start(tg))
                    try:
                        if self.one_client and not self.stateless:
                            link = self._link(lasting=True)
                            async with self.rt.session(**link.session_kwargs()) as session:
                                self._process_session, self._process_link = session, link
                                try:
                                    yield self
                                finally:
                                    self._process_session = self._process_link = None
                        else:
                            yield self
                    finally:
                        self._tg = None
                        tg.cancel_scope.cancel()  # calls still held: their clients are gone with the server
        finally:
            for unsub in unsubscribe:
                unsub()
            self.end_subscriptions()
            if self._store is not None:
                with anyio.CancelScope(shield=True):
                    await self._store.aclose()

    def principal(self, ctx: ServerRequestContext[Any, Any]) -> Principal:
        return principal_of(ctx, one_client=self.one_client)

    def end_subscriptions(self) -> None:
        """Close every open ``subscriptions/listen`` stream gracefully (its client sees the
        stream's final result, not a drop): a server that is stopping calls this first, so
        open streams do not hold its shutdown up."""
        self._listen.close()

    def _listener_of(self, ctx: ServerRequestContext[Any, Any]) -> object | None:
        """The client session a listen stream counts against: the process with ``one_client``
        (stdio: a 2026-07-28 request has a connection object of its own, but the process
        serves one client), an HTTP session's connection, else ``None`` (2026-07-28 over
        HTTP and ``--stateless`` keep no session: nothing tells one client's requests from
        another's)."""
        if self.one_client:
            return self
        connection = connection_of(ctx)
        if connection is None or self.stateless or connection.session_id is None:
            return None
        return connection

    async def _subscriptions_listen(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """The SDK's ``subscriptions/listen`` handler, behind two limits that say which was
        reached: ``[serve] max_listens`` streams in all and ``max_listens_per_session`` of one
        client session (where there is one), so one client cannot take every stream."""
        cfg = self.config
        if self._listens >= cfg.max_listens:
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"subscriptions/listen refused: the gateway has {self._listens} listen streams open, "
                f"its limit for all clients together ([serve] max_listens = {cfg.max_listens}); "
                "close a stream and listen again",
            )
        owner = self._listener_of(ctx)
        if owner is not None:
            mine = self._listens_of.get(owner, 0)
            if mine >= cfg.max_listens_per_session:
                raise MCPError(
                    code=types.INVALID_REQUEST,
                    message=f"subscriptions/listen refused: this session already has {mine} listen streams open, "
                    f"the most one client session may ([serve] max_listens_per_session = "
                    f"{cfg.max_listens_per_session}); one stream can carry every kind of change: "
                    "close one and listen again",
                )
            self._listens_of[owner] = mine + 1
        self._listens += 1
        listener = Listener()
        try:
            params = await self._listen_resources(ctx, listener, params)
            return await self._listen(ctx, params)
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                for uri in self.relay.subscriptions(listener):
                    await self.relay.unsubscribe(listener, uri)
            self._listens -= 1
            if owner is not None:
                left = self._listens_of.get(owner, 1) - 1
                if left > 0:
                    self._listens_of[owner] = left
                else:
                    self._listens_of.pop(owner, None)

    async def _listen_resources(
        self, ctx: ServerRequestContext[Any, Any], listener: Listener, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenRequestParams:
        """The resources a listen stream names are subscribed at the backends that own them, as
        ``resources/subscribe`` is; those that cannot be (no backend has them, the principal may
        not read them, a ``skill://`` one, more than ``MAX_LISTEN_URIS``) are left out of what
        the stream honors."""
        wanted = params.notifications.resource_subscriptions
        if not wanted or not self.config.resources:
            return params
        kept: list[str] = []
        for uri in wanted[:MAX_LISTEN_URIS]:
            if uri.startswith(SKILL_SCHEME) or uri in kept:
                continue
            try:
                if not await self._may_subscribe(ctx, uri):
                    raise BackendRefused(f"{uri}: no MCP server of the gateway has it")
                await self.relay.subscribe(listener, uri)
            except BackendRefused as exc:
                logger.info("kairox serve: subscriptions/listen: %s not subscribed: %s", uri, exc)
                continue
            kept.append(uri)
        notifications = params.notifications.model_copy(update={"resource_subscriptions": kept or None})
        return params.model_copy(update={"notifications": notifications})

    async def _observe(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        connection = connection_of(ctx)
        if (
            connection is not None
            and not self.stateless
            and connection.has_standalone_channel
            and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
        ):
            self._connections.add(connection)
        session_id = connection.session_id if connection is not None else None
        return await self.telemetry.serve(
            ctx.method, ctx.params, functools.partial(call_next, ctx), session_id=session_id
        )

    async def _on_change(self, event: Event) -> None:
        """A registry change a client can see (one of hidden tools or skills is not), announced
        on both revisions: as a listen-stream event to 2026-07-28 subscribers, as a
        notification on each handshake-era connection."""
        tools = isinstance(event, ToolsChanged)
        if tools:
            seen = self.exposure.tools_changed()
        else:
            seen = isinstance(event, SkillsChanged) and self.exposure.skills_changed((*event.added, *event.removed))
        if not seen:
            return
        if tools:
            await self._announce(tools=True)
        else:
            await self._announce(prompts=self.config.prompts, resources=self.config.resources)

    async def _announce(self, *, tools: bool = False, prompts: bool = False, resources: bool = False) -> None:
        """``list_changed`` of each kind given: a listen-stream event for 2026-07-28
        subscribers, a notification on each handshake-era connection."""
        events = [
            e
            for wanted, e in (
                (tools, ToolsListChanged()),
                (prompts, PromptsListChanged()),
                (resources, ResourcesListChanged()),
            )
            if wanted
        ]
        for e in events:
            await self._bus.publish(e)
        for connection in list(self._connections):
            if not connection.initialized.is_set():
                continue
            if tools:
                await connection.send_tool_list_changed()
            if prompts:
                await connection.send_prompt_list_changed()
            if resources:
                await connection.send_resource_list_changed()

    def _backend_changes(self) -> list[Callable[[], None]]:
        """A backend's prompt or resource list changed: announced when the backend is exposed
        (its tools' changes arrive as the registry's :class:`~kairox.ToolsChanged`)."""
        try:
            from kairox_mcp import McpPromptsChanged, McpResourcesChanged
        except ImportError:  # pragma: no cover - without kairox-mcp there are no backends
            return []

        async def changed(event: Event) -> None:
            server = getattr(event, "server", "")
            if not self.exposure.exposes_backend(server):
                return
            if isinstance(event, McpPromptsChanged) and self.config.prompts:
                await self._announce(prompts=True)
            elif isinstance(event, McpResourcesChanged) and self.config.resources:
                await self._announce(resources=True)

        return [self.rt.events.subscribe(changed, McpPromptsChanged, McpResourcesChanged)]

    # -- logging and resource subscriptions (kairox_serve.relay) ----------------------------
    async def _set_level(
        self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        await self.relay.set_level(self._notifiable(ctx), params.level, self._hears(self.principal(ctx)))
        return types.EmptyResult()

    def _hears(self, principal: Principal) -> Callable[[str], bool] | None:
        """Whose log records ``principal`` may be sent, where ``[serve.principals]`` narrows:
        a backend's, only when it may call every tool of it (the records may be about any of
        them, and about other principals' calls of them); ``None`` when nothing narrows."""
        rules = self.config.principals
        if not rules.narrows:
            return None

        def hears(server: str) -> bool:
            specs = self.rt.tools.by_provider(f"mcp:{server}")
            return bool(specs) and all(principal.may_use_tool(rules, (s.exported_name, s.id)) for s in specs)

        return hears

    def _notifiable(self, ctx: ServerRequestContext[Any, Any]) -> Connection | None:
        """The connection of ``ctx`` when it can be sent notifications later (a handshake-era
        connection with a standalone channel, not ``--stateless``), else ``None``."""
        connection = connection_of(ctx)
        if connection is None or self.stateless or not connection.has_standalone_channel:
            return None
        return connection

    async def _subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        if uri.startswith(SKILL_SCHEME):  # a skill's files are read when asked; nothing pushes their changes
            return types.EmptyResult()
        try:
            if not await self._may_subscribe(ctx, uri):
                raise BackendRefused(f"{uri}: no MCP server of the gateway has it")
            await self.relay.subscribe(self._notifiable(ctx), uri)
        except BackendRefused as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc), data={"uri": uri}) from None
        return types.EmptyResult()

    async def _may_subscribe(self, ctx: ServerRequestContext[Any, Any], uri: str) -> bool:
        """Whether the principal may hear of ``uri``'s updates: it may read it (a resource it
        may not see is not subscribed, as it is not read). Raises :class:`BackendRefused`."""
        if not self.config.principals.narrows:
            return True
        backend = await self.backends.owner(uri)
        return backend is not None and await self._may_read(ctx, backend, uri)

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        if not uri.startswith(SKILL_SCHEME):
            await self.relay.unsubscribe(self._notifiable(ctx), uri)
        return types.EmptyResult()

    def _link(self, *, lasting: bool) -> ClientLink:
        return ClientLink(self.rt, remote=not self.one_client, lasting=lasting)

    @asynccontextmanager
    async def _session(self, ctx: ServerRequestContext[Any, Any]) -> AsyncIterator[tuple[Session, ClientLink]]:
        """The kairox session of the client that sent ``ctx``'s request, and its link."""
        if self._process_session is not None and self._process_link is not None:
            yield self._process_session, self._process_link
            return
        connection = connection_of(ctx)
        if self.stateless or connection is None or connection.session_id is None:
            link = self._link(lasting=False)
            async with self.rt.session(**link.session_kwargs()) as session:  # one request, one session
                yield session, link
            return
        principal = self.principal(ctx)
        entry = connection.state.get(_STATE_KEY)
        if entry is not None and (entry.principal.name, entry.principal.via) != (principal.name, principal.via):
            # a session id is no credential: another principal's request must not run in it
            raise MCPError(code=types.INVALID_REQUEST, message="refused: this MCP session belongs to another principal")
        if entry is None:
            entry = connection.state[_STATE_KEY] = _ConnectionSession(principal)
            try:
                entry.link = self._link(lasting=True)
                entry.session = await connection.exit_stack.enter_async_context(
                    self.rt.session(**entry.link.session_kwargs())
                )
            except BaseException as exc:
                entry.error = exc
                raise
            finally:
                entry.ready.set()
        else:
            await entry.ready.wait()
        if entry.session is None or entry.link is None:
            raise MCPError(code=types.INTERNAL_ERROR, message="the session of this connection could not start")
        yield entry.session, entry.link

    # -- tools -----------------------------------------------------------------------
    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # a backend whose tools are past their ttlMs is listed again first; a change is
        # announced here (the registry's event then finds nothing new), so it is told once
        if await self.backends.refresh_tools() and self.exposure.tools_changed():
            await self._announce(tools=True)
        principal = self.principal(ctx)
        rules = self.config.principals
        return types.ListToolsResult(
            tools=[
                mcp_tool(spec)
                for name, spec in self.exposure.tools().items()
                if principal.may_use_tool(rules, (name, spec.id))
            ]
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        spec = self.exposure.tool(params.name)
        if spec is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        principal = self.principal(ctx)
        if not principal.may_use_tool(self.config.principals, (spec.exported_name, spec.id)):
            why = f"refused: the principal {principal.name!r} may not call {params.name} ([serve.principals])"
            self.auditor.refused(principal, spec, params.arguments or {}, why)
            raise MCPError(code=types.INVALID_PARAMS, message=why)
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if modern and params.request_state is not None:
            return await self._retry(ctx, "tools/call", params)  # type: ignore[no-any-return]
        admitted = await self.limits.admit(principal)  # [serve.limits]: before the policy and the backend
        if isinstance(admitted, Limited):
            self.auditor.refused(principal, spec, params.arguments or {}, admitted.message, by="limits")
            return admitted.result()
        if modern and self._tg is not None and self._may_ask(ctx):
            held = HeldCall(self._held, self._client_of(ctx), fingerprint("tools/call", params), params.input_responses)
            run = functools.partial(self._run, ctx, params, spec, _held_progress(held), held)
            self._tg.start_soon(self._hold, held, "tools/call", admitted.holding(run))
            return await self._round(held, ctx)  # type: ignore[no-any-return]

        async def progress(done: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(done, total, message)

        return await admitted.holding(functools.partial(self._run, ctx, params, spec, progress))()

    async def _run(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.CallToolRequestParams,
        spec: ToolSpec,
        progress: Any,
        held: HeldCall | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """The call ``ctx`` asked for, in the client's kairox session (``held``: the call is held
        while its backend asks, see :meth:`_hold`). A 2026-07-28 call that failed because its
        backend asked for what the client did not declare is that protocol error (-32021)."""
        async with self._session(ctx) as (session, link):
            with link.calling(ctx, params, backend_of_tool(spec.provider), held) as call:
                outcome = await self._outcome(session, link, ctx, params, spec, progress)
        if isinstance(outcome, types.CallToolResult) and outcome.is_error:
            refused = missing_capability(call, spec.exported_name)
            if refused is not None:
                raise refused
        return outcome

    async def _outcome(
        self,
        session: Session,
        link: ClientLink,
        ctx: ServerRequestContext[Any, Any],
        params: types.CallToolRequestParams,
        spec: ToolSpec,
        progress: Any,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """The kairox session's call, its refusals and failures as the tool's error results,
        audited as its principal's."""
        principal = self.principal(ctx)
        approver = ClientApprover(ctx, params, lasting=link.lasting, principal=principal.name)
        with self.auditor.call(principal, spec, params.arguments or {}, session, approver) as said:
            return await self._pipeline(session, spec, params, approver, progress, said)

    async def _pipeline(
        self,
        session: Session,
        spec: ToolSpec,
        params: types.CallToolRequestParams,
        approver: ClientApprover,
        progress: Any,
        said: dict[str, Any],
    ) -> types.CallToolResult | types.InputRequiredResult:
        try:
            result = await session.call_tool(
                spec.exported_name, params.arguments or {}, approver=approver, progress=progress
            )
        except PolicyDenied as exc:
            cause = exc.__cause__
            if isinstance(cause, InputNeeded):
                said["outcome"] = "input_required"
                return types.InputRequiredResult(input_requests={cause.key: cause.request})
            if isinstance(cause, NotAskable):
                reason = approver.asked.reason if approver.asked is not None else exc.reason
                user_config = str((self.rt.home or user_home(self.rt.env)) / "kairox.toml")
                return error_result(refusal(spec.id, spec.exported_name, reason, str(cause), user_config))
            if isinstance(cause, UnofferedAnswer):
                return error_result(f"denied: {spec.exported_name} ({spec.id}): {cause}")
            return error_result(f"denied: {spec.exported_name} ({spec.id}): {exc.reason}")
        except ToolNotFound as exc:
            return error_result(f"not found: {exc}")
        except ToolError as exc:
            return error_result(f"failed: {exc}")
        return call_result(result)

    # -- 2026-07-28 calls whose backend asks (kairox_serve.held) -------------------------
    def _may_ask(self, ctx: ServerRequestContext[Any, Any]) -> bool:
        """Whether a backend's request during this 2026-07-28 request could reach the client: it
        declared sampling, elicitation or roots."""
        caps = ctx.session.client_capabilities
        if caps is None:
            return False
        return caps.sampling is not None or caps.elicitation is not None or caps.roots is not None

    def _client_of(self, ctx: ServerRequestContext[Any, Any]) -> object:
        """Who may retry a held call: the process's one client (stdio); over HTTP the session
        (where there is one) and the bearer credential, digested (one shared token makes
        every holder of it one client; a JWT names its principal)."""
        if self.one_client:
            return "stdio"
        connection = connection_of(ctx)
        session_id = connection.session_id if connection is not None else None
        headers = getattr(ctx.request, "headers", None)
        credential = headers.get("authorization") if headers is not None else None
        digest = hashlib.sha256(credential.encode("utf-8", "surrogatepass")).hexdigest() if credential else None
        return (session_id, digest)

    def _held_full(self, held: int) -> str:
        return (
            f"the gateway already holds {held} calls waiting for their clients' answers, its limit "
            f"([serve] max_held_calls = {self.config.max_held_calls}); try again when one has finished"
        )

    async def _hold(self, held: HeldCall, method: str, run: Callable[[], Awaitable[Any]]) -> None:
        """Run the request (``run()``, a ``method``) in the gateway's task group, so it outlives
        the request that made it while its backend waits for the client; its outcome goes to
        the waiting retry."""
        outcome: Any
        with self.telemetry.holding(), held.scope:
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._held.watch, held)
                    try:
                        outcome = await run()
                    except MCPError as exc:  # a protocol error: the retry raises it
                        outcome = exc
                    finally:
                        tg.cancel_scope.cancel()
            except Exception as exc:  # the retry reports it; the gateway goes on
                logger.exception("kairox serve: a held %s failed", method)
                why = f"failed: {type(exc).__name__}: {exc}"
                outcome = error_result(why) if method == "tools/call" else MCPError(types.INTERNAL_ERROR, why)
            held.finish(outcome)
        if not held.finished or held.scope.cancel_called:  # expired, or its client cancelled the call
            self._held.drop(held)
            return
        if held.registered and held.ctx is None:
            # it ended between rounds (its backend failed, say): the outcome waits for the
            # retry as long as a held call would, then goes
            back = held.back
            with anyio.move_on_after(self._held.timeout):
                await back.wait()
            if not back.is_set():
                self._held.drop(held)

    async def _round(self, held: HeldCall, ctx: ServerRequestContext[Any, Any] | None) -> Any:
        """Wait, as the client's request ``ctx`` (``None``: relayed by another replica, which
        gets no progress), for the call's result or its next request to
        the client (an ``InputRequiredResult`` under a fresh token). A cancelled request
        cancels the call."""
        held.attach(ctx)
        try:
            while True:
                if held.finished:
                    self._held.drop(held)
                    if isinstance(held.outcome, MCPError):
                        raise held.outcome
                    return held.outcome
                asks = held.unanswered()
                if asks:
                    token = self._held.mint(held)
                    held.detach()
                    if self._store is not None and not self.one_client:  # its retry may reach another replica
                        await self._store.hold(token, self._held.timeout)
                    return types.InputRequiredResult(input_requests=asks, request_state=token)
                await held.changed()
        except anyio.get_cancelled_exc_class():
            held.cancel()
            raise

    async def _retry(
        self,
        ctx: ServerRequestContext[Any, Any],
        method: str,
        params: types.CallToolRequestParams | types.GetPromptRequestParams,
    ) -> Any:
        """A client's retry of a held request: its answers to the waiting requests, then the next round."""
        assert params.request_state is not None
        held, why = self._held.take(params.request_state, self._client_of(ctx), fingerprint(method, params))
        relayable = self._store is not None and not self.one_client and minted(params.request_state)
        if held is None and why == EXPIRED and relayable:
            return await self._relay(ctx, method, params)
        if held is None:  # a protocol error (SEP-2322): not the tool's result
            raise MCPError(code=types.INVALID_PARAMS, message=f"not run: {params.name}: {why}")
        held.answer(params.input_responses)
        return await self._round(held, ctx)

    async def _relay(
        self,
        ctx: ServerRequestContext[Any, Any],
        method: str,
        params: types.CallToolRequestParams | types.GetPromptRequestParams,
    ) -> Any:
        """A retry of a call another replica may hold, relayed to it through ``[serve.state]``
        (:meth:`_relayed` there); its answer is this request's."""
        assert self._store is not None and params.request_state is not None
        message = {
            "method": method,
            "params": params.model_dump(by_alias=True, mode="json", exclude_none=True),
            "client": list(self._client_of(ctx)),  # type: ignore[call-overload]
        }
        try:
            reply = await self._store.relay(params.request_state, message)
        except StateUnavailable as exc:
            if exc.public != str(exc):  # where Redis is, and why it failed, is for the log
                logger.error("kairox serve: a relayed retry failed: %s", exc)
            raise MCPError(code=types.INVALID_PARAMS, message=f"not run: {params.name}: {exc.public}") from None
        if reply is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"not run: {params.name}: {EXPIRED}")
        if "error" in reply:
            raise MCPError(code=int(reply["error"]["code"]), message=str(reply["error"]["message"]))
        if reply.get("kind") == "input":
            return types.InputRequiredResult.model_validate(reply["result"])
        final = types.CallToolResult if method == "tools/call" else types.GetPromptResult
        return final.model_validate(reply["result"])

    async def _relayed(self, message: dict[str, Any]) -> dict[str, Any]:
        """Another replica's relayed retry of a call this one holds: checked as a retry made
        here is (the same client, tool and arguments; the token once), then the next round."""
        method = message["method"]
        kind = types.CallToolRequestParams if method == "tools/call" else types.GetPromptRequestParams
        try:
            params = kind.model_validate(message["params"])
            client = tuple(message["client"])
            token = params.request_state or ""
            held, why = self._held.take(token, client, fingerprint(method, params))
            if held is None:
                raise MCPError(code=types.INVALID_PARAMS, message=f"not run: {params.name}: {why}")
            held.answer(params.input_responses)
            outcome = await self._round(held, None)
        except MCPError as exc:
            return {"error": {"code": exc.code, "message": exc.message}}
        except Exception as exc:  # a malformed message: the relaying replica is told, this one goes on
            logger.exception("kairox serve: a relayed retry failed")
            return {"error": {"code": types.INTERNAL_ERROR, "message": f"failed: {type(exc).__name__}"}}
        kind_of = "input" if isinstance(outcome, types.InputRequiredResult) else "result"
        return {"kind": kind_of, "result": outcome.model_dump(by_alias=True, mode="json", exclude_none=True)}

    # -- prompts: skills and the backends' -------------------------------------------------
    def _skill_names(self) -> set[str]:
        return {s.name for s in self.exposure.skills()}

    def _skills_for(self, ctx: ServerRequestContext[Any, Any]) -> list[SkillDef]:
        """The exposed skills the request's principal may see (``[serve.principals]``)."""
        principal = self.principal(ctx)
        return [s for s in self.exposure.skills() if principal.may_use_skill(self.config.principals, s.name)]

    def _skill_for(self, ctx: ServerRequestContext[Any, Any], name: str) -> SkillDef | None:
        skill = self.exposure.skill(name)
        if skill is None or not self.principal(ctx).may_use_skill(self.config.principals, name):
            return None
        return skill

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        prompts = [prompt_for(s) for s in self._skills_for(ctx)]
        for exported, backend, prompt in await self.backends.prompts(self._skill_names()):
            if not self._may_see_item(ctx, backend, prompt.name):
                continue
            prompts.append(
                types.Prompt(
                    name=exported,
                    title=prompt.title,
                    description=prompt.description,
                    arguments=[
                        types.PromptArgument(name=a.name, description=a.description, required=a.required)
                        for a in prompt.arguments
                    ]
                    or None,
                )
            )
        return types.ListPromptsResult(prompts=prompts)

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        """A skill's prompt, rendered; or a backend's, got as the client's request: a 2026-07-28
        client's is held while its backend asks (as a tool call is, :meth:`_call_tool`)."""
        skill = self._skill_for(ctx, params.name)
        if skill is None:
            found = await self.backends.prompt(params.name, self._skill_names())
            if self.exposure.skill(params.name) is not None or (
                found is not None and not self._may_see_item(ctx, found[0], found[1].name)
            ):
                found = None  # a skill, or a backend's prompt, this principal may not see
            if found is None:
                raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
            backend, prompt = found
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                if params.request_state is not None:
                    return await self._retry(ctx, "prompts/get", params)  # type: ignore[no-any-return]
                if self._tg is not None and self._may_ask(ctx):
                    held = HeldCall(
                        self._held, self._client_of(ctx), fingerprint("prompts/get", params), params.input_responses
                    )
                    run = functools.partial(self._backend_prompt, ctx, params, backend, prompt, held)
                    self._tg.start_soon(self._hold, held, "prompts/get", run)
                    return await self._round(held, ctx)  # type: ignore[no-any-return]
            return await self._backend_prompt(ctx, params, backend, prompt)
        async with self._session(ctx) as (session, _link):
            try:
                rendered = await session.activate_skill(skill.name, params.arguments or {})
            except SkillError as exc:
                raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        return types.GetPromptResult(
            description=skill.description or None,
            messages=[types.PromptMessage(role="user", content=types.TextContent(text=rendered.text))],
        )

    async def _backend_prompt(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.GetPromptRequestParams,
        backend: Backend,
        prompt: McpPrompt,
        held: HeldCall | None = None,
    ) -> types.GetPromptResult:
        """A backend's prompt, got as the client's request ``ctx``: what the backend asks meanwhile
        goes to the client as during a tool call (:mod:`kairox_serve.forward`). A 2026-07-28
        request that failed because the backend asked for what the client did not declare is
        that protocol error (-32021)."""
        async with self._session(ctx) as (_session, link):
            with link.calling(ctx, params, backend.server, held) as call:
                try:
                    return await self.backends.get_prompt(backend, prompt, params.name, params.arguments or {})
                except BackendRefused as exc:
                    refused = missing_capability(call, params.name)
                    raise refused or MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None

    # -- resources: the skills' files and the backends' ---------------------------------------
    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        resources = [r for skill in self._skills_for(ctx) for r in _resources_of(skill)]
        for backend, r in await self.backends.resources():
            if r.uri.startswith(SKILL_SCHEME) or not self._may_see_item(ctx, backend, r.name):  # skill: the gateway's
                continue
            resources.append(
                types.Resource(
                    uri=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type, size=r.size
                )
            )
        return types.ListResourcesResult(resources=resources)

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=t.uri_template,
                    name=t.name,
                    title=t.title,
                    description=t.description,
                    mime_type=t.mime_type,
                )
                for backend, t in await self.backends.templates()
                if not t.uri_template.startswith(SKILL_SCHEME) and self._may_see_item(ctx, backend, t.name)
            ]
        )

    def _not_found(self, ctx: ServerRequestContext[Any, Any], uri: str, why: str) -> MCPError:
        """Resource not found: -32602 with ``data.uri`` on 2026-07-28 (SEP-2164), -32002 before."""
        code = types.INVALID_PARAMS if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS else RESOURCE_NOT_FOUND
        return MCPError(code=code, message=f"Resource not found: {why}", data={"uri": uri})

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if not uri.startswith(SKILL_SCHEME):
            return await self._read_backend_resource(ctx, uri)
        located = self.skills_extension.locate(uri) if self.skills_extension is not None else None
        try:
            name, relative = located or parse_skill_uri(uri)
        except BadSkillUri as exc:
            raise self._not_found(ctx, uri, str(exc)) from None
        skill = self._skill_for(ctx, name)
        if skill is None:
            raise self._not_found(ctx, uri, f"no skill {name!r}")
        files = dict(skill_files(skill))  # the listing is the whitelist: nothing else is read
        path = files.get(relative)
        if path is None:
            raise self._not_found(ctx, uri, f"{name} has no file {relative!r}")
        folder = skill.root or path.parent
        if not is_inside(path.resolve(), folder.resolve()):
            raise self._not_found(ctx, uri, f"{relative!r} leads outside the skill")
        try:
            # inside the skill's folder, and inside the root it was found in (the workspace, a bundle)
            contents = read_contents(uri, path, Root(folder, label=f"skill {name}"))
        except (OSError, BadSkillUri) as exc:
            raise self._not_found(ctx, uri, f"not readable: {exc}") from None
        return types.ReadResourceResult(contents=[contents])

    async def _read_backend_resource(self, ctx: ServerRequestContext[Any, Any], uri: str) -> types.ReadResourceResult:
        """A backend's resource: read from the one backend that lists it or whose template matches it."""
        try:
            backend = await self.backends.owner(uri)
        except BackendRefused as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc), data={"uri": uri}) from None
        if backend is None or not await self._may_read(ctx, backend, uri):
            raise self._not_found(ctx, uri, "no skill file, and no MCP server of the gateway has it")
        try:
            contents = await self.backends.read(backend, uri)
        except BackendRefused as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc), data={"uri": uri}) from None
        if not contents:  # an empty answer is not a resource (SEP-2164)
            raise self._not_found(ctx, uri, f"MCP server {backend.server} returned no contents")
        return types.ReadResourceResult(contents=[contents_of(c) for c in contents])

    def _may_see_item(self, ctx: ServerRequestContext[Any, Any], backend: Backend, name: str) -> bool:
        """Whether the request's principal may see a backend's prompt, resource or template
        ``name``: its tool rules under the item's namespaced name (``[serve.principals]``)."""
        rules = self.config.principals
        return not rules.narrows or self.principal(ctx).may_use_tool(rules, backend.name_of(name))

    async def _may_read(self, ctx: ServerRequestContext[Any, Any], backend: Backend, uri: str) -> bool:
        """Whether the principal may read ``uri`` of ``backend``: a resource or template of it
        the principal may see lists or matches it."""
        if not self.config.principals.narrows:
            return True
        for b, r in await self.backends.resources():
            if b.server == backend.server and r.uri == uri and self._may_see_item(ctx, b, r.name):
                return True
        return any(
            b.server == backend.server and match_template(t.uri_template, uri) and self._may_see_item(ctx, b, t.name)
            for b, t in await self.backends.templates()
        )

    # -- completions -------------------------------------------------------------------------
    async def _complete(
        self, ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        """``completion/complete``, asked of the backend that owns the prompt or resource
        template; a skill's arguments have no completions (an empty answer)."""
        ref = params.ref
        backend: Backend | None = None
        prompt = template = None
        if isinstance(ref, types.PromptReference):
            if self.config.prompts and self.exposure.skill(ref.name) is None:
                found = await self.backends.prompt(ref.name, self._skill_names())
                if found is None or not self._may_see_item(ctx, found[0], found[1].name):
                    raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {ref.name}")
                backend, prompt = found[0], found[1].name
        elif self.config.resources and not ref.uri.startswith(SKILL_SCHEME):
            owners = {
                b.server: b
                for b, t in await self.backends.templates()
                if t.uri_template == ref.uri and self._may_see_item(ctx, b, t.name)
            }
            if len(owners) != 1:
                why = "no MCP server of the gateway has it" if not owners else "several MCP servers have it"
                raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource template {ref.uri}: {why}")
            backend, template = next(iter(owners.values())), ref.uri
        if backend is None:
            return types.CompleteResult(completion=types.Completion(values=[], total=0, has_more=False))
        try:
            completion = await self.backends.complete(backend, params, prompt=prompt, template=template)
        except BackendRefused as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        return types.CompleteResult(completion=completion)


def _held_progress(held: HeldCall) -> Callable[[float, float | None, str | None], Awaitable[None]]:
    """The progress callback of a held call: to the retry waiting for it, if one is."""

    async def progress(done: float, total: float | None, message: str | None) -> None:
        waiting = held.ctx
        if waiting is not None:  # between rounds no request is there to carry progress
            await waiting.session.report_progress(done, total, message)

    return progress


def _resources_of(skill: SkillDef) -> list[types.Resource]:
    out: list[types.Resource] = []
    for rel, path in skill_files(skill):
        try:
            size = os.path.getsize(path)
        except OSError:
            continue
        own = rel == "SKILL.md"
        out.append(
            types.Resource(
                uri=skill_uri(skill.name, rel),
                # a SKILL.md is named and described by its frontmatter (the skills extension's resource metadata)
                name=skill.frontmatter.name if own else f"{skill.name}/{rel}",
                description=skill.description if own else f"file of the skill {skill.name}",
                mime_type="text/markdown" if own else None,
                size=size,
            )
        )
    return out
