"""The stdio transport with real servers: server-everything (node), mcp-server-time (Python SDK),
and server-everything behind ``npx`` (npx -> sh -> node: the grandchild must go too)."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import anyio
import peers
import psutil
import pytest
from mcp import types
from stdio_helpers import Recorder, context, open_session

from kairox_mcp.config import McpServerConfig
from kairox_stdio import StdioTransport

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.usefixtures("no_leftovers")]


async def test_server_everything_tools_echo_and_image(tmp_path: Path) -> None:
    js = peers.everything_server_js()
    ctx = context(tmp_path, name="everything")
    recorder = Recorder()
    started = time.monotonic()
    with anyio.fail_after(60):
        async with open_session(
            McpServerConfig(command="node", args=[str(js), "stdio"]), ctx, message_handler=recorder
        ) as session:
            ready = time.monotonic() - started
            assert session.server_info.name == "mcp-servers/everything"
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"echo", "get-tiny-image", "get-sum", "trigger-long-running-operation"} <= names
            echo = await session.call_tool("echo", {"message": "over stdio"})
            assert echo.content[0].text == "Echo: over stdio"
            image = await session.call_tool("get-tiny-image", {})
            images = [c for c in image.content if isinstance(c, types.ImageContent)]
            assert len(images) == 1 and images[0].mime_type == "image/png" and len(images[0].data) > 1000
            progress: list[float] = []

            async def on_progress(p: float, total: float | None, message: str | None) -> None:
                progress.append(p)

            long = await session.call_tool(
                "trigger-long-running-operation", {"duration": 0.5, "steps": 3}, progress_callback=on_progress
            )
            assert not long.is_error and progress == [1, 2, 3]
    assert not recorder.errors()
    assert any("Starting default (STDIO) server" in line for line in ctx.diagnostics.stderr.lines())
    assert ctx.diagnostics.error is None
    print(f"[peers] server-everything stdio ready after {ready:.2f} s", file=sys.stderr)


async def test_server_everything_behind_npx_leaves_no_node_behind(tmp_path: Path) -> None:
    js = peers.everything_server_js()
    if shutil.which("npx") is None:
        pytest.skip("npx not installed")
    prefix = js.parents[4]  # <prefix>/node_modules/@modelcontextprotocol/server-everything/dist/index.js
    config = McpServerConfig(command="npx", args=["--no", "mcp-server-everything", "stdio"], cwd=str(prefix))
    ctx = context(tmp_path, name="npx-everything")
    with anyio.fail_after(60):
        async with open_session(config, ctx, read_timeout=30) as session:
            assert (await session.call_tool("echo", {"message": "via npx"})).content[0].text == "Echo: via npx"
            leader = psutil.Process(ctx.diagnostics.pid)
            tree = leader.children(recursive=True)
            assert any("node" in (p.name() or "") for p in tree), [p.cmdline() for p in tree]
            # a long call in flight: node does not exit on EOF alone, the group must be signalled
            with anyio.move_on_after(0.3):
                await session.call_tool("trigger-long-running-operation", {"duration": 30, "steps": 3})
    for p in tree:
        assert not p.is_running() or p.status() == psutil.STATUS_ZOMBIE


async def test_mcp_server_time(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("mcp-server-time")
    if not exe.exists():
        pytest.skip("mcp-server-time is not installed in this environment")
    ctx = context(tmp_path, name="time")
    with anyio.fail_after(60):
        config = McpServerConfig(command=str(exe), args=["--local-timezone", "UTC"])
        # a generous grace, not the test-sized 0.5 s of tests/conftest.py: on a loaded machine
        # (parallel workers) the interpreter's exit on EOF can take longer (then SIGTERM, -15)
        transport = StdioTransport(shutdown_grace=5.0)
        async with open_session(config, ctx, transport=transport) as session:
            assert session.server_info.name == "mcp-time"
            names = {t.name for t in (await session.list_tools()).tools}
            assert names == {"get_current_time", "convert_time"}
            result = await session.call_tool(
                "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
            )
            assert not result.is_error
            assert result.structured_content is not None
            assert result.structured_content["target"]["datetime"].endswith("21:00:00+09:00")
    assert ctx.diagnostics.exit_code == 0  # exits by itself on stdin EOF within the grace
