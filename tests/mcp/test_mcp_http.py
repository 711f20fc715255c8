"""The sse and streamable_http transports against real servers over real HTTP on 127.0.0.1:
npm server-everything (``node dist/index.js sse|streamableHttp``) and an SDK ``MCPServer``
served by uvicorn in-process (to see the requests: headers, session, DELETE)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import peers
import pytest
from mcp_helpers import open_runtime
from shared_helpers import serve_asgi

from kairox._tools import ImageContent, TextContent
from kairox._types import Capability, Domain, ServerState
from kairox.errors import ToolError
from kairox_mcp import McpServerFailed, manager_of

pytestmark = pytest.mark.integration

MODES = [("sse", "sse"), ("streamableHttp", "streamable_http")]


def yes(_request: Any) -> bool:
    return True


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "kind"), MODES)
async def test_everything_server_tools_content_progress_resources(
    tmp_path: Path, everything_js: Path, mode: str, kind: str, no_leftovers: None
) -> None:
    with peers.everything_http(mode) as url:
        async with open_runtime(tmp_path, {"ev": {"type": kind, "url": url}}) as rt:
            ids = {s.id for s in rt.tools.by_provider("mcp:ev")}
            assert {"ev.echo", "ev.get-tiny-image", "ev.get-sum", "ev.trigger-long-running-operation"} <= ids
            echo = rt.tools.get_spec("ev.echo")
            assert (echo.domain, echo.capability) == (Domain.SYSTEM, Capability.READ)  # readOnlyHint
            assert (await rt.call_tool("ev_echo", {"message": "hi"})).text == "Echo: hi"
            image = await rt.call_tool("ev.get-tiny-image", {})
            kinds = [type(c) for c in image.content]
            assert kinds == [TextContent, ImageContent, TextContent]
            png = image.content[1]
            assert isinstance(png, ImageContent) and png.mime_type == "image/png"
            assert png.raw().startswith(b"\x89PNG")
            structured = await rt.call_tool("ev.get-structured-content", {"location": "New York"})
            assert structured.structured is not None and "temperature" in structured.structured
            progress: list[tuple[float, float | None]] = []
            done = await rt.call_tool(
                "ev.trigger-long-running-operation",
                {"duration": 0.6, "steps": 3},
                progress=lambda p, t, m: progress.append((p, t)),
            )
            assert "completed" in done.text
            assert progress == [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]
            unknown = await rt.call_tool("ev.get-sum", {"a": "x", "b": 1})
            assert unknown.is_error
            mcp = manager_of(rt)
            resources = await mcp.list_resources("ev")
            assert len(resources) == 7 and all(r.uri.startswith("demo://resource/static/document/") for r in resources)
            text = await mcp.read_resource("ev", resources[0].uri)
            assert text[0].text
            templates = await mcp.list_resource_templates("ev")
            assert {t.uri_template for t in templates} >= {"demo://resource/dynamic/text/{resourceId}"}
            prompt = await mcp.get_prompt("ev", "args-prompt", {"city": "Paris", "state": "IDF"})
            assert "Paris" in prompt.text
            # the TypeScript SDK's error message carries "MCP error <code>: " itself: said once
            with pytest.raises(ToolError) as refused:
                await mcp.get_prompt("ev", "args-prompt", {})
            assert str(refused.value).count("MCP error -32602: ") == 1, str(refused.value)
            assert "failed (MCP server ev): MCP error -32602: Invalid arguments for prompt" in str(refused.value)


@contextlib.contextmanager
def everything_process(mode: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    js = peers.everything_server_js()
    port = peers.free_port()
    proc = subprocess.Popen(
        ["node", str(js), mode],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PORT": str(port)},
        start_new_session=True,
    )
    try:
        peers.wait_for_port(port, proc=proc)
        yield f"http://127.0.0.1:{port}/{'sse' if mode == 'sse' else 'mcp'}", proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "kind"), MODES)
async def test_a_server_that_dies_mid_call_fails_the_call_within_a_second(
    tmp_path: Path, everything_js: Path, mode: str, kind: str, no_leftovers: None
) -> None:
    with everything_process(mode) as (url, proc):
        config = {"type": kind, "url": url, "max_restarts": 1, "restart_backoff": 0.1}
        async with open_runtime(tmp_path, {"ev": config}) as rt:
            failed: list[Any] = []
            rt.events.subscribe(failed.append, McpServerFailed)
            killed_at = 0.0

            async def kill_soon() -> None:
                nonlocal killed_at
                await anyio.sleep(0.5)
                killed_at = time.monotonic()
                os.killpg(proc.pid, signal.SIGKILL)

            async with anyio.create_task_group() as tg:
                tg.start_soon(kill_soon)
                with pytest.raises(ToolError) as info:
                    await rt.call_tool("ev.trigger-long-running-operation", {"duration": 10, "steps": 10})
            assert time.monotonic() - killed_at < 1.0
            assert "closed the connection during tools/call trigger-long-running-operation" in str(info.value)
            with anyio.fail_after(10):  # the crash, then the one restart that cannot connect
                await manager_of(rt).server("ev").wait_done()
            assert len(failed) == 2
            assert failed[0].will_restart and not failed[1].will_restart
            assert failed[1].error.startswith("cannot connect") and url.split("?")[0] in failed[1].error
            status = manager_of(rt).status()[0]
            assert status.state is ServerState.FAILED
            assert not rt.tools.by_provider("mcp:ev")
            with pytest.raises(ToolError):
                await rt.call_tool("ev.echo", {"message": "x"})


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["sse", "streamable_http"])
async def test_refused_connection_fails_that_server_only(tmp_path: Path, kind: str) -> None:
    from mcp.server.mcpserver import MCPServer
    from mcp_helpers import MemoryTransport, memory_config

    port = peers.free_port()  # nothing listens there
    good = MCPServer("good")

    @good.tool()
    def ping() -> str:
        return "pong"

    servers = {"down": {"type": kind, "url": f"http://127.0.0.1:{port}/x"}, "up": memory_config()}
    async with open_runtime(tmp_path, servers, transports=(MemoryTransport({"up": good}),)) as rt:
        status = {s.name: s for s in manager_of(rt).status()}
        assert status["up"].state is ServerState.READY
        assert status["down"].state is ServerState.FAILED
        assert status["down"].detail == f"cannot connect: All connection attempts failed to http://127.0.0.1:{port}/x"
        assert (await rt.call_tool("up.ping", {}, approver=yes)).text == "pong"


# -- what goes over the wire -------------------------------------------------------------


class Recorder:
    """ASGI middleware noting method, path and headers of every request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.requests: list[tuple[str, str, dict[str, str]]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            self.requests.append((scope["method"], scope["path"], headers))
        await self.app(scope, receive, send)


@contextlib.asynccontextmanager
async def served(app: Any) -> AsyncIterator[tuple[int, Recorder]]:
    recorder = Recorder(app)
    async with serve_asgi(recorder) as port:
        yield port, recorder


def sdk_server() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("recorded", version="2")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return server


async def add_through(tmp_path: Path, config: dict[str, Any], env: dict[str, str], *, secret: str) -> None:
    """Call ``rec.add`` (2 + 3) through the server ``rec`` of ``config``; the secret the
    configuration reads from ``env`` shows nowhere in the server's status."""
    async with open_runtime(tmp_path, {"rec": config}, env=env) as rt:
        assert (await rt.call_tool("rec.add", {"a": 2, "b": 3}, approver=yes)).text == "5"
        assert secret not in repr(manager_of(rt).status())


@pytest.mark.anyio
async def test_streamable_http_sends_headers_and_deletes_its_session(tmp_path: Path) -> None:
    config = {
        "type": "streamable-http",
        "protocol": "2025-11-25",  # 2026-07-28 has no session, so no DELETE
        "headers": {"X-Trace": "${TRACE_ID}"},
        "api_key_env": "RECORD_TOKEN",
        "env_http_headers": {"X-Org": "ORG_ID"},
    }
    env = {"PATH": "/usr/bin:/bin", "TRACE_ID": "trace-7", "RECORD_TOKEN": "s3cret", "ORG_ID": "org-1"}
    async with served(sdk_server().streamable_http_app()) as (port, recorder):
        await add_through(tmp_path, {**config, "url": f"http://127.0.0.1:{port}/mcp"}, env, secret="s3cret")
        methods = [m for m, _, _ in recorder.requests]
        assert methods[0] == "POST" and methods[-1] == "DELETE"
        for _, path, headers in recorder.requests:
            assert path == "/mcp"
            assert headers["authorization"] == "Bearer s3cret"
            assert headers["x-trace"] == "trace-7" and headers["x-org"] == "org-1"
        session_ids = {h.get("mcp-session-id") for m, _, h in recorder.requests[1:]}
        assert len(session_ids) == 1 and None not in session_ids  # every later request carries the session
        assert recorder.requests[-1][2]["mcp-session-id"] == session_ids.pop()


@pytest.mark.anyio
async def test_sse_sends_headers_on_the_stream_and_the_posts(tmp_path: Path) -> None:
    config = {"type": "sse", "headers": {"X-Trace": "${TRACE_ID:-none}"}, "bearer_token_env_var": "RECORD_TOKEN"}
    env = {"PATH": "/usr/bin:/bin", "RECORD_TOKEN": "t0k"}
    async with served(sdk_server().sse_app()) as (port, recorder):
        await add_through(tmp_path, {**config, "url": f"http://127.0.0.1:{port}/sse"}, env, secret="t0k")
        assert recorder.requests[0][:2] == ("GET", "/sse")
        assert {m for m, _, _ in recorder.requests} == {"GET", "POST"}
        for _, _, headers in recorder.requests:
            assert headers["authorization"] == "Bearer t0k" and headers["x-trace"] == "none"


@pytest.mark.anyio
async def test_http_error_statuses_are_noted_in_the_logs(tmp_path: Path) -> None:
    async with served(sdk_server().streamable_http_app()) as (port, _):
        config = {"type": "http", "url": f"http://127.0.0.1:{port}/wrong-path?token=abc123"}
        async with open_runtime(tmp_path, {"rec": config}) as rt:
            server = manager_of(rt).server("rec")
            assert server.state is ServerState.FAILED
            logs = "\n".join(manager_of(rt).logs("rec"))
            assert f"POST http://127.0.0.1:{port}/wrong-path?token=<redacted> -> 404" in logs
            assert "abc123" not in logs and "abc123" not in server.detail
