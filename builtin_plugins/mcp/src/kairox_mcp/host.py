"""The host side of one MCP connection: what a server asks the client.

A server may ask the client to sample the model (``sampling/createMessage``), to ask
the user (``elicitation/create``, form or URL mode) and for its roots (``roots/list``).
:class:`HostBridge` answers these for one server with the runtime's host callbacks
(``Runtime.open(sampling_callback=..., elicitation_callback=..., list_roots_callback=...)``,
the MCP SDK's own signatures), or with a session's when the request arrives while a
tool call of exactly one session runs on that server.

Sampling and elicitation pass the policy first, like a tool call that asks
("MCP server X wants to ask the model"), as the per-server ``sampling`` /
``elicitation`` setting says (``ask``, ``allow``, ``deny``). Roots default to the
workspace and the policy's writable roots as ``file://`` URIs.

This module imports ``mcp``: only ``kairox_mcp.client`` imports it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import mcp.types as types
from mcp.client.session import ClientRequestContext

from kairox import Capability, Domain, ToolSpec
from kairox.errors import PolicyDenied
from kairox.ext import current_session, terminal_safe

from .config import McpServerConfig

if TYPE_CHECKING:
    from kairox import Runtime, Session

__all__ = ["USER_REJECTED", "HostBridge", "host_request_spec", "with_defaults"]

logger = logging.getLogger(__name__)

#: the caller of the request running in this task (set by :meth:`HostBridge.calling`): a
#: 2026-07-28 server's ``InputRequiredResult`` requests are answered in its caller's task
#: (the SDK's ``Client`` drives the rounds inline), so they are that caller's for certain;
#: a handshake-era server's requests arrive on the connection's own task, where it is unset
_caller: ContextVar[tuple[Session | None] | None] = ContextVar("kairox_mcp_caller", default=None)

#: the error code the MCP spec suggests for "the user rejected the sampling request"
USER_REJECTED = -1
#: characters of a server's message shown in an approval reason
EXCERPT = 200
#: how many messages' texts a sampling approval question quotes (the newest)
MAX_MESSAGES_SHOWN = 4


def host_request_spec(server: str, kind: str) -> ToolSpec:
    """The :class:`~kairox.ToolSpec` a server's ``sampling`` / ``elicitation`` request is
    decided as (id ``mcp.<server>.<kind>``: a ``[policy.rules]`` entry may name it)."""
    if kind == "sampling":
        description = f"MCP server {server} asks the host to sample the model (sampling/createMessage)"
        domain = Domain.NETWORK
    else:
        description = f"MCP server {server} asks the user a question (elicitation/create)"
        domain = Domain.LOCAL
    return ToolSpec(
        id=f"mcp.{server}.{kind}",
        description=description,
        domain=domain,
        capability=Capability.EXECUTE,
        provider=f"mcp:{server}",
    )


def _excerpt(text: str) -> str:
    """``text`` on one line, cut to :data:`EXCERPT` characters (saying how long it was),
    with every control and bidi character shown, not obeyed: a server's words in an
    approval question cannot clear the screen, forge a line or reorder one."""
    text = " ".join(text.split())
    if len(text) > EXCERPT:  # its start and its end: what follows padding is seen too
        half = EXCERPT // 2
        text = f"{text[:half]} ... {text[-half:]} ({len(text)} characters in all)"
    return terminal_safe(text)


def _sampling_text(params: types.CreateMessageRequestParams) -> str:
    """What a ``sampling/createMessage`` would send, for the approval question: every
    message's text (as one excerpt), how many blocks are not text, the system prompt,
    ``includeContext`` and the tools offered, so nothing sent is left out of what is asked."""
    texts: list[str] = []
    other = 0
    for message in params.messages:
        content = message.content
        blocks = content if isinstance(content, list) else [content]
        words = [b.text for b in blocks if isinstance(b, types.TextContent)]
        other += len(blocks) - len(words)
        if words:
            texts.append(f'"{_excerpt(" ".join(words))}"')
    shown = texts[-MAX_MESSAGES_SHOWN:]  # the newest, each excerpted on its own
    parts = [" / ".join(shown)] if shown else []
    if len(params.messages) > 1:
        parts.append(
            f"{len(params.messages)} messages" + (f", the last {len(shown)} shown" if len(shown) < len(texts) else "")
        )
    if other:
        parts.append(f"{other} block{'s' if other != 1 else ''} that are not text")
    if params.system_prompt:
        parts.append(f'system prompt: "{_excerpt(params.system_prompt)}"')
    include = getattr(params, "include_context", None)
    if include and include != "none":
        parts.append(f"includeContext: {terminal_safe(str(include))} (what the model has seen of other servers)")
    tools = getattr(params, "tools", None)
    if tools:
        parts.append("tools: " + _excerpt(", ".join(str(getattr(t, "name", t)) for t in tools)))
    return "; ".join(parts)


def with_defaults(
    params: types.ElicitRequestParams, answer: types.ElicitResult | types.ErrorData
) -> types.ElicitResult | types.ErrorData:
    """An accepted form's content, with the requested schema's ``default`` for each field the
    host left out (SEP-1034: the client applies the defaults, so a host answers only what the
    user typed). A field the host answered keeps its value; a default that is not a valid
    answer value is left out."""
    if not isinstance(answer, types.ElicitResult) or answer.action != "accept":
        return answer
    if not isinstance(params, types.ElicitRequestFormParams):
        return answer
    properties = params.requested_schema.get("properties")
    if not isinstance(properties, dict):
        return answer
    content = dict(answer.content or {})
    for name, prop in properties.items():
        if name in content or not isinstance(prop, dict) or "default" not in prop:
            continue
        try:  # the answer's value types (string, number, boolean, list of strings)
            types.ElicitResult.model_validate({"action": "accept", "content": {name: prop["default"]}})
        except ValueError:
            continue
        content[name] = prop["default"]
    return answer.model_copy(update={"content": content})


class HostBridge:
    """Answers one server's requests; ``kwargs()`` are the ``ClientSession`` callbacks.

    ``calls`` holds the session of every request running on the connection
    (``kairox.ext.current_session()`` of its caller, see :meth:`calling`). An input request
    of a 2026-07-28 server's ``InputRequiredResult`` goes to the callbacks of the session
    whose request it answers; a request a handshake-era server sends while the calls
    running are one session's goes to that session's callbacks; otherwise (no call, or
    calls of several sessions: the request cannot be told apart) to the runtime's.
    """

    def __init__(self, server: str, config: McpServerConfig | None, runtime: Runtime | None) -> None:
        self.server = server
        self.config = config
        self.runtime = runtime
        self.calls: list[Session | None] = []

    # -- the ClientSession's callbacks ------------------------------------------------
    def kwargs(self) -> dict[str, Any]:
        """``sampling_callback`` / ``elicitation_callback`` exactly when the runtime has that
        callback (the SDK declares the capability when one is given); roots always."""
        out: dict[str, Any] = {"list_roots_callback": self.list_roots}
        rt = self.runtime
        if rt is not None and rt.sampling_callback is not None:
            out["sampling_callback"] = self.sampling
        if rt is not None and rt.elicitation_callback is not None:
            out["elicitation_callback"] = self.elicitation
        return out

    @contextmanager
    def calling(self) -> Iterator[None]:
        """Around one request to the server: records its caller's session (``current_session()``)."""
        caller = current_session()
        self.calls.append(caller)
        token = _caller.set((caller,))
        try:
            yield
        finally:
            _caller.reset(token)
            self.calls.remove(caller)

    def session(self) -> Session | None:
        """The session a request of the server belongs to: the caller's, for an input request
        answered in its caller's task; else the one session whose calls are running now; else
        ``None`` (the runtime's callbacks)."""
        mine = _caller.get()
        if mine is not None:
            return mine[0]
        sessions = {id(s): s for s in self.calls if s is not None}
        if len(sessions) == 1 and None not in self.calls:
            return next(iter(sessions.values()))
        return None

    def _callback(self, kind: str, session: Session | None) -> Callable[..., Awaitable[Any]] | None:
        attr = f"{kind}_callback"
        mine = getattr(session, attr, None) if session is not None else None
        return mine or (getattr(self.runtime, attr, None) if self.runtime is not None else None)

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        session = self.session()
        callback = self._callback("sampling", session)
        if callback is None:  # pragma: no cover - the capability is declared only with one
            return types.ErrorData(code=types.INVALID_REQUEST, message="Sampling not supported")
        text = _sampling_text(params)
        reason = f"MCP server {self.server} wants to ask the model" + (f": {text}" if text else "")
        refused = await self._decide("sampling", params, session, reason)
        if refused is not None:
            return types.ErrorData(code=USER_REJECTED, message=refused)
        answer: types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData = await self._run(
            "sampling", callback, context, params
        )
        return answer

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        session = self.session()
        callback = self._callback("elicitation", session)
        if callback is None:  # pragma: no cover - the capability is declared only with one
            return types.ErrorData(code=types.INVALID_REQUEST, message="Elicitation not supported")
        if isinstance(params, types.ElicitRequestURLParams):
            reason = (
                f"MCP server {self.server} wants you to open {terminal_safe(params.url)}: {_excerpt(params.message)}"
            )
        else:
            reason = f"MCP server {self.server} wants to ask you: {_excerpt(params.message)}"
        refused = await self._decide("elicitation", params, session, reason)
        if refused is not None:
            logger.info("MCP server %s: elicitation declined: %s", self.server, refused)
            return types.ElicitResult(action="decline")
        answer: types.ElicitResult | types.ErrorData = await self._run("elicitation", callback, context, params)
        return with_defaults(params, answer)

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        session = self.session()
        callback = self._callback("list_roots", session)
        if callback is not None:
            answer: types.ListRootsResult | types.ErrorData = await self._run("list_roots", callback, context)
            return answer
        roots = self.runtime.roots() if self.runtime is not None else ()
        return types.ListRootsResult.model_validate(
            {"roots": [{"uri": p.as_uri(), "name": p.name or str(p)} for p in roots]}
        )

    # -- policy ---------------------------------------------------------------------------
    async def _decide(self, kind: str, params: Any, session: Session | None, reason: str) -> str | None:
        """``None`` when the request may go on, else why not."""
        mode = getattr(self.config, kind, "ask")
        if mode == "deny":
            return f'{kind} is denied for MCP server {self.server} ({kind} = "deny")'
        if mode == "allow" or self.runtime is None:
            return None
        try:
            arguments = params.model_dump(mode="json", by_alias=True, exclude_none=True)
            json.dumps(arguments)
        except Exception:  # pragma: no cover - the SDK's models always dump
            arguments = {}
        try:
            await self.runtime.authorize(
                host_request_spec(self.server, kind), arguments, session=session, reason=reason
            )
        except PolicyDenied as exc:
            return str(exc)
        return None

    async def _run(self, kind: str, callback: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        try:
            return await callback(*args)
        except Exception as exc:
            logger.warning("MCP server %s: the host's %s callback failed", self.server, kind, exc_info=True)
            return types.ErrorData(
                code=types.INTERNAL_ERROR, message=f"the host's {kind} callback failed: {type(exc).__name__}: {exc}"
            )
