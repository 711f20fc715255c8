"""What the dashboard pushes to its pages: one hub of server-sent messages, the approval
questions the policy asks, and install progress.

Every message is ``(name, JSON text)``; a page's ``EventSource`` gets ``status`` (the
pills), ``trace`` (one runtime event), ``approval`` / ``approval-done``, ``install`` (a
step of an install job), ``reload`` (the runtime was reopened), ``reload-failed`` and
``skills`` (skill files changed on disk and were scanned again).
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from kairox import ApprovalAnswer, ApprovalRequest, Event, ToolResult
from kairox.ext import redact
from kairox_catalog.progress import Progress, Step
from kairox_cli import mask_secrets

from .watch import redact_record

__all__ = ["Approvals", "Hub", "JobProgress", "Message", "call_shown", "event_message", "server_of"]

logger = logging.getLogger(__name__)

Message = tuple[str, str]
#: messages a slow page may fall behind before it misses some
CLIENT_BUFFER = 1000
#: trace messages kept for a page that opens later
RECENT = 500
#: characters of one argument, or of a result, that the trace keeps (the rest is counted)
SHOWN = 4000
#: arguments of one call that the trace keeps
SHOWN_ARGUMENTS = 50
#: fields that name the server, plugin or tool an event is about (the trace's filter)
_SUBJECT_FIELDS = ("server", "provider", "plugin", "tool", "skill")


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=str, allow_nan=False)


def server_of(data: Mapping[str, Any]) -> str:
    """The server (or provider, plugin, tool) an event's fields name, else ``""``."""
    for field in _SUBJECT_FIELDS:
        value = data.get(field)
        if isinstance(value, str) and value:
            return value
    return ""


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}\u2026 ({len(text) - SHOWN} more characters)"


def call_shown(arguments: Mapping[str, Any], result: ToolResult | None, secrets: list[str]) -> dict[str, Any]:
    """A call's arguments (each as JSON) and result (its text) as the trace shows them: the
    config's secret values masked wherever they occur (values, not words: prose reads as
    written), then each cut to :data:`SHOWN` characters (masked first, so a cut never
    leaves part of a secret)."""
    items = list(arguments.items())
    shown = {
        str(k): _cut(v if isinstance(v, str) else _dumps(_finite(v)))
        for k, v in mask_secrets(dict(items[:SHOWN_ARGUMENTS]), secrets).items()
    }
    data: dict[str, Any] = {"arguments": shown, "more_arguments": max(0, len(items) - SHOWN_ARGUMENTS)}
    if result is not None:
        data["result"] = _cut(mask_secrets(result.text, secrets))
        data["is_error"] = result.is_error
    return data


def event_message(event: Event, seq: int) -> dict[str, Any]:
    """A runtime event as the trace shows it: secrets redacted as ``kairox watch`` shows them
    (values hidden, prose as written: a hint's ``${NAME:-default}`` is no value)."""
    try:
        data = event.to_dict()
    except Exception as exc:  # a plugin's event that does not serialize: say so, keep going
        data = {"kind": event.kind, "error": f"cannot show this event: {type(exc).__name__}"}
    data = _finite(redact_record(data))
    return {"seq": seq, "time": time.time(), "kind": event.kind, "server": server_of(data), "data": data}


class Hub:
    """Fans messages out to every connected page; a page that falls behind loses messages
    (counted), never blocks the runtime."""

    def __init__(self) -> None:
        self._clients: list[MemoryObjectSendStream[Message]] = []
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT)
        self.dropped = 0
        self._seq = 0
        #: the current runtime's config secret values (:func:`kairox_cli.config_secrets`)
        self.secrets: list[str] = []

    def publish(self, name: str, data: Any) -> None:
        text = _dumps(data)
        for send in list(self._clients):
            try:
                send.send_nowait((name, text))
            except anyio.WouldBlock:
                self.dropped += 1
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    def publish_event(self, event: Event, call: dict[str, Any] | None = None) -> dict[str, Any]:
        """Trace ``event``; ``call``: what :func:`call_shown` made of its call (a row to expand)."""
        self._seq += 1
        message = event_message(event, self._seq)
        return self._trace(message, call)

    def publish_trace(self, kind: str, data: dict[str, Any], call: dict[str, Any] | None = None) -> dict[str, Any]:
        """Trace something of the dashboard's own that is no runtime event (an approval)."""
        self._seq += 1
        message = {"seq": self._seq, "time": time.time(), "kind": kind, "server": server_of(data), "data": data}
        return self._trace(message, call)

    def _trace(self, message: dict[str, Any], call: dict[str, Any] | None) -> dict[str, Any]:
        if call is not None:
            message["call"] = call
        self.recent.append(message)
        self.publish("trace", message)
        return message

    @property
    def clients(self) -> int:
        return len(self._clients)

    @asynccontextmanager
    async def client(self) -> AsyncIterator[MemoryObjectReceiveStream[Message]]:
        send, receive = anyio.create_memory_object_stream[Message](max_buffer_size=CLIENT_BUFFER)
        self._clients.append(send)
        try:
            async with receive:
                yield receive
        finally:
            self._clients.remove(send)
            send.close()


@attrs.define
class Pending:
    id: str
    data: dict[str, Any]
    done: anyio.Event = attrs.field(factory=anyio.Event)
    answer: str = "deny"
    answered_by: str = ""


class Approvals:
    """The runtime's approver: each question the policy asks goes to the pages (approve
    once / for the session / deny) and waits for the first answer; unanswered within
    ``timeout`` seconds it is a deny."""

    def __init__(self, hub: Hub, *, timeout: float = 600.0) -> None:
        self.hub = hub
        self.timeout = timeout
        self.pending: dict[str, Pending] = {}

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        item = Pending(
            secrets.token_hex(6),
            {
                "tool": request.tool.id,
                "reason": redact(request.reason),
                "arguments": redact(dict(request.arguments)),
                "capability": request.tool.capability.value,
                "domain": request.tool.domain.value,
            },
        )
        item.data["id"] = item.id
        self.pending[item.id] = item
        self.hub.publish("approval", item.data)
        # in the trace: what asked (the policy's or a hook's reason, for which session) and,
        # below, the answer and who gave it
        asked = {
            "tool": request.tool.id,
            "reason": mask_secrets(request.reason, self.hub.secrets),
            "session_id": request.session_id,
            "question": item.id,
        }
        call = call_shown(request.arguments, None, self.hub.secrets)
        self.hub.publish_trace("ApprovalAsked", asked, call)
        waiting = anyio.move_on_after(self.timeout)
        try:
            with waiting:
                await item.done.wait()
        finally:
            self.pending.pop(item.id, None)
            self.hub.publish("approval-done", {"id": item.id, "answer": item.answer})
            timed_out = f"nobody: no answer within {self.timeout:g} s"
            by = item.answered_by or (timed_out if waiting.cancelled_caught else "nobody: the call was cancelled")
            self.hub.publish_trace("ApprovalAnswered", {**asked, "answer": item.answer, "answered_by": by}, call)
        return ApprovalAnswer(item.answer)

    def answer(self, request_id: str, answer: str, by: str = "you, in the dashboard") -> bool:
        """Answer a pending question (``by``: who answered, as the trace says it); ``False``
        when there is none of that id (answered already)."""
        item = self.pending.get(request_id)
        if item is None or item.done.is_set():
            return False
        item.answer = ApprovalAnswer(answer).value
        item.answered_by = by
        item.done.set()
        return True

    def questions(self) -> list[dict[str, Any]]:
        return [p.data for p in self.pending.values()]


class JobProgress(Progress):
    """An install's steps as ``install`` messages: each step when it starts and how it ended."""

    heartbeat = 0.0

    def __init__(self, hub: Hub, job: str) -> None:
        self.hub = hub
        self.job = job
        self.log: list[dict[str, Any]] = []

    def _send(self, **data: Any) -> None:
        # prose as written (the kernel's hint ``${NAME:-default}`` is no value), values hidden,
        # and the config's secret values masked wherever they occur
        message = {"job": self.job, **mask_secrets(redact_record(data), self.hub.secrets)}
        self.log.append(message)
        self.hub.publish("install", message)

    def info(self, message: str) -> None:
        self._send(type="info", message=message)

    def warn(self, message: str) -> None:
        self._send(type="warn", message=message)

    def on_start(self, step: Step) -> None:
        self._send(type="step", step=step.title, state="running", detail="")

    def on_end(self, step: Step, elapsed: float, error: BaseException | None) -> None:
        ok = step.ok and error is None
        detail = step.detail or (f"{type(error).__name__}: {error}" if error else "")
        self._send(type="step", step=step.title, state="done" if ok else "failed", detail=detail, seconds=elapsed)

    def finish(self, outcome: Mapping[str, Any]) -> None:
        self._send(type="finished", **outcome)
