"""A backend server's requests to its client (sampling, elicitation, roots), forwarded to
the gateway's client.

Each kairox session of the gateway gets a :class:`ClientLink` as its host callbacks
(``rt.session(sampling_callback=..., ...)``, the MCP SDK's signatures): kairox-mcp hands a
backend's request that arrives during one of the session's tool calls to them, and the link
sends it to the client on that call's request (``related_request_id``), if the client
declared the capability. The link is also the session's approver: kairox asks before it lets
a backend sample or elicit (``mcp.<server>.sampling`` in ``[policy.rules]``), and that
question goes to the client too.

On 2026-07-28 connections, stateless HTTP and with clients that did not declare the
capability, a request cannot reach the client: the backend gets an error saying so.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kairox import ApprovalAnswer, ApprovalRequest, Runtime

from .approval import ClientApprover

__all__ = ["ClientLink", "refuse_elicitation", "refuse_sampling"]

R = TypeVar("R", bound=types.Result)


def _unavailable(kind: str, why: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=f"{kind} is not available through the gateway: {why}")


async def _send(ctx: ServerRequestContext[Any, Any], request: types.ServerRequest, result_type: type[R]) -> R:
    """``request`` sent to the client as part of the call that ``ctx`` answers."""
    return await ctx.session.send_request(
        request, result_type, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
    )


async def refuse_sampling(context: Any, params: Any) -> types.ErrorData:
    """The runtime's own callback (so backends see the capability): outside a client's call."""
    return _unavailable("sampling", "no client's tool call is running")


async def refuse_elicitation(context: Any, params: Any) -> types.ErrorData:
    return _unavailable("elicitation", "no client's tool call is running")


class ClientLink:
    """The host callbacks and approver of one kairox session: its client's running calls."""

    def __init__(self, runtime: Runtime, *, forward_roots: bool) -> None:
        self.runtime = runtime
        self.forward_roots = forward_roots
        self.active: list[tuple[ServerRequestContext[Any, Any], types.CallToolRequestParams]] = []

    def session_kwargs(self) -> dict[str, Any]:
        return {
            "approver": self.approve,
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "list_roots_callback": self.list_roots,
        }

    @contextmanager
    def calling(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Iterator[None]:
        entry = (ctx, params)
        self.active.append(entry)
        try:
            yield
        finally:
            self.active.remove(entry)

    def _current(self, capability: str) -> tuple[ServerRequestContext[Any, Any] | None, str]:
        if not self.active:
            return None, "no client's tool call is running"
        ctx = self.active[-1][0]
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None, "the client speaks 2026-07-28, where a server may not send requests"
        caps = ctx.session.client_capabilities
        if caps is None or getattr(caps, capability, None) is None:
            return None, f"the client did not declare the {capability} capability"
        if not ctx.session.can_send_request:
            return None, "this connection cannot carry a request to the client (stateless HTTP)"
        return ctx, ""

    async def _relay(self, capability: str, request: types.ServerRequest, result_type: type[R]) -> R | types.ErrorData:
        """``request`` sent to the client on its running call, or why it cannot be."""
        ctx, why = self._current(capability)
        if ctx is None:
            return _unavailable(capability, why)
        return await _send(ctx, request, result_type)

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        if not self.active:
            return ApprovalAnswer.DENY
        ctx, params = self.active[-1]
        return await ClientApprover(ctx, params)(request)

    async def sampling(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        return await self._relay("sampling", types.CreateMessageRequest(params=params), types.CreateMessageResult)

    async def elicitation(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return await self._relay("elicitation", types.ElicitRequest(params=params), types.ElicitResult)

    async def list_roots(self, context: Any) -> types.ListRootsResult | types.ErrorData:
        """The client's roots when it is on this machine (stdio) and declared them, else the
        workspace's (kairox's default): a remote client's paths mean nothing here."""
        ctx, _why = self._current("roots") if self.forward_roots else (None, "")
        if ctx is not None:
            return await _send(ctx, types.ListRootsRequest(), types.ListRootsResult)
        return types.ListRootsResult.model_validate(
            {"roots": [{"uri": p.as_uri(), "name": p.name or str(p)} for p in self.runtime.roots()]}
        )
