"""Cancellation passes through the gateway to the backend; registry changes reach the client
as ``notifications/tools/list_changed`` (over stdio and HTTP, on both protocol revisions)."""

from __future__ import annotations

import json
import os
import signal
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from serve_helpers import (
    TOKEN,
    Workspace,
    connect,
    gateway_client,
    make_workspace,
    raw_server,
    serve_http,
    stdio_params,
    with_script,
)
from test_stdio import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]


#: a raw JSON-lines server whose tool ``block`` never answers; it records every
#: ``notifications/cancelled`` it receives in the file named by its argument
NEVER_ANSWERS = raw_server(
    "never",
    ["block"],
    """
    elif method == "tools/call":
        with open(marker, "a") as fh:
            fh.write(json.dumps({"called": msg["id"]}) + "\\n")
    elif method == "notifications/cancelled":
        with open(marker, "a") as fh:
            fh.write(json.dumps({"cancelled": msg["params"].get("requestId")}) + "\\n")
    """,
    setup="marker = sys.argv[1]\n",
)


def with_never(tmp_path: Path) -> tuple[Workspace, Path]:
    marker = tmp_path / "never.log"
    return with_script(tmp_path, "never", NEVER_ANSWERS, str(marker), user_config='"never.*" = "allow"\n'), marker


def records(marker: Path) -> list[dict[str, Any]]:
    if not marker.is_file():
        return []
    return [json.loads(line) for line in marker.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_cancelled_call_is_cancelled_at_the_backend(tmp_path: Path, mode: str) -> None:
    ws, marker = with_never(tmp_path)
    async with Client(stdio_params(ws), mode=mode) as client:  # type: ignore[arg-type]
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "never_block", {})
            with anyio.fail_after(30):
                while not any("called" in r for r in records(marker)):  # noqa: ASYNC110 - a file written by another process
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()  # the client gives up: it sends notifications/cancelled
        with anyio.fail_after(30):
            while not any("cancelled" in r for r in records(marker)):  # noqa: ASYNC110 - as above
                await anyio.sleep(0.05)
        # the gateway goes on serving
        assert text_of(await client.call_tool("wb_echo", {"message": "still here"})) == "still here"


#: a raw JSON-lines server with tool ``grow``: it adds the tool ``grown`` and says
#: ``notifications/tools/list_changed``
GROWS = raw_server(
    "grows",
    "tools",
    """
    elif method == "tools/call":
        if msg["params"]["name"] == "grow" and len(tools) == 1:
            tools.append({"name": "grown", "inputSchema": {"type": "object"}})
            write({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": "ok"}]}})
    """,
    setup='tools = [{"name": "grow", "inputSchema": {"type": "object"}}]\n',
    list_changed=True,
)


def with_grows(tmp_path: Path) -> Workspace:
    return with_script(tmp_path, "grows", GROWS, user_config='"grows.*" = "allow"\n')


async def grow(client: Client) -> None:
    tools = {t.name for t in (await client.list_tools()).tools}
    assert "grows_grow" in tools and "grows_grown" not in tools
    assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed
    assert text_of(await client.call_tool("grows_grow", {})) == "ok"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_registry_change_is_announced_to_a_handshake_client(tmp_path: Path, transport: str) -> None:
    ws = with_grows(tmp_path)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with gateway_client(ws, transport, mode="legacy", message_handler=on_message) as client:
        assert client.protocol_version not in MODERN_PROTOCOL_VERSIONS
        await grow(client)
        with anyio.fail_after(30):
            await changed.wait()
        assert "grows_grown" in {t.name for t in (await client.list_tools()).tools}


@pytest.mark.parametrize("transport", ["stdio", "http", "http --stateless"])
async def test_a_registry_change_reaches_a_2026_client_that_listens(tmp_path: Path, transport: str) -> None:
    """2026-07-28 has no standing channel: the client opens ``subscriptions/listen``, and the
    change arrives on that stream (stamped with its id); a stateless gateway serves it too."""
    ws = with_grows(tmp_path)
    kind, *args = transport.split()
    async with gateway_client(ws, kind, *args, mode="auto") as client:
        assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
        async with client.listen(tools_list_changed=True, prompts_list_changed=True) as sub:
            assert sub.honored.tools_list_changed
            await grow(client)
            with anyio.fail_after(30):
                event = await sub.__anext__()
            assert isinstance(event, ToolsListChanged)
        assert "grows_grown" in {t.name for t in (await client.list_tools()).tools}


async def test_a_stopping_gateway_ends_listen_streams_gracefully(tmp_path: Path) -> None:
    """SIGTERM to ``kairox serve --http`` while a 2026-07-28 client listens: the stream ends
    with the server's final result (the loop just stops), not as a drop after uvicorn's
    grace, and the process exits."""
    ws = make_workspace(tmp_path)
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, proc):
        async with connect(url, mode="auto") as client, client.listen(tools_list_changed=True) as sub:
            os.killpg(proc.pid, signal.SIGTERM)
            with anyio.fail_after(30):
                events = [event async for event in sub]  # SubscriptionLost if the stream dropped
            assert events == []
        with anyio.fail_after(30):
            code = await anyio.to_thread.run_sync(proc.wait)
        assert code in (0, 130, 143, -signal.SIGTERM)


async def test_one_session_cannot_take_every_listen_stream(tmp_path: Path) -> None:
    """A 2026-07-28 client over stdio may keep ``max_listens_per_session`` (8) streams open;
    the next is refused saying which limit it hit, and closing one makes room."""
    ws = make_workspace(tmp_path)
    async with gateway_client(ws, "stdio", mode="auto") as client:
        assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
        async with AsyncExitStack() as streams:
            for _ in range(8):
                await streams.enter_async_context(client.listen(tools_list_changed=True))
            with pytest.raises(MCPError, match=r"this session already has 8 listen streams open") as refused:
                async with client.listen(tools_list_changed=True):
                    pass
            assert "max_listens_per_session = 8" in str(refused.value)
        async with client.listen(tools_list_changed=True) as sub:  # closed ones freed their places
            assert sub.honored.tools_list_changed


async def test_the_gateway_wide_listen_limit_is_configurable(tmp_path: Path) -> None:
    """2026-07-28 over HTTP keeps no session (nothing tells clients apart): ``[serve]
    max_listens`` bounds the streams of all clients together, and the refusal names it."""
    ws = make_workspace(tmp_path, serve="[serve]\nmax_listens = 2\n")
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        async with connect(url, mode="auto") as first, connect(url, mode="auto") as second:
            async with first.listen(tools_list_changed=True), second.listen(tools_list_changed=True):
                with pytest.raises(MCPError, match=r"\[serve\] max_listens = 2") as refused:
                    async with first.listen(tools_list_changed=True):
                        pass
                assert "listen streams open" in str(refused.value)
            async with second.listen(tools_list_changed=True) as sub:
                assert sub.honored.tools_list_changed
