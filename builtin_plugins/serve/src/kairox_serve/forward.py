"""A backend server's requests to its client (sampling, elicitation, roots), forwarded to
the gateway's client.

Each kairox session of the gateway gets a :class:`ClientLink` as its host callbacks
(``rt.session(sampling_callback=..., ...)``, the MCP SDK's signatures): kairox-mcp hands a
backend's request that arrives during one of the session's tool calls to them, and the link
sends it to the client on that call's request (``related_request_id``), if the client
declared the capability. A backend's request belongs to the client's call running on that
backend (the most recent one, if the client has several there): never to a call on another
backend, and it is refused (with the reason) when the client has no call on that backend.
The link is also the session's approver: kairox asks before it lets
a backend sample or elicit (``mcp.<server>.sampling`` in ``[policy.rules]``), and that
question goes to the client too.

A client's ``prompts/get`` of a backend's prompt runs outside every kairox session, so the
backend's requests during it reach the runtime's own callbacks (:func:`runtime_sampling`,
...): they answer for the link of the client's request running in their task
(:meth:`ClientLink.calling` marks it), and refuse outside one.

On 2026-07-28 connections a server may not send requests: the client's call is held
(:mod:`kairox_serve.held`) and the request (and kairox's approval of it) travels as an
input request of the call's ``InputRequiredResult``. On stateless handshake-era HTTP and
with clients that did not declare the capability, a request cannot reach the client: the
backend gets an error saying so, and the client is not asked to approve a request it
would never see.

Roots: a client that declared the capability is asked for its roots as for sampling. A
remote client's (HTTP) roots are the backend's only where they lie inside the gateway's own
roots (the workspace and ``[policy] writable_roots``); the others are dropped with a log
record (:func:`contained_roots`). Without the capability the backend gets the gateway's roots.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit
from urllib.request import url2pathname

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kairox import ApprovalAnswer, ApprovalRequest, Runtime
from kairox.files import is_inside, resolve_path

from .approval import APPROVAL_SCHEMA, ONE_CALL_SCHEMA, ClientApprover, NotAskable, answer_of, message_for
from .held import HeldCall

__all__ = [
    "ClientLink",
    "contained_roots",
    "missing_capability",
    "runtime_approver",
    "runtime_elicitation",
    "runtime_list_roots",
    "runtime_sampling",
]

logger = logging.getLogger(__name__)

R = TypeVar("R", bound=types.Result)
#: a client's request during which its backend may ask: a tool's call, a backend prompt's get
Params = types.CallToolRequestParams | types.GetPromptRequestParams

#: roots of one client's answer that are looked at (outside input: bounded work); the rest are dropped
MAX_ROOTS = 100
#: a root URI longer than this is dropped
MAX_ROOT_URI = 4096

#: the link of the client's request running in this task (see :meth:`ClientLink.calling`)
_running: ContextVar[ClientLink | None] = ContextVar("kairox_serve_running", default=None)


def _unavailable(kind: str, why: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=f"{kind} is not available through the gateway: {why}")


async def _send(ctx: ServerRequestContext[Any, Any], request: types.ServerRequest, result_type: type[R]) -> R:
    """``request`` sent to the client as part of the call that ``ctx`` answers."""
    return await ctx.session.send_request(
        request, result_type, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
    )


def _key_of(context: Any) -> str | None:
    """The backend's key of an input request of its ``InputRequiredResult`` (the SDK hands
    it to the callback as the request's id), else ``None``: a handshake-era backend's
    request ids are numbers."""
    key = getattr(context, "request_id", None)
    return key if isinstance(key, str) else None


async def _ask(
    call: _Call, kind: str, request: types.ServerRequest, result_type: type[R], context: Any = None
) -> R | types.ErrorData:
    """``request`` to the client of ``call``: an input request of a held 2026-07-28 call
    (under the backend's key, where it gave one), or a request sent on the handshake-era call."""
    if call.held is not None:
        return await call.held.ask(kind, request, result_type, _key_of(context))  # type: ignore[arg-type]
    return await _send(call.ctx, request, result_type)


def _host_request_kind(request: ApprovalRequest) -> str | None:
    """``"sampling"`` / ``"elicitation"`` when ``request`` asks about a backend server's
    request of that kind (kairox-mcp decides them as ``mcp.<server>.<kind>``, provided
    by ``mcp:<server>``), else ``None``."""
    provider = request.tool.provider or ""
    if not provider.startswith("mcp:"):
        return None
    for kind in ("sampling", "elicitation"):
        if request.tool.id == f"mcp.{provider[4:]}.{kind}":
            return kind
    return None


#: why a request reached the runtime's own callback instead of a client's session
_NO_ONE_CALL = (
    "it did not come during exactly one client's tool call on this server (none was running, or "
    "several clients' calls were, and MCP does not say which call a request belongs to)"
)


async def runtime_sampling(context: Any, params: Any) -> types.CreateMessageResult | types.ErrorData:
    """The runtime's own callback (so backends see the capability): a request outside every
    kairox session goes to the client's request running in its task (a ``prompts/get``),
    and is refused outside one."""
    link = _running.get()
    if link is None:
        return _unavailable("sampling", _NO_ONE_CALL)
    return await link.sampling(context, params)


async def runtime_elicitation(context: Any, params: Any) -> types.ElicitResult | types.ErrorData:
    link = _running.get()
    if link is None:
        return _unavailable("elicitation", _NO_ONE_CALL)
    return await link.elicitation(context, params)


async def runtime_list_roots(runtime: Runtime, context: Any) -> types.ListRootsResult | types.ErrorData:
    """Roots asked outside every kairox session (bind ``runtime`` first): the client's request
    running in this task answers (:meth:`ClientLink.list_roots`); outside one, the gateway's roots."""
    link = _running.get()
    if link is None:
        return gateway_roots(runtime)
    return await link.list_roots(context)


def gateway_roots(runtime: Runtime) -> types.ListRootsResult:
    """The gateway's own roots: the workspace and ``[policy] writable_roots`` (:meth:`kairox.Runtime.roots`)."""
    return types.ListRootsResult.model_validate(
        {"roots": [{"uri": p.as_uri(), "name": p.name or str(p)} for p in runtime.roots()]}
    )


def _local_path(uri: str, base: Path) -> Path | None:
    """The real path (symlinks resolved) a ``file://`` URI of this machine names, else ``None``."""
    if len(uri) > MAX_ROOT_URI:
        return None
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
        return None
    text = url2pathname(parts.path)
    if "\x00" in text or not os.path.isabs(text):
        return None
    return resolve_path(text, base)


def contained_roots(answer: types.ListRootsResult, runtime: Runtime, server: str | None) -> types.ListRootsResult:
    """The roots of a remote client's answer that lie inside the gateway's roots (the
    workspace and ``[policy] writable_roots``), each as the real path it names; a root
    outside them (a path of the client's machine, a link that leads out, not a ``file://``
    URI of this machine) is dropped with a log record: the backend never sees it."""
    allowed = [resolve_path(str(p), runtime.workspace) for p in runtime.roots()]
    kept: list[types.Root] = []
    for i, root in enumerate(answer.roots):
        uri = str(root.uri)
        if i >= MAX_ROOTS:
            logger.warning(
                "kairox serve: the client sent %d roots; those after the first %d are not given to MCP server %s",
                len(answer.roots),
                MAX_ROOTS,
                server,
            )
            break
        path = _local_path(uri, runtime.workspace)
        if path is None or not any(is_inside(path, root_path) for root_path in allowed):
            logger.warning(
                "kairox serve: the client's root %r is outside the gateway's roots (the workspace and "
                "[policy] writable_roots): not given to MCP server %s",
                uri[:300],
                server,
            )
            continue
        kept.append(types.Root(uri=path.as_uri(), name=root.name))  # type: ignore[arg-type]
    return types.ListRootsResult(roots=kept)


async def runtime_approver(request: ApprovalRequest) -> ApprovalAnswer:
    """The runtime's own approver, asked outside every client's session: the client's request
    running in this task is asked; outside one, a backend's request the policy asks about
    could not be told apart (see :data:`_NO_ONE_CALL`)."""
    link = _running.get()
    if link is None:
        raise NotAskable(f"no client can be asked: {_NO_ONE_CALL}")
    return await link.approve(request)


def backend_of_tool(provider: str | None) -> str | None:
    """The backend MCP server whose tool a registry provider serves (``mcp:<server>``), else ``None``."""
    return provider[4:] if provider and provider.startswith("mcp:") else None


def backend_of_request(runtime: Runtime, context: Any) -> str | None:
    """The backend MCP server whose connection sent a request (the ``ClientRequestContext``
    kairox-mcp's host callbacks receive: its ``session`` is that server's client session),
    or ``None`` when it cannot be told (kairox-mcp not loaded, a server that has just restarted)."""
    session = getattr(context, "session", None)
    if session is None:
        return None
    try:
        from kairox_mcp import manager_of
    except ImportError:  # pragma: no cover - without kairox-mcp there are no backends to ask
        return None
    try:
        servers = manager_of(runtime).servers
    except Exception:  # kairox-mcp installed but not loaded in this runtime
        return None
    for name, server in servers.items():
        client = server.client
        if client is not None and client.session is session:
            return name
    return None


class _Call:
    """One running request of the client (a ``tools/call``, a backend prompt's ``prompts/get``):
    its request, the backend it runs on, and (a 2026-07-28 request that may be held while its
    backend asks) its :class:`HeldCall`."""

    __slots__ = ("backend", "ctx", "held", "missing", "params")

    def __init__(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: Params,
        backend: str | None,
        held: HeldCall | None = None,
    ) -> None:
        self.ctx = ctx
        self.params = params
        self.backend = backend
        self.held = held
        #: the capabilities a 2026-07-28 client lacked for its backend's requests (each refused)
        self.missing: set[str] = set()


def missing_capability(call: _Call, name: str) -> MCPError | None:
    """The 2026-07-28 protocol error for a call whose backend asked for what its client did
    not declare (-32021, HTTP 400, naming the capabilities), else ``None``."""
    if not call.missing:
        return None
    wanted = sorted(call.missing)
    required = types.ClientCapabilities.model_validate({capability: {} for capability in wanted})
    data = types.MissingRequiredClientCapabilityErrorData(required_capabilities=required)
    return MCPError(
        code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"{name} needs the client's {' and '.join(wanted)} capability: its MCP server asked for "
        f"{' and '.join(wanted)}, which the client did not declare",
        data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
    )


class ClientLink:
    """The host callbacks and approver of one kairox session: its client's running calls.

    ``remote``: the client is not on this machine (HTTP), so its roots pass
    :func:`contained_roots` before a backend sees them."""

    def __init__(self, runtime: Runtime, *, remote: bool, lasting: bool) -> None:
        self.runtime = runtime
        self.remote = remote
        #: the session outlives a call (so "allow for this session" means something)
        self.lasting = lasting
        self.active: list[_Call] = []

    def session_kwargs(self) -> dict[str, Any]:
        return {
            "approver": self.approve,
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "list_roots_callback": self.list_roots,
        }

    @contextmanager
    def calling(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: Params,
        backend: str | None = None,
        held: HeldCall | None = None,
    ) -> Iterator[_Call]:
        """While the client's request ``ctx`` runs (on the backend MCP server ``backend``, if it
        is one's tool or prompt; ``held``: a 2026-07-28 request whose backend's requests become
        input requests). The runtime's own callbacks called in this task answer for this link."""
        entry = _Call(ctx, params, backend, held)
        self.active.append(entry)
        token = _running.set(self)
        try:
            yield entry
        finally:
            _running.reset(token)
            self.active.remove(entry)

    def _call_on(self, backend: str | None) -> tuple[_Call | None, str]:
        """The client's call a request of ``backend`` belongs to: its most recent call running
        on that backend; or why there is none."""
        if not self.active:
            return None, "no client's tool call is running"
        if backend is None:
            return None, "the gateway could not tell which MCP server sent the request"
        mine = [call for call in self.active if call.backend == backend]
        if not mine:
            return None, (
                f"the client has no tool call running on MCP server {backend} (a request belongs to the call "
                "on the server that sends it, never to a call on another server)"
            )
        return mine[-1], ""

    def _current(self, capability: str, backend: str | None) -> tuple[_Call | None, str]:
        """The client's call a request of ``backend`` for ``capability`` goes to, or why none can take it."""
        call, why = self._call_on(backend)
        if call is None:
            return None, why
        ctx = call.ctx
        caps = ctx.session.client_capabilities
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if caps is None or getattr(caps, capability, None) is None:
                call.missing.add(capability)  # the call fails with -32021 (see missing_capability)
                return None, f"the client did not declare the {capability} capability"
            if call.held is None:
                return None, "the client speaks 2026-07-28, where a server may not send requests"
            return call, ""
        if not ctx.session.can_send_request:  # first: a stateless request knows no capabilities
            return None, "this connection cannot carry a request to the client (stateless HTTP)"
        if caps is None or getattr(caps, capability, None) is None:
            return None, f"the client did not declare the {capability} capability"
        return call, ""

    async def _relay(
        self, capability: str, context: Any, request: types.ServerRequest, result_type: type[R]
    ) -> R | types.ErrorData:
        """``request`` sent to the client on its call running on the backend that asked, or why it cannot be."""
        call, why = self._current(capability, backend_of_request(self.runtime, context))
        if call is None:
            return _unavailable(capability, why)
        return await _ask(call, capability, request, result_type, context)

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        """The session's approver (a backend's sampling or elicitation request, a plugin's
        own act during a call): the client of the running call is asked, on the call running
        on that backend for a backend's request (on a held 2026-07-28 call, as one more
        input request). A backend's request that could not reach the client anyway is
        refused unasked, with the reason (``NotAskable``: the backend's error names it)."""
        if not self.active:
            return ApprovalAnswer.DENY
        call = self.active[-1]
        kind = _host_request_kind(request)
        if kind is not None:
            found, why = self._current(kind, backend_of_tool(request.tool.provider))
            if found is None:
                raise NotAskable(why)
            call = found
            if call.held is not None:
                return await self._approve_held(call, call.held, request)
        return await ClientApprover(call.ctx, call.params, lasting=self.lasting)(request)

    async def _approve_held(self, call: _Call, held: HeldCall, request: ApprovalRequest) -> ApprovalAnswer:
        """kairox's question about a backend's request, asked on a held 2026-07-28 call: the
        same form as the handshake path, as an input request of the call's next round."""
        caps = call.ctx.session.client_capabilities
        if caps is None or caps.elicitation is None:
            raise NotAskable("the client did not declare the elicitation capability")
        schema = APPROVAL_SCHEMA if self.lasting else ONE_CALL_SCHEMA
        form = types.ElicitRequestFormParams(
            message=message_for(request, lasting=self.lasting), requested_schema=schema
        )
        answer = await held.ask("approval", types.ElicitRequest(params=form), types.ElicitResult)
        if isinstance(answer, types.ErrorData):
            raise NotAskable(answer.message)
        return answer_of(answer, schema)

    async def sampling(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        return await self._relay(
            "sampling", context, types.CreateMessageRequest(params=params), types.CreateMessageResult
        )

    async def elicitation(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return await self._relay("elicitation", context, types.ElicitRequest(params=params), types.ElicitResult)

    async def list_roots(self, context: Any) -> types.ListRootsResult | types.ErrorData:
        """The client's roots when it declared the capability and can be asked (on its call, as
        sampling is), a remote client's only those inside the gateway's roots
        (:func:`contained_roots`); else the gateway's roots. A client without the capability
        is not asked, and its call does not fail for it: the gateway's roots answer."""
        backend = backend_of_request(self.runtime, context)
        call, _why = self._call_on(backend)
        caps = call.ctx.session.client_capabilities if call is not None else None
        if call is None or caps is None or caps.roots is None:
            return gateway_roots(self.runtime)
        call, _why = self._current("roots", backend)
        if call is None:  # stateless handshake-era HTTP, or a 2026-07-28 call not held
            return gateway_roots(self.runtime)
        answer = await _ask(call, "roots", types.ListRootsRequest(), types.ListRootsResult, context)
        if isinstance(answer, types.ErrorData) or not self.remote:
            return answer
        return contained_roots(answer, self.runtime, backend)
