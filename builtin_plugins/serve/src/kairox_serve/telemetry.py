"""OpenTelemetry traces and metrics of the gateway's calls.

The MCP SDK's server opens one SERVER span per request (its ``OpenTelemetryMiddleware``, the
outermost of ``Server.middleware``), a child of the trace context the request carries in
``params._meta`` (W3C ``traceparent`` / ``tracestate``), named and attributed after
OpenTelemetry's semantic conventions for MCP (``tools/call {tool}``, ``mcp.method.name``,
``gen_ai.tool.name``, ``jsonrpc.request.id``, ``mcp.protocol.version``, ``error.type``). The
gateway does not open a second one: for each ``tools/call``, ``prompts/get`` and
``resources/read`` it adds to that span what only it knows (``mcp.session.id``,
``mcp.resource.uri``; the principal, the policy's decision and who made it, from the audit
record; the events ``kairox.tool_call.started`` / ``kairox.tool_call.finished`` from the
kernel's :class:`~kairox.ToolCallStarted` / :class:`~kairox.ToolCallFinished`) and records
the metrics. The call to a backend MCP server is the SDK client's CLIENT span under it, whose
context the SDK puts in the backend request's ``_meta``.

Metrics: ``mcp.server.operation.duration`` (a histogram in seconds, the conventions' name),
``kairox.serve.calls`` and ``kairox.serve.errors`` (counters), ``kairox.serve.held_calls`` (an
up-down counter of calls held while their backend waits for the client). All by
``mcp.method.name`` (and ``gen_ai.tool.name`` / ``gen_ai.prompt.name``, ``error.type``).

Without an OpenTelemetry SDK configured by the host, the API's no-op tracer and meter record
nothing. ``opentelemetry`` is imported when a gateway is made, not with this module.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from kairox import Event, ToolCallFinished, ToolCallStarted

from .audit import CallAudited

__all__ = ["SCOPE", "TRACED_METHODS", "Telemetry"]

#: the instrumentation scope of the metrics
SCOPE = "kairox_serve"
#: the requests the gateway adds to the span of and measures, and the parameter naming their target
TRACED_METHODS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
#: what of the audit record goes on the span (as ``kairox.<key>``)
_AUDITED = ("principal", "tool", "decision", "decided_by", "outcome")

T = TypeVar("T")

#: the span of the gateway's request running in this task (set by :meth:`Telemetry.serve`)
_span: contextvars.ContextVar[Any] = contextvars.ContextVar("kairox_serve_span", default=None)


def _error_of(result: Any) -> str | None:
    """``tool_error`` for a ``tools/call`` result that is an error (the conventions' value)."""
    failed = result.get("isError") if isinstance(result, Mapping) else getattr(result, "is_error", None)
    return "tool_error" if failed is True else None


class Telemetry:
    """The gateway's additions to the SDK's spans, and its metrics."""

    #: the events :meth:`on_event` puts on spans
    EVENTS = (ToolCallStarted, ToolCallFinished, CallAudited)

    def __init__(self) -> None:
        from opentelemetry import metrics, trace

        self._trace = trace
        meter = metrics.get_meter(SCOPE)
        self._duration = meter.create_histogram(
            "mcp.server.operation.duration", unit="s", description="Duration of the MCP requests the gateway served"
        )
        self._calls = meter.create_counter("kairox.serve.calls", unit="{call}", description="Calls the gateway served")
        self._errors = meter.create_counter(
            "kairox.serve.errors", unit="{call}", description="Calls that ended in an error"
        )
        self._held = meter.create_up_down_counter(
            "kairox.serve.held_calls", unit="{call}", description="Calls held while their backend waits for the client"
        )

    async def serve(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        run: Callable[[], Awaitable[T]],
        *,
        session_id: str | None = None,
    ) -> T:
        """``await run()``, the request ``method`` with ``params`` (raw, as received), measured
        and its span completed when it is one of :data:`TRACED_METHODS`."""
        if method not in TRACED_METHODS:
            return await run()
        target = params.get(TRACED_METHODS[method]) if isinstance(params, Mapping) else None
        target = target if isinstance(target, str) else ""
        metric: dict[str, Any] = {"mcp.method.name": method}
        span = self._trace.get_current_span()  # the SDK's SERVER span of this request
        if method == "resources/read":
            span.set_attribute("mcp.resource.uri", target)  # not in the metrics: high-cardinality
        else:
            metric["gen_ai.tool.name" if method == "tools/call" else "gen_ai.prompt.name"] = target
        if session_id:
            span.set_attribute("mcp.session.id", session_id)
        started = time.perf_counter()
        error_type: str | None = None
        token = _span.set(span)
        try:
            result = await run()
            error_type = _error_of(result)
            return result
        except BaseException as exc:
            code = getattr(exc, "code", None)  # an MCPError's JSON-RPC code, as the SDK's span has it
            error_type = str(code) if isinstance(code, int) else type(exc).__qualname__
            raise
        finally:
            _span.reset(token)
            if error_type is not None:
                metric["error.type"] = error_type
                self._errors.add(1, metric)
            self._calls.add(1, metric)
            self._duration.record(time.perf_counter() - started, metric)

    @contextmanager
    def holding(self) -> Iterator[None]:
        """While a call is held (:mod:`kairox_serve.held`): counted in ``kairox.serve.held_calls``."""
        self._held.add(1)
        try:
            yield
        finally:
            self._held.add(-1)

    def on_event(self, event: Event) -> None:
        """A kernel or audit event of the gateway's request running in this task, on its span
        (the runtime publishes them in the caller's task)."""
        span = _span.get()
        if span is None or not span.is_recording():  # not a request's, or a held call past its first answer
            return
        if isinstance(event, ToolCallStarted):
            span.add_event("kairox.tool_call.started", {"kairox.tool": event.tool, "kairox.call_id": event.call_id})
        elif isinstance(event, ToolCallFinished):
            span.add_event("kairox.tool_call.finished", {"kairox.tool": event.tool, "kairox.outcome": event.outcome})
        elif isinstance(event, CallAudited):  # the audit line: who called, what the policy said and who decided
            record = event.record
            span.set_attributes({f"kairox.{key}": str(record[key]) for key in _AUDITED if record.get(key) is not None})
