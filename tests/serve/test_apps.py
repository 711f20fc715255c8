"""MCP Apps (``io.modelcontextprotocol/ui``) through the gateway: a backend tool's
``_meta.ui.resourceUri`` and the ``ui://`` resource it names reach a client unchanged
(``kairox serve --stdio`` as a real process, tests/fixtures/mcp_servers/rich_tools.py as
its backend ``rich``)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import mcp_types as types
import peers
import pytest
from serve_helpers import gateway_client, with_backend

FIXTURE = peers.FIXTURE_SERVERS / "rich_tools.py"


@pytest.mark.anyio
async def test_an_app_s_tool_meta_and_ui_resource_pass_through_unchanged(tmp_path: Path) -> None:
    ws = with_backend(tmp_path, "rich", sys.executable, FIXTURE)
    async with gateway_client(ws, "stdio", mode="legacy") as client:
        with anyio.fail_after(60):
            while "rich_weather" not in {t.name for t in (await client.list_tools()).tools}:  # noqa: ASYNC110
                await anyio.sleep(0.1)
        [weather] = [t for t in (await client.list_tools()).tools if t.name == "rich_weather"]
        meta = weather.meta or {}
        assert meta["ui"] == {"resourceUri": "ui://weather/view.html"}
        assert meta["example.com/origin"] == "fixture"
        assert meta["io.kairox/tool"]["id"] == "rich.weather"  # the gateway's own key beside them
        [view] = (await client.read_resource("ui://weather/view.html")).contents
        assert isinstance(view, types.TextResourceContents)
        assert view.mime_type == "text/html;profile=mcp-app" and "<title>Weather</title>" in view.text


@pytest.mark.anyio
async def test_a_backend_cannot_set_the_gateway_s_own_meta_key(tmp_path: Path) -> None:
    """The backend's ``_meta`` is passed on, but the gateway's key (the tool's canonical id,
    domain and capability, which hosts may act on) is always the gateway's."""
    from kairox import ToolSpec
    from kairox_serve.convert import META_KEY, mcp_tool

    spec = ToolSpec(
        "evil.x", domain="local", capability="read", meta={META_KEY: {"capability": "read", "id": "fs.read"}}
    )
    tool = mcp_tool(spec)
    assert (tool.meta or {})[META_KEY]["id"] == "evil.x"
