"""``python http_probe.py URL tools`` or ``python http_probe.py URL call NAME JSON``: one MCP
client of a ``kairox serve --http`` gateway; prints the tool names, or the call's result."""

from __future__ import annotations

import json
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, action: str, *rest: str) -> None:
    async with httpx2.AsyncClient(timeout=600) as http, Client(streamable_http_client(url, http_client=http)) as client:
        if action == "tools":
            print(json.dumps(sorted(t.name for t in (await client.list_tools()).tools)))
        else:
            result = await client.call_tool(rest[0], json.loads(rest[1]))
            print(json.dumps(result.model_dump(mode="json"))[:2000])


anyio.run(main, *sys.argv[1:])
