"""The 2026-07-28 revision: kairox settles it as the SDK's ``Client(mode="auto")`` does.

Real peers only: an SDK ``MCPServer`` (written here, run as its own process) over stdio and
over streamable HTTP (uvicorn on a free 127.0.0.1 port, stateful and stateless), which
speaks both revisions; npm server-everything, which speaks only the handshake ones; and a
raw JSON-lines server that rejects ``server/discover``. ``protocol = "2025-11-25"`` forces
the handshake.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import peers
import pytest
from mcp.client.session import ClientRequestContext
from mcp_helpers import open_runtime

from kairox_mcp import manager_of
from kairox_mcp.events import McpLogMessage, McpServerReady, McpToolsRefreshed

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

MODERN = "2026-07-28"
LEGACY = "2025-11-25"

#: an SDK server of both revisions: stdio, or ``--http PORT [--stateless]``
SERVER = r'''
import argparse
from typing import Annotated

import anyio
import mcp.types as types
from mcp.server.mcpserver import Context, MCPServer, Resolve, Sample

server = MCPServer("modern", version="1.0")


@server.tool()
def add(a: int, b: int) -> int:
    """a + b"""
    return a + b


def _question(prompt: str) -> Sample:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    return Sample([message], max_tokens=20)


@server.tool()
def ask(prompt: str, answer: Annotated[types.CreateMessageResult, Resolve(_question)]) -> str:
    """Ask the client's model (sampling: an InputRequiredResult on 2026-07-28)."""
    content = answer.content
    return f"{answer.model}: {content.text if isinstance(content, types.TextContent) else '?'}"


@server.tool()
async def count(n: int, ctx: Context) -> str:
    """Report n progress steps."""
    for i in range(n):
        await ctx.report_progress(i + 1, n, f"step {i + 1}")
    return f"counted {n}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool `late` and say the tool list changed."""
    server.add_tool(lambda: "late", name="late", description="added by grow")
    await ctx.notify_tools_changed()
    return "grown"


@server.tool()
async def shout(text: str, ctx: Context) -> str:
    """Log `text` as a warning (2026-07-28: only to a request that asked for warnings)."""
    await ctx.warning(text)
    return "shouted"


@server.tool()
async def nap(seconds: float) -> str:
    """Sleep."""
    await anyio.sleep(seconds)
    return "rested"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--stateless", action="store_true")
    opts = parser.parse_args()
    if opts.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=opts.http, stateless_http=opts.stateless)
'''

#: a handshake-only server that answers ``server/discover`` with -32601 (raw JSON lines)
NO_DISCOVER = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    m, rid = msg["method"], msg["id"]
    if m == "initialize":
        out = {"result": {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                          "serverInfo": {"name": "old", "version": "0.1"}}}
    elif m == "tools/list":
        out = {"result": {"tools": [{"name": "hello", "inputSchema": {"type": "object"}}]}}
    elif m == "tools/call":
        out = {"result": {"content": [{"type": "text", "text": "hello back"}]}}
    elif m == "server/discover":
        sys.stderr.write("asked server/discover\n")
        sys.stderr.flush()
        out = {"error": {"code": -32601, "message": "Method not found"}}
    else:
        out = {"error": {"code": -32601, "message": "Method not found"}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, **out}) + "\n")
    sys.stdout.flush()
"""

READ = {"domain": "local", "capability": "read"}


def write_script(tmp_path: Path, name: str, source: str) -> list[str]:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return [sys.executable, str(path)]


@contextlib.contextmanager
def http_server(tmp_path: Path, *extra: str) -> Iterator[str]:
    """The SDK server over streamable HTTP in its own process group; yields its URL."""
    port = peers.free_port()
    with peers.http_peer([*write_script(tmp_path, "modern_http", SERVER), "--http", str(port), *extra], port) as url:
        yield url


@contextlib.contextmanager
def modern_entry(tmp_path: Path, how: str, **extra: Any) -> Iterator[dict[str, Any]]:
    if how == "stdio":
        command, *args = write_script(tmp_path, "modern", SERVER)
        yield {"command": command, "args": args, **READ, **extra}
        return
    with http_server(tmp_path, *(["--stateless"] if how == "stateless" else [])) as url:
        yield {"type": "streamable_http", "url": url, **READ, **extra}


class Model:
    """A stub sampling callback."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        content = params.messages[-1].content
        said = content.text if isinstance(content, types.TextContent) else "?"
        self.asked.append(said)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=f"echo {said}"), model="stub"
        )


def ready_event(seen: list[Any], server: str) -> McpServerReady:
    return next(e for e in seen if isinstance(e, McpServerReady) and e.server == server)


HOWS = ["stdio", "streamable_http", "stateless"]


@pytest.mark.parametrize("how", HOWS)
async def test_a_modern_server_negotiates_2026_07_28_and_serves_tools(tmp_path: Path, how: str, events_of: Any) -> None:
    with modern_entry(tmp_path, how) as entry:
        async with open_runtime(tmp_path, {"m": entry}) as rt:
            status = {s.name: s for s in rt.status().servers}
            assert status["m"].state.value == "ready", status["m"].detail
            assert f"protocol {MODERN}" in status["m"].detail
            client = manager_of(rt).server("m").client
            assert client is not None and client.protocol_version == MODERN and client.modern
            assert client.server_info == "modern 1.0"
            assert client.initialize_result is None  # discover, not the handshake
            ids = {spec.id for spec in rt.tools.by_provider("mcp:m")}
            assert {"m.add", "m.ask", "m.count", "m.grow", "m.nap"} <= ids
            result = await rt.call_tool("m.add", {"a": 2, "b": 40})
            assert result.text == "42"


@pytest.mark.parametrize("how", ["stdio", "streamable_http"])
async def test_the_ready_event_and_status_name_the_revision(tmp_path: Path, how: str, events_of: Any) -> None:
    with modern_entry(tmp_path, how) as entry:
        async with open_runtime(tmp_path, {"m": entry}, start=False) as rt:
            seen = events_of(rt)
            await rt.start_providers(["mcp"])
            assert ready_event(seen, "m").protocol_version == MODERN


@pytest.mark.parametrize("how", HOWS)
async def test_sampling_progress_and_timeouts_work_on_2026_07_28(tmp_path: Path, how: str) -> None:
    model = Model()
    with modern_entry(tmp_path, how, tool_timeout=1.5, sampling="allow") as entry:
        async with open_runtime(tmp_path, {"m": entry}, sampling_callback=model.sampling) as rt:
            lifecycle = manager_of(rt).server("m")
            assert lifecycle.client is not None and lifecycle.client.modern
            # sampling: the server's InputRequiredResult is answered by the host callback, then retried
            result = await rt.call_tool("m.ask", {"prompt": "ping"})
            assert result.text == "stub: echo ping"
            assert model.asked == ["ping"]
            # progress reaches the caller's callback
            steps: list[tuple[float, float | None, str | None]] = []

            async def progress(done: float, total: float | None, message: str | None) -> None:
                steps.append((done, total, message))

            got = await lifecycle.call_tool("count", {"n": 3}, timeout=10, progress=progress)
            assert got.content[0].text == "counted 3"
            assert [s[0] for s in steps] == [1, 2, 3] and steps[-1][2] == "step 3"
            # a call past its timeout fails as a timeout (the request is cancelled); the server serves on
            with pytest.raises(Exception, match="timed out"):
                await rt.call_tool("m.nap", {"seconds": 30})
            assert (await rt.call_tool("m.add", {"a": 1, "b": 1})).text == "2"


@pytest.mark.parametrize("how", ["stdio", "streamable_http"])
async def test_list_changed_arrives_on_the_listen_stream(tmp_path: Path, how: str) -> None:
    with modern_entry(tmp_path, how) as entry:
        async with open_runtime(tmp_path, {"m": entry}) as rt:
            refreshed = anyio.Event()
            rt.events.subscribe(lambda e: refreshed.set(), McpToolsRefreshed)
            assert "m.late" not in {s.id for s in rt.tools.by_provider("mcp:m")}
            assert (await rt.call_tool("m.grow", {})).text == "grown"
            with anyio.fail_after(20):
                await refreshed.wait()  # the list_changed came on the listen stream; kairox re-listed
            assert "m.late" in {s.id for s in rt.tools.by_provider("mcp:m")}
            assert (await rt.call_tool("m.late", {})).text == "late"


@pytest.mark.parametrize("how", ["stdio", "streamable_http"])
async def test_log_level_asks_for_log_records_on_2026_07_28(tmp_path: Path, how: str) -> None:
    with modern_entry(tmp_path, how, log_level="warning") as entry:
        async with open_runtime(tmp_path, {"m": entry}) as rt:
            logged: list[Any] = []
            first = anyio.Event()

            def on_log(event: Any) -> None:
                logged.append(event)
                first.set()

            rt.events.subscribe(on_log, McpLogMessage)
            assert manager_of(rt).server("m").client.modern  # type: ignore[union-attr]
            assert (await rt.call_tool("m.shout", {"text": "first"})).text == "shouted"
            with anyio.fail_after(10):
                await first.wait()  # the record may trail the result
            assert [(e.server, e.level, e.data) for e in logged] == [("m", "warning", "first")]
            # a higher level while it runs: later requests ask for errors only
            await manager_of(rt).set_log_level("m", "error")
            assert (await rt.call_tool("m.shout", {"text": "second"})).text == "shouted"
            assert (await rt.call_tool("m.add", {"a": 1, "b": 2})).text == "3"  # anything after it
            assert [e.data for e in logged] == ["first"]


async def test_protocol_2025_11_25_forces_the_handshake(tmp_path: Path) -> None:
    with modern_entry(tmp_path, "stdio", protocol=LEGACY) as entry:
        async with open_runtime(tmp_path, {"m": entry}) as rt:
            client = manager_of(rt).server("m").client
            assert client is not None and client.protocol_version == LEGACY and not client.modern
            assert client.initialize_result is not None
            assert (await rt.call_tool("m.add", {"a": 3, "b": 4})).text == "7"


async def test_server_everything_still_negotiates_2025_11_25(tmp_path: Path, everything_js: Path) -> None:
    entry = {"command": "node", "args": [str(everything_js), "stdio"], **READ}
    async with open_runtime(tmp_path, {"everything": entry}) as rt:
        status = {s.name: s for s in rt.status().servers}
        assert status["everything"].state.value == "ready", status["everything"].detail
        assert f"protocol {LEGACY}" in status["everything"].detail
        assert (await rt.call_tool("everything.echo", {"message": "hi"})).text == "Echo: hi"


async def test_server_everything_over_streamable_http_negotiates_2025_11_25(
    tmp_path: Path, everything_shttp: str
) -> None:
    async with open_runtime(
        tmp_path, {"everything": {"type": "streamable_http", "url": everything_shttp, **READ}}
    ) as rt:
        client = manager_of(rt).server("everything").client
        assert client is not None and client.protocol_version == LEGACY
        assert (await rt.call_tool("everything.echo", {"message": "hi"})).text == "Echo: hi"


async def test_a_server_that_rejects_server_discover_gets_the_handshake(tmp_path: Path) -> None:
    command, *args = write_script(tmp_path, "no_discover", NO_DISCOVER)
    async with open_runtime(tmp_path, {"old": {"command": command, "args": args, **READ}}) as rt:
        lifecycle = manager_of(rt).server("old")
        assert lifecycle.client is not None, lifecycle.detail
        assert lifecycle.client.protocol_version == LEGACY
        assert "asked server/discover" in lifecycle.stderr_tail()  # the probe was sent, and refused
        assert (await rt.call_tool("old.hello", {})).text == "hello back"


async def test_the_handshake_forced_server_is_never_probed(tmp_path: Path) -> None:
    command, *args = write_script(tmp_path, "no_discover", NO_DISCOVER)
    entry = {"command": command, "args": args, "protocol": LEGACY, **READ}
    async with open_runtime(tmp_path, {"old": entry}) as rt:
        lifecycle = manager_of(rt).server("old")
        assert lifecycle.client is not None and lifecycle.client.protocol_version == LEGACY
        assert "asked server/discover" not in lifecycle.stderr_tail()


#: a raw server that refuses every request (``initialize`` with ``--refuse``), or answers
#: ``initialize`` with a revision nobody speaks (``--odd``)
REFUSING = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    if msg["method"] == "initialize" and "--odd" in sys.argv:
        out = {"result": {"protocolVersion": "1999-01-01", "capabilities": {}, "serverInfo": {"name": "odd", "version": "0"}}}
    else:
        out = {"error": {"code": -32603, "message": "not today"}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **out}) + "\n")
    sys.stdout.flush()
"""


@pytest.mark.parametrize(
    ("flag", "protocol", "said"),
    [
        ("--refuse", "auto", "initialize failed (MCP server x): MCP error -32603: not today"),
        ("--refuse", LEGACY, "initialize failed (MCP server x): MCP error -32603: not today"),
        ("--odd", LEGACY, "initialize failed (MCP server x): Unsupported protocol version from the server: 1999-01-01"),
    ],
)
async def test_a_handshake_the_server_refuses_says_why(tmp_path: Path, flag: str, protocol: str, said: str) -> None:
    """The SDK's client negotiates inside its session's task group; what it raises there is
    said as kairox says a request's error, not as an exception group."""
    command, *args = write_script(tmp_path, "refusing", REFUSING)
    entry = {"command": command, "args": [*args, flag], "protocol": protocol, **READ}
    async with open_runtime(tmp_path, {"x": entry}) as rt:
        lifecycle = manager_of(rt).server("x")
        assert lifecycle.client is None
        assert lifecycle.detail.startswith(said), lifecycle.detail


#: a raw 2026-07-28 server whose listen stream the server tears down a moment after it
#: acknowledged it (a draining server, a proxy's idle timeout)
LISTEN_RESET = r"""
import json, sys, time

def out(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

listens = 0
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if rid is None:
        continue
    done = {"ttlMs": 0, "cacheScope": "private", "resultType": "complete"}
    if method == "server/discover":
        caps = {"tools": {"listChanged": True}}
        out({"jsonrpc": "2.0", "id": rid, "result": {"supportedVersions": ["2026-07-28"], "capabilities": caps, **done}})
    elif method == "tools/list":
        lists = globals().get("lists", 0) + 1
        sys.stderr.write(f"list {lists}\n")
        sys.stderr.flush()
        tools = [{"name": "hello", "inputSchema": {"type": "object"}}]
        out({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools, **done}})
    elif method == "tools/call":
        out({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "hi"}], **done}})
    elif method == "subscriptions/listen":
        listens += 1
        sys.stderr.write(f"listen {listens}\n")
        sys.stderr.flush()
        meta = {"io.modelcontextprotocol/subscriptionId": rid}
        params = {"_meta": meta, "notifications": {"toolsListChanged": True}}
        out({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": params})
        if listens == 1:
            time.sleep(0.3)
            out({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "listen stream reset"}})
    else:
        out({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "not found"}})
"""


async def test_a_listen_stream_lost_after_its_acknowledgment_is_reopened_without_a_restart(tmp_path: Path) -> None:
    command, *args = write_script(tmp_path, "listen_reset", LISTEN_RESET)
    async with open_runtime(tmp_path, {"s": {"command": command, "args": args, **READ}}) as rt:
        lifecycle = manager_of(rt).server("s")
        with anyio.fail_after(20):
            # re-opened, and the tools fetched again (the stream has no replay of what it missed)
            while not {"listen 2", "list 2"} <= set(lifecycle.stderr_tail()):  # noqa: ASYNC110 - no event for it
                await anyio.sleep(0.05)
        assert lifecycle.restarts == 0 and lifecycle.state.value == "ready", lifecycle.stderr_tail()
        assert (await rt.call_tool("s.hello", {})).text == "hi"
