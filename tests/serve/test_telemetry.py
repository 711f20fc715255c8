"""OpenTelemetry through the gateway: a client's trace context in ``_meta`` is honoured, the
call's SERVER span carries the MCP attributes and kairox's policy decision, the backend MCP
server receives the same trace, and the calls are counted and timed. The gateway is the real
HTTP app (``kairox serve --http``'s) under uvicorn in this process, so OpenTelemetry's
in-memory exporter and metric reader see its spans and metrics; the backend is a real stdio
MCP server (``tests/fixtures/mcp_servers/traced.py``) that answers with the trace context it
received."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import peers
import pytest
import uvicorn
from mcp.shared.exceptions import MCPError
from opentelemetry import context, metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from serve_helpers import TOKEN, Workspace, connect, serve_http, with_backend
from shared_helpers import span_exporter
from test_forward import Host, with_sdk_backend

from kairox_serve.http import GatewayApp, settings_from
from kairox_serve.runtime import served_runtime

pytestmark = pytest.mark.anyio

#: the host's trace: trace id 0af7651916cd43dd8448eb211c80319c, its span b7ad6b7169203331
TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
HOST_SPAN = 0xB7AD6B7169203331
TRACEPARENT = f"00-{TRACE_ID:032x}-{HOST_SPAN:016x}-01"


Otel = tuple[InMemorySpanExporter, InMemoryMetricReader]


@pytest.fixture(scope="module")
def otel() -> Iterator[Otel]:
    """This process's OpenTelemetry SDK, as a host configures it: an in-memory exporter and
    metric reader (the global providers can be set once per process)."""
    exporter: InMemorySpanExporter = span_exporter()
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    metrics.set_meter_provider(meters)
    if metrics.get_meter_provider() is not meters:
        pytest.skip("another test set this process's OpenTelemetry meter provider first")
    yield exporter, reader
    exporter.shutdown()


@pytest.fixture
def telemetry(otel: Otel) -> Otel:
    """:func:`otel`'s exporter and reader, the exporter emptied of the spans of earlier tests
    and of the fixtures set up before it (a test names it after ``gateway``)."""
    otel[0].clear()
    return otel


@contextlib.contextmanager
def in_host_trace() -> Iterator[None]:
    """The host's trace (:data:`TRACEPARENT`) current meanwhile, as a host's is while its SDK
    client sends a request: the client's span is a child of it, and its context is what the
    request's ``_meta`` carries."""
    token = context.attach(TraceContextTextMapPropagator().extract({"traceparent": TRACEPARENT}))
    try:
        yield
    finally:
        context.detach(token)


def traced_workspace(tmp_path: Path) -> Workspace:
    """The gateway's workspace with the backend ``tr`` (the traced fixture), allowed."""
    return with_backend(
        tmp_path, "tr", sys.executable, peers.FIXTURE_SERVERS / "traced.py", user_config='"tr.*" = "allow"\n'
    )


async def _gateway_url(server: uvicorn.Server, tg: Any) -> str:
    tg.start_soon(server.serve)
    with anyio.fail_after(60):
        while not server.started:  # noqa: ASYNC110 - uvicorn's Server.started is a flag, not an event
            await anyio.sleep(0.05)
    return f"http://127.0.0.1:{server.config.port}/mcp"


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[str]:
    """``kairox serve --http``'s app for the traced workspace, served by uvicorn in this
    process; yields its endpoint."""
    async with in_process(traced_workspace(tmp_path)) as url:
        yield url


@contextlib.asynccontextmanager
async def in_process(ws: Workspace) -> AsyncIterator[str]:
    """``kairox serve --http``'s app for ``ws``, served by uvicorn in this process; yields its endpoint."""
    env = ws.env(MCP_TOKEN=TOKEN)
    settings = settings_from(host="127.0.0.1", port=0, token_env="MCP_TOKEN", env=env, stateless=False)
    app = GatewayApp(settings, lambda: served_runtime(ws.root, env=env))
    config = uvicorn.Config(app, host="127.0.0.1", port=peers.free_port(), lifespan="on", log_level="warning")
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        url = await _gateway_url(server, tg)
        try:
            yield url
        finally:
            server.should_exit = True


def _by_id(spans: tuple[ReadableSpan, ...]) -> dict[int, ReadableSpan]:
    return {s.context.span_id: s for s in spans if s.context is not None}


def _parent_of(spans: dict[int, ReadableSpan], span: ReadableSpan) -> ReadableSpan | None:
    return spans.get(span.parent.span_id) if span.parent is not None else None


def _seen(result: Any) -> dict[str, Any]:
    seen: dict[str, Any] = json.loads(result.content[0].text)
    return seen


def _points(reader: InMemoryMetricReader, name: str) -> list[Any]:
    data = reader.get_metrics_data()
    if data is None:  # nothing recorded yet
        return []
    return [
        point
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == name
        for point in metric.data.data_points
    ]


async def test_a_call_continues_the_clients_trace_to_the_backend(gateway: str, telemetry: Otel) -> None:
    exporter, reader = telemetry
    async with connect(gateway, mode="legacy") as client:  # a handshake-era session: mcp.session.id
        with in_host_trace():
            result = await client.call_tool("tr_seen", {})
    assert not result.is_error, result
    backend_saw = _seen(result)["traceparent"]
    spans = exporter.get_finished_spans()
    by_id = _by_id(spans)
    served = [s for s in spans if s.kind is SpanKind.SERVER and s.name == "tools/call tr_seen"]
    assert len(served) == 1, [(s.name, s.kind) for s in spans]
    span = served[0]
    # the incoming context honoured: the same trace, under the span the client sent it from
    assert span.context.trace_id == TRACE_ID
    sent_by = _parent_of(by_id, span)
    assert sent_by is not None and sent_by.kind is SpanKind.CLIENT
    assert sent_by.parent is not None and sent_by.parent.span_id == HOST_SPAN
    attrs = dict(span.attributes or {})
    assert attrs["mcp.method.name"] == "tools/call"
    assert attrs["gen_ai.tool.name"] == "tr_seen"
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["jsonrpc.request.id"]
    assert attrs["mcp.session.id"]  # the gateway's addition: its HTTP session
    assert attrs["kairox.decision"] == "allow" and attrs["kairox.decided_by"] == "policy"
    assert attrs["kairox.principal"] and attrs["kairox.tool"] == "tr.seen"
    assert "error.type" not in attrs
    events = [e.name for e in span.events]
    assert events == ["kairox.tool_call.started", "kairox.tool_call.finished"], events
    # the backend (another process) got the trace in its request's _meta: from the gateway's
    # CLIENT span to it, a child of the call's SERVER span
    _version, trace_id, parent_id, _flags = backend_saw.split("-")
    assert int(trace_id, 16) == TRACE_ID
    to_backend = by_id[int(parent_id, 16)]
    assert to_backend.kind is SpanKind.CLIENT and to_backend.attributes["mcp.method.name"] == "tools/call"
    ancestor: ReadableSpan | None = to_backend
    while ancestor is not None and ancestor is not span:
        ancestor = _parent_of(by_id, ancestor)
    assert ancestor is span, "the backend's request is not under the call's span"
    # counted and timed, by method and tool
    calls = [p for p in _points(reader, "kairox.serve.calls") if p.attributes.get("gen_ai.tool.name") == "tr_seen"]
    assert calls and calls[0].value >= 1
    durations = [
        p for p in _points(reader, "mcp.server.operation.duration") if p.attributes.get("gen_ai.tool.name") == "tr_seen"
    ]
    assert durations and durations[0].count >= 1


async def test_a_refused_call_is_an_error_on_its_span_and_counted(gateway: str, telemetry: Otel) -> None:
    exporter, reader = telemetry
    async with connect(gateway) as client:
        with pytest.raises(MCPError):
            await client.call_tool("no_such_tool", {})
    [span] = [s for s in exporter.get_finished_spans() if s.name == "tools/call no_such_tool"]
    assert span.attributes is not None and span.attributes["error.type"] == "-32602"
    errors = [
        p for p in _points(reader, "kairox.serve.errors") if p.attributes.get("gen_ai.tool.name") == "no_such_tool"
    ]
    assert errors and errors[0].value == 1 and errors[0].attributes["error.type"] == "-32602"


async def test_a_backend_prompt_continues_the_trace(gateway: str, telemetry: Otel) -> None:
    exporter, reader = telemetry
    async with connect(gateway) as client:
        with in_host_trace():
            prompt = await client.get_prompt("tr_seen_prompt", {})
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    backend_saw = json.loads(text)["traceparent"]
    assert int(backend_saw.split("-")[1], 16) == TRACE_ID
    [span] = [
        s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER and s.name.startswith("prompts/get")
    ]
    assert span.context.trace_id == TRACE_ID
    assert span.attributes is not None and span.attributes["gen_ai.prompt.name"] == "tr_seen_prompt"
    assert "mcp.session.id" not in span.attributes, "a 2026-07-28 request is part of no session"
    counted = [
        p for p in _points(reader, "kairox.serve.calls") if p.attributes.get("gen_ai.prompt.name") == "tr_seen_prompt"
    ]
    assert counted and counted[0].attributes["mcp.method.name"] == "prompts/get"


async def test_a_resource_read_names_its_uri_on_the_span(gateway: str, telemetry: Otel) -> None:
    exporter, reader = telemetry
    async with connect(gateway) as client:
        listed = await client.list_resources()
        uri = next(str(r.uri) for r in listed.resources if str(r.uri).endswith("SKILL.md"))
        await client.read_resource(uri)
    [span] = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER and s.name == "resources/read"]
    assert span.attributes is not None and span.attributes["mcp.resource.uri"] == uri
    counted = [
        p for p in _points(reader, "kairox.serve.calls") if p.attributes.get("mcp.method.name") == "resources/read"
    ]
    assert counted and all("mcp.resource.uri" not in p.attributes for p in counted)


async def test_a_held_call_is_counted_while_held(otel: Otel, tmp_path: Path) -> None:
    """A 2026-07-28 call whose backend asks the client is held meanwhile
    (``kairox_serve.held``): ``kairox.serve.held_calls`` counts it then, and not after."""
    _exporter, reader = otel
    host = Host(backend_action="decline")
    held_while_asked: list[int] = []

    async def elicit(*args: Any) -> Any:
        held_while_asked.append(_held_now(reader))
        return await host.elicit(*args)

    before = _held_now(reader)
    async with in_process(with_sdk_backend(tmp_path)) as url, connect(url, elicitation_callback=elicit) as client:
        result = await client.call_tool("asks_ask_user", {"question": "Your name?"})
        assert not result.is_error, result
        after = _held_now(reader)
    assert host.forms == ["Your name?"]
    assert held_while_asked == [before + 1]
    assert after == before


def _held_now(reader: InMemoryMetricReader) -> int:
    return sum(int(p.value) for p in _points(reader, "kairox.serve.held_calls"))


def test_without_a_configured_sdk_the_gateway_serves_and_passes_the_trace_on(tmp_path: Path) -> None:
    """``kairox serve --http`` in a process of its own, where no OpenTelemetry SDK is
    configured: calls work, and the client's trace reaches the backend (the API's no-op
    spans carry the incoming context on)."""
    ws = traced_workspace(tmp_path)

    async def call(url: str) -> dict[str, Any]:
        async with connect(url) as client:
            with in_host_trace():
                result = await client.call_tool("tr_seen", {})
        assert not result.is_error, result
        return _seen(result)

    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        seen = anyio.run(call, url)
    assert int(seen["traceparent"].split("-")[1], 16) == TRACE_ID
