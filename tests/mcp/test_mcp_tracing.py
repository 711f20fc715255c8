"""kairox's MCP client traces as the host's OpenTelemetry is configured: each request is a
CLIENT span under the host's current span, and its context reaches the server in the
request's ``_meta`` beside kairox's own entries (a real stdio server,
``tests/fixtures/mcp_servers/traced.py``, answers with the ``traceparent`` it received)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import peers
import pytest
from mcp_helpers import open_runtime
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from shared_helpers import span_exporter

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    """This process's tracer provider, as a host configures it, exporting to memory."""
    exporter: InMemorySpanExporter = span_exporter()
    yield exporter
    exporter.shutdown()


async def test_a_tool_call_is_a_client_span_of_the_hosts_trace(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    command, *args = peers.fixture_server("traced")
    # a log level: kairox's own _meta entry, which the trace context must not displace
    servers = {"tr": {"command": command, "args": args, "log_level": "debug", "domain": "local", "capability": "read"}}
    async with open_runtime(tmp_path, servers) as rt:
        spans.clear()
        with trace.get_tracer("host").start_as_current_span("agent turn") as host:
            result = await rt.call_tool("tr.seen")
    seen = json.loads(result.text)
    _version, trace_id, parent_id, _flags = seen["traceparent"].split("-")
    assert int(trace_id, 16) == host.get_span_context().trace_id
    by_id = {s.context.span_id: s for s in spans.get_finished_spans() if s.context is not None}
    sent = by_id[int(parent_id, 16)]
    assert sent.kind is SpanKind.CLIENT
    assert sent.attributes is not None and sent.attributes["mcp.method.name"] == "tools/call"
    assert sent.parent is not None and sent.parent.span_id == host.get_span_context().span_id
