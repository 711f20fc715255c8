"""Held calls: a 2026-07-28 client's ``tools/call`` (or ``prompts/get`` of a backend's prompt)
whose backend server asked for input.

On 2026-07-28 a server may not send requests to its client. When a backend server asks
the gateway for sampling, elicitation or roots during such a client's call, the gateway
keeps that call running in this process (:class:`HeldCall`), answers the client's request
with an ``InputRequiredResult`` that carries the backend's request (under the backend's
own key where it gave one: a 2026-07-28 backend's ``InputRequiredResult`` key) and a
``requestState`` token, and waits. The client retries the call with its answers
(``inputResponses``) and the token; the answers go to the waiting backend request, and the
retry waits for the next request (another ``InputRequiredResult``, under a new token) or
the call's result.

Bounded (:class:`HeldCalls`): at most ``[serve] max_held_calls`` calls are held at once
(the backend's request that would hold one more is refused, with the reason); a held call
whose client does not come back within ``[serve] held_call_timeout`` seconds is cancelled
and dropped. A token is used once, names one call of one client (the same stdio process,
HTTP session or bearer credential) and one tool and arguments; anything else is refused
with a JSON-RPC error (the gateway raises it), which is also what a replica that does not
hold the call answers, unless ``[serve.state]`` lets it relay the retry to the replica
that does (:mod:`kairox_serve.state`): the call itself never moves, it is a live backend
call in one process.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import mcp_types as types
from pydantic import ValidationError

__all__ = ["EXPIRED", "HeldCall", "HeldCalls", "fingerprint", "minted"]

R = TypeVar("R", bound=types.Result)

#: the error a retry with an unknown, used or expired ``requestState`` gets
EXPIRED = "the call's state expired or is held by another replica; retry the call"


#: the random bytes of a token (``secrets.token_urlsafe``: 43 characters of base64url)
TOKEN_BYTES = 32
_TOKEN_LENGTH = len(secrets.token_urlsafe(TOKEN_BYTES))
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def minted(state: str) -> bool:
    """Whether ``state`` has the shape of a token the gateway mints: what has not is refused
    before it is looked up anywhere (a retry is not counted by ``[serve.limits]``, so a
    made-up state, of any size, must cost nothing beyond its refusal)."""
    return len(state) == _TOKEN_LENGTH and _TOKEN_CHARS.issuperset(state)


def fingerprint(method: str, params: types.CallToolRequestParams | types.GetPromptRequestParams) -> str:
    """The method, tool (or prompt) and arguments of a request, digested (a retry must repeat them)."""
    text = json.dumps([method, params.name, params.arguments or {}], sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class _Ask:
    """One backend request (or kairox's approval of one) waiting for the client's answer."""

    __slots__ = ("answer", "answered", "request", "since")

    def __init__(self, request: types.InputRequest) -> None:
        self.request = request
        self.answered = anyio.Event()
        self.answer: types.InputResponse | None = None
        #: when it was put to the client: ``held_call_timeout`` counts from here, whatever
        #: retries come without its answer
        self.since = anyio.current_time()


class HeldCall:
    """One client's call running in the gateway's task group while its backend may ask.

    ``owner``: who may retry it; ``print``: its tool and arguments (:func:`fingerprint`).
    The retry that waits for it is *attached* (:meth:`attach`): meanwhile the call's
    progress goes to that request and no expiry runs."""

    def __init__(
        self,
        table: HeldCalls,
        owner: object,
        print_: str,
        given: dict[str, types.InputResponse] | None = None,
    ) -> None:
        self.table = table
        self.owner = owner
        self.print = print_
        self.token: str | None = None
        #: counted against ``max_held_calls`` (from its first request to the client on)
        self.registered = False
        self.scope = anyio.CancelScope()
        self.outcome: Any = None
        self.finished = False
        #: the request waiting for this call (its progress goes there), if one is
        self.ctx: Any = None
        self._asks: dict[str, _Ask] = {}
        #: answers the client sent with its first request, before it was asked anything: a
        #: backend's input request under the same key takes its answer from here
        self._given = dict(given or {})
        self._n = 0
        self._changed = anyio.Event()
        self.idle = anyio.Event()
        self.back = anyio.Event()

    # -- the call's side -----------------------------------------------------------
    async def ask(
        self, kind: str, request: types.InputRequest, result_type: type[R], key: str | None = None
    ) -> R | types.ErrorData:
        """``request`` to the client (an input request of the next ``InputRequiredResult``),
        and its answer, checked to be a ``result_type``; or why it cannot be asked.

        ``key``: the backend's own key for the request (an input request of its
        ``InputRequiredResult``), kept so the client sees the backend's request as the backend
        made it; kairox's own questions (and a key already waiting) get a ``kairox-`` key."""
        answer: types.InputResponse | None
        if key is not None and key in self._given:  # answered before it was asked
            answer = self._given.pop(key)
        else:
            if not self.registered:
                refused = self.table.register(self)
                if refused is not None:
                    return types.ErrorData(code=types.INVALID_REQUEST, message=refused)
            self._n += 1
            if key is None or key in self._asks:
                key = f"kairox-{kind}-{self._n}"
            ask = self._asks[key] = _Ask(request)
            self._notify()
            try:
                await ask.answered.wait()
            finally:
                self._asks.pop(key, None)
            answer = ask.answer
        try:
            if isinstance(answer, result_type):
                return answer
            return result_type.model_validate(
                answer.model_dump(by_alias=True, exclude_none=True) if answer is not None else None
            )
        except ValidationError:
            return types.ErrorData(
                code=types.INVALID_PARAMS,
                message=f"the client's answer to the {kind} request is not a valid {result_type.__name__}",
            )

    def finish(self, outcome: Any) -> None:
        self.outcome = outcome
        self.finished = True
        self._notify()

    def _notify(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    # -- the client's side ---------------------------------------------------------
    def answer(self, responses: dict[str, types.InputResponse] | None) -> None:
        """Hand the answers of a retry to the requests they answer (by key); the rest stay unanswered."""
        for key, response in (responses or {}).items():
            ask = self._asks.get(key)
            if ask is not None and not ask.answered.is_set():
                ask.answer = response
                ask.answered.set()

    def unanswered(self) -> dict[str, types.InputRequest]:
        return {key: ask.request for key, ask in self._asks.items() if not ask.answered.is_set()}

    def waiting_since(self) -> float | None:
        """When the oldest request still unanswered was put to the client (``None``: none is)."""
        times = [ask.since for ask in self._asks.values() if not ask.answered.is_set()]
        return min(times) if times else None

    async def changed(self) -> None:
        """Wait until a new request to the client comes or the call ends."""
        await self._changed.wait()

    def attach(self, ctx: Any) -> None:
        self.ctx = ctx
        self.back.set()
        self.idle = anyio.Event()

    def detach(self) -> None:
        self.ctx = None
        self.back = anyio.Event()
        self.idle.set()

    def cancel(self) -> None:
        self.scope.cancel()
        self.table.drop(self)


class HeldCalls:
    """The held calls of one gateway: by token, at most ``limit``, each dropped after
    ``timeout`` seconds without its client."""

    def __init__(self, limit: int, timeout: float, describe: Callable[[int], str]) -> None:
        self.limit = limit
        self.timeout = timeout
        self._describe = describe
        self._by_token: dict[str, HeldCall] = {}
        self._held: set[HeldCall] = set()

    def __len__(self) -> int:
        return len(self._held)

    def register(self, call: HeldCall) -> str | None:
        """Count ``call`` as held; or why not (the table is full)."""
        if len(self._held) >= self.limit:
            return self._describe(len(self._held))
        self._held.add(call)
        call.registered = True
        return None

    def mint(self, call: HeldCall) -> str:
        """A fresh token for ``call`` (its previous one no longer works)."""
        if call.token is not None:
            self._by_token.pop(call.token, None)
        token = call.token = secrets.token_urlsafe(TOKEN_BYTES)
        self._by_token[token] = call
        return token

    def take(self, token: str, owner: object, print_: str) -> tuple[HeldCall | None, str]:
        """The call ``token`` names, taken out of the table for one retry; or why there is none."""
        call = self._by_token.get(token)
        if call is None:
            return None, EXPIRED
        if call.owner != owner:
            return None, "the call's state belongs to another client; retry the call"
        if call.print != print_:
            return (
                None,
                "the retry names another tool or prompt, or other arguments, than the held call; retry the call",
            )
        del self._by_token[token]
        call.token = None
        return call, ""

    def drop(self, call: HeldCall) -> None:
        if call.token is not None:
            self._by_token.pop(call.token, None)
            call.token = None
        self._held.discard(call)

    async def watch(self, call: HeldCall) -> None:
        """Cancel ``call`` when its client stays away ``timeout`` seconds after an
        ``InputRequiredResult``, or leaves a request unanswered that long however often it
        retries without the answer (a retry with no answers must not keep a call, and its
        backend, held for ever); runs beside the call."""
        while True:
            idle = call.idle
            await idle.wait()
            back = call.back
            since = call.waiting_since()
            left = self.timeout if since is None else since + self.timeout - anyio.current_time()
            with anyio.move_on_after(max(left, 0.0)):
                await back.wait()
            if not back.is_set():
                call.cancel()
                return
