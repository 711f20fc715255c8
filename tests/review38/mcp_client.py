"""``python mcp_client.py WORKSPACE ACTION [ARG]``: talk to ``uv run kairox serve --stdio`` in
WORKSPACE as an MCP client (the environment is the caller's) and print one JSON document.

ACTION: ``tools`` (exported tool names), ``prompts``, ``resources``, ``read URI``,
``prompt NAME``, ``call NAME JSON``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

WORKTREE = Path(__file__).resolve().parents[2]


async def main(workspace: str, action: str, *rest: str) -> None:
    import os

    params = StdioServerParameters(
        command="uv",
        args=["run", "--quiet", "--project", str(WORKTREE), "kairox", "--workspace", workspace, "serve", "--stdio"],
        env=dict(os.environ),
        cwd=workspace,
    )
    async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        out: object
        if action == "tools":
            out = sorted(t.name for t in (await session.list_tools()).tools)
        elif action == "prompts":
            out = [p.model_dump(mode="json") for p in (await session.list_prompts()).prompts]
        elif action == "resources":
            out = [r.model_dump(mode="json") for r in (await session.list_resources()).resources]
        elif action == "read":
            out = (await session.read_resource(rest[0])).model_dump(mode="json")
        elif action == "prompt":
            out = (await session.get_prompt(rest[0], json.loads(rest[1]) if len(rest) > 1 else {})).model_dump(
                mode="json"
            )
        elif action == "call":
            out = (await session.call_tool(rest[0], json.loads(rest[1]))).model_dump(mode="json")
        else:
            raise SystemExit(f"unknown action {action}")
        print(json.dumps(out))


anyio.run(main, *sys.argv[1:])
