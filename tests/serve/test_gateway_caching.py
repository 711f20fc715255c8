"""The gateway's 2026-07-28 caching hints (``ttlMs``, ``cacheScope``), and what it keeps of its
backends' results: nothing that one client's request fetched is served to another.

``kairox serve`` is a real process; its backend ``c`` is ``tests/fixtures/mcp_servers/caching.py``,
which numbers each read of a resource (``read N of URI``) and counts the requests it answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import peers
import pytest
from mcp import Client
from serve_helpers import TOKEN, connect, gateway_client, serve_http, with_backend

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

ALLOW_C = '"c.*" = "allow"\n'


def workspace(tmp_path: Path, *args: str) -> Any:
    server = peers.fixture_server("caching")
    return with_backend(tmp_path, "c", server[0], *server[1:], *args, user_config=ALLOW_C)


async def backend_up(client: Client) -> None:
    with anyio.fail_after(60):
        while "c_counts" not in {t.name for t in (await client.list_tools()).tools}:  # noqa: ASYNC110 - another process
            await anyio.sleep(0.1)


async def read(client: Client, uri: str) -> str:
    result = await client.read_resource(uri)
    text = getattr(result.contents[0], "text", None)
    assert isinstance(text, str)
    return text


async def test_a_private_result_fetched_for_one_client_is_not_served_to_another(tmp_path: Path) -> None:
    """The attack: client A reads a resource its backend marks private and lets the reader keep
    for a minute; client B, another client of the same gateway, reads it next. B must get the
    backend's own answer to B's request (the backend numbers its reads), never A's copy."""
    ws = workspace(tmp_path, "--ttl", "60000")
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        # cache=None: neither client keeps anything itself, so what each sees is what the gateway sent
        async with connect(url, mode="auto", cache=None) as a, connect(url, mode="auto", cache=None) as b:
            await backend_up(a)
            assert await read(a, "count://private") == "read 1 of count://private"
            assert await read(b, "count://private") == "read 2 of count://private"
            assert await read(a, "count://private") == "read 3 of count://private"
            # a public result is not served from a cache either: the gateway keeps none
            assert await read(a, "count://public") == "read 1 of count://public"
            assert await read(b, "count://public") == "read 2 of count://public"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_gateway_says_ttl_0_and_private_on_2026_07_28_only(tmp_path: Path, mode: str) -> None:
    ws = workspace(tmp_path, "--ttl", "60000", "--scope", "public")
    async with gateway_client(ws, "stdio", mode=mode, cache=None) as client:
        await backend_up(client)
        results: dict[str, Any] = {
            "tools/list": await client.list_tools(),
            "prompts/list": await client.list_prompts(),
            "resources/list": await client.list_resources(),
            "resources/templates/list": await client.list_resource_templates(),
            "resources/read": await client.read_resource("count://public"),
            "skill read": await client.read_resource("skill://greet/SKILL.md"),
        }
        assert "c_hello" in {p.name for p in results["prompts/list"].prompts}
        assert "count://public" in {r.uri for r in results["resources/list"].resources}
        for method, result in results.items():
            hinted = {"ttl_ms", "cache_scope"} & result.model_fields_set
            if mode == "legacy":  # the handshake revisions have no such fields
                assert not hinted, method
            else:  # the backend said public and a minute: the gateway says what it can promise
                assert hinted == {"ttl_ms", "cache_scope"}, method
                assert (result.ttl_ms, result.cache_scope) == (0, "private"), method


@pytest.mark.parametrize(("ttl", "relisted"), [("0", 2), ("600000", 0)])
async def test_a_backend_past_its_ttl_is_listed_again_for_a_clients_tools_list(
    tmp_path: Path, ttl: str, relisted: int
) -> None:
    """The gateway keeps its backends' tools in the registry; a backend whose listing is past its
    ``ttlMs`` is listed again when a client asks for the tools, and not before."""
    ws = workspace(tmp_path, "--ttl", ttl)
    async with gateway_client(ws, "stdio", mode="auto", cache=None) as client:
        await backend_up(client)

        async def listed() -> int:
            result = await client.call_tool("c_counts", {})
            text = getattr(result.content[0], "text", "")
            counted: int = json.loads(text)["tools/list"]
            return counted

        before = await listed()
        await client.list_tools()
        await client.list_tools()
        assert await listed() == before + relisted
