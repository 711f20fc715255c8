"""Cancellation passes through the gateway to the backend; registry changes reach the client
as ``notifications/tools/list_changed``."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from serve_helpers import Workspace, make_workspace, stdio_params
from test_stdio import text_of

from kairox.testing import trust_workspace

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]

#: a raw JSON-lines server whose tool ``block`` never answers; it records every
#: ``notifications/cancelled`` it receives in the file named by its argument
NEVER_ANSWERS = textwrap.dedent(
    """
    import json, sys
    marker = sys.argv[1]
    def write(m):
        sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        method = msg.get("method")
        if method == "initialize":
            write({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "never", "version": "1"}}})
        elif method == "tools/list":
            write({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "tools": [{"name": "block", "inputSchema": {"type": "object"}}]}})
        elif method == "tools/call":
            with open(marker, "a") as fh:
                fh.write(json.dumps({"called": msg["id"]}) + "\\n")
        elif method == "notifications/cancelled":
            with open(marker, "a") as fh:
                fh.write(json.dumps({"cancelled": msg["params"].get("requestId")}) + "\\n")
        elif "id" in msg:
            write({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
    """
)


def with_never(tmp_path: Path) -> tuple[Workspace, Path]:
    ws = make_workspace(tmp_path, user_config='"never.*" = "allow"\n')
    script = tmp_path / "never.py"
    script.write_text(NEVER_ANSWERS)
    marker = tmp_path / "never.log"
    toml = ws.root / "kairox.toml"
    toml.write_text(
        toml.read_text()
        + f"\n[mcp_servers.never]\ncommand = {sys.executable!r}\nargs = [{str(script)!r}, {str(marker)!r}]\n"
    )
    trust_workspace(ws.root, ws.home, env=ws.env())
    return ws, marker


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
GROWS = textwrap.dedent(
    """
    import json, sys
    tools = [{"name": "grow", "inputSchema": {"type": "object"}}]
    def write(m):
        sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        method = msg.get("method")
        if method == "initialize":
            write({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "grows", "version": "1"}}})
        elif method == "tools/list":
            write({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": tools}})
        elif method == "tools/call":
            if msg["params"]["name"] == "grow" and len(tools) == 1:
                tools.append({"name": "grown", "inputSchema": {"type": "object"}})
                write({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            write({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": "ok"}]}})
        elif "id" in msg:
            write({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
    """
)


async def test_a_registry_change_is_announced(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, user_config='"grows.*" = "allow"\n')
    script = tmp_path / "grows.py"
    script.write_text(GROWS)
    toml = ws.root / "kairox.toml"
    toml.write_text(
        toml.read_text() + f"\n[mcp_servers.grows]\ncommand = {sys.executable!r}\nargs = [{str(script)!r}]\n"
    )
    trust_workspace(ws.root, ws.home, env=ws.env())
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with Client(stdio_params(ws), mode="legacy", message_handler=on_message) as client:  # type: ignore[arg-type]
        tools = {t.name for t in (await client.list_tools()).tools}
        assert "grows_grow" in tools and "grows_grown" not in tools
        assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed
        assert text_of(await client.call_tool("grows_grow", {})) == "ok"
        with anyio.fail_after(30):
            await changed.wait()
        assert "grows_grown" in {t.name for t in (await client.list_tools()).tools}
