"""Ask -> the connected client: an ``elicitation/create`` form (approve once, for this
session, or deny), or, when the client cannot be asked, a refusal that says how to allow.
Where the kairox session lasts one request (``--stateless``, 2026-07-28 over HTTP) the
form offers this call or deny only, and says why.

Handshake-era connections (protocol 2025-11-25 and older) get a server-to-client
``elicitation/create`` request tied to the ``tools/call``. On 2026-07-28 connections a
server may not send requests; the call returns ``InputRequiredResult`` carrying the same
form, and the client retries the call with the answer (``input_responses``). The answer
is keyed by a digest of the tool and its arguments, so it approves only that call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kairox import ApprovalAnswer, ApprovalRequest

if TYPE_CHECKING:
    from mcp.server import ServerRequestContext

__all__ = [
    "APPROVAL_SCHEMA",
    "ONE_CALL_SCHEMA",
    "ClientApprover",
    "InputNeeded",
    "NotAskable",
    "UnofferedAnswer",
    "answer_of",
    "approval_key",
    "refusal",
]


def _form(*choices: tuple[str, str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Allow this tool call?",
                "oneOf": [{"const": value, "title": title} for value, title in choices],
            }
        },
        "required": ["decision"],
    }


#: the form a client shows: one choice
APPROVAL_SCHEMA: dict[str, Any] = _form(("once", "Allow once"), ("session", "Allow for this session"), ("deny", "Deny"))
#: the form where the kairox session lasts one call (``--stateless``, 2026-07-28 over
#: HTTP): "for this session" would mean this call only, so it is not offered
ONE_CALL_SCHEMA: dict[str, Any] = _form(("once", "Allow this call"), ("deny", "Deny"))
#: what the question adds when the session lasts one call
ONE_CALL_NOTE = (
    "\n(this gateway keeps no session between requests here, so an approval covers this one call; "
    "to allow it every time, add an allow rule under [policy.rules])"
)

_ANSWERS = {"once": ApprovalAnswer.ALLOW_ONCE, "session": ApprovalAnswer.ALLOW_SESSION}


class NotAskable(Exception):
    """The client cannot be asked (it did not declare elicitation, or the connection
    cannot carry a server request); ``str()`` says which."""


class UnofferedAnswer(Exception):
    """The client accepted the form with a choice the form did not offer (``"session"``
    where the session lasts one call): a deny; ``str()`` says what was answered and offered."""


class InputNeeded(Exception):
    """A 2026-07-28 call must return ``InputRequiredResult`` with this request."""

    def __init__(self, key: str, request: types.ElicitRequest) -> None:
        super().__init__(key)
        self.key = key
        self.request = request


def offered(schema: Mapping[str, Any]) -> list[str]:
    """The choices a form (:data:`APPROVAL_SCHEMA`, :data:`ONE_CALL_SCHEMA`) offers."""
    return [choice["const"] for choice in schema["properties"]["decision"]["oneOf"]]


def answer_of(result: Any, schema: Mapping[str, Any] = APPROVAL_SCHEMA) -> ApprovalAnswer:
    """The approval an ``ElicitResult`` to the form ``schema`` gives: only an accepted form
    with ``once`` or ``session``, and only when ``schema`` offered that choice, allows;
    decline, cancel, anything else (or a malformed reply) denies. An accepted choice the
    form did not offer raises :class:`UnofferedAnswer` (a deny that says why)."""
    if not isinstance(result, types.ElicitResult) or result.action != "accept":
        return ApprovalAnswer.DENY
    content = result.content if isinstance(result.content, Mapping) else {}
    decision = content.get("decision")
    if not isinstance(decision, str):
        return ApprovalAnswer.DENY
    choices = offered(schema)
    if decision not in choices:
        shown = decision if len(decision) <= 40 else decision[:40] + "..."
        raise UnofferedAnswer(
            f"the client answered {shown!r}, which the form did not offer (it offered {', '.join(choices)}); "
            "an answer the form did not offer is a deny"
        )
    return _ANSWERS.get(decision, ApprovalAnswer.DENY)


def approval_key(request: ApprovalRequest) -> str:
    """The ``input_requests`` key of one call's approval: the tool and its arguments, digested."""
    text = json.dumps([request.tool.id, request.arguments], sort_keys=True, default=str, ensure_ascii=False)
    return "kairox-approval-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def message_for(request: ApprovalRequest, *, lasting: bool = True, principal: str | None = None) -> str:
    args = json.dumps(request.arguments, ensure_ascii=False, default=str)
    if len(args) > 400:
        args = args[:400] + "..."
    name = request.tool.exported_name or request.tool.id
    text = f"kairox: {name} ({request.tool.id}) asks for approval: {request.reason}\narguments: {args}"
    if principal is not None:
        text += f"\ncalled as: {principal}"
    return text if lasting else text + ONE_CALL_NOTE


def refusal(request_tool: str, exported: str, reason: str, why: str, user_config: str) -> str:
    """The text of a refused Ask: what needed approval, why nobody could be asked, how to allow it.

    ``user_config``: the user's ``kairox.toml`` the gateway reads (``$KAIROX_HOME``'s, which
    need not be ``~/.kairox``), where an allow rule always counts; the workspace's may not
    (never for an ``execute`` tool, nor over a rule of the user's)."""
    return (
        f"not run: {exported} ({request_tool}) needs approval ({reason}), and {why}. "
        f'To allow it without asking, add `"{request_tool}" = "allow"` under [policy.rules] in '
        f"{user_config} (your own config; an allow rule in the workspace's config never applies to an "
        "execute tool), or connect with a client that supports elicitation."
    )


#: why a stateless request cannot ask (and what an approval would have been worth)
NO_BACK_CHANNEL = (
    "this connection cannot carry a request to the client (stateless HTTP: no session between requests, "
    "so an approval, even one 'for this session', could cover only this one call)"
)


class ClientApprover:
    """The approver of one ``tools/call`` (or ``prompts/get`` of a backend's prompt): asks the client that made it.

    ``lasting``: the kairox session outlives the call (a connection's or the process's),
    so "allow for this session" is offered; otherwise the form offers this call only and
    says so."""

    def __init__(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.CallToolRequestParams | types.GetPromptRequestParams,
        *,
        lasting: bool = True,
        principal: str | None = None,
    ) -> None:
        self.ctx = ctx
        self.params = params
        self.lasting = lasting
        #: the principal the call runs as (named in the question)
        self.principal = principal
        #: what the policy asked about (set when the approver is called)
        self.asked: ApprovalRequest | None = None

    @property
    def modern(self) -> bool:
        return self.ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

    def _declared(self) -> bool:
        caps = self.ctx.session.client_capabilities
        return caps is not None and caps.elicitation is not None

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.asked = request
        message = message_for(request, lasting=self.lasting, principal=self.principal)
        schema = APPROVAL_SCHEMA if self.lasting else ONE_CALL_SCHEMA
        if self.modern:
            # first: an answer from a client that cannot be asked is no answer (it was not asked)
            if not self._declared():
                raise NotAskable("the client did not declare the elicitation capability")
            key = approval_key(request)
            responses = self.params.input_responses or {}
            if key in responses:
                return answer_of(responses[key], schema)
            form = types.ElicitRequestFormParams(message=message, requested_schema=schema)
            raise InputNeeded(key, types.ElicitRequest(params=form))
        if not self.ctx.session.can_send_request:  # first: a stateless request knows no capabilities
            raise NotAskable(NO_BACK_CHANNEL)
        if not self._declared():
            raise NotAskable("the client did not declare the elicitation capability")
        result = await self.ctx.session.elicit_form(message, schema, related_request_id=self.ctx.request_id)
        return answer_of(result, schema)
