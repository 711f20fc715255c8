"""Ask -> the connected client: an ``elicitation/create`` form (approve once, for this
session, or deny), or, when the client cannot be asked, a refusal that says how to allow.

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

__all__ = ["APPROVAL_SCHEMA", "ClientApprover", "InputNeeded", "NotAskable", "answer_of", "approval_key", "refusal"]

#: the form a client shows: one choice
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Allow this tool call?",
            "oneOf": [
                {"const": "once", "title": "Allow once"},
                {"const": "session", "title": "Allow for this session"},
                {"const": "deny", "title": "Deny"},
            ],
        }
    },
    "required": ["decision"],
}

_ANSWERS = {"once": ApprovalAnswer.ALLOW_ONCE, "session": ApprovalAnswer.ALLOW_SESSION}


class NotAskable(Exception):
    """The client cannot be asked (it did not declare elicitation, or the connection
    cannot carry a server request); ``str()`` says which."""


class InputNeeded(Exception):
    """A 2026-07-28 call must return ``InputRequiredResult`` with this request."""

    def __init__(self, key: str, request: types.ElicitRequest) -> None:
        super().__init__(key)
        self.key = key
        self.request = request


def answer_of(result: Any) -> ApprovalAnswer:
    """The approval an ``ElicitResult`` gives: only an accepted form with ``once`` or
    ``session`` allows; decline, cancel, anything else (or a malformed reply) denies."""
    if not isinstance(result, types.ElicitResult) or result.action != "accept":
        return ApprovalAnswer.DENY
    content = result.content if isinstance(result.content, Mapping) else {}
    decision = content.get("decision")
    return _ANSWERS.get(decision, ApprovalAnswer.DENY) if isinstance(decision, str) else ApprovalAnswer.DENY


def approval_key(request: ApprovalRequest) -> str:
    """The ``input_requests`` key of one call's approval: the tool and its arguments, digested."""
    text = json.dumps([request.tool.id, request.arguments], sort_keys=True, default=str, ensure_ascii=False)
    return "kairox-approval-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def message_for(request: ApprovalRequest) -> str:
    args = json.dumps(request.arguments, ensure_ascii=False, default=str)
    if len(args) > 400:
        args = args[:400] + "..."
    name = request.tool.exported_name or request.tool.id
    return f"kairox: {name} ({request.tool.id}) asks for approval: {request.reason}\narguments: {args}"


def refusal(request_tool: str, exported: str, reason: str, why: str) -> str:
    """The text of a refused Ask: what needed approval, why nobody could be asked, how to allow it."""
    return (
        f"not run: {exported} ({request_tool}) needs approval ({reason}), and {why}. "
        f'To allow it without asking, add `"{request_tool}" = "allow"` under [policy.rules] in '
        "~/.kairox/kairox.toml (your own config; a workspace can add allow rules only once trusted), "
        "or connect with a client that supports elicitation."
    )


class ClientApprover:
    """The approver of one ``tools/call``: asks the client that made it."""

    def __init__(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> None:
        self.ctx = ctx
        self.params = params
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
        message = message_for(request)
        if self.modern:
            key = approval_key(request)
            responses = self.params.input_responses or {}
            if key in responses:
                return answer_of(responses[key])
            if not self._declared():
                raise NotAskable("the client did not declare the elicitation capability")
            form = types.ElicitRequestFormParams(message=message, requested_schema=APPROVAL_SCHEMA)
            raise InputNeeded(key, types.ElicitRequest(params=form))
        if not self._declared():
            raise NotAskable("the client did not declare the elicitation capability")
        if not self.ctx.session.can_send_request:
            raise NotAskable("this connection cannot carry a request to the client (stateless HTTP)")
        result = await self.ctx.session.elicit_form(message, APPROVAL_SCHEMA, related_request_id=self.ctx.request_id)
        return answer_of(result)
