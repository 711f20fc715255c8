"""Opens stdio MCP servers with StdioTransport, initialises each, prints their pids, waits forever.

Run by test_sigint_stdio.py, which interrupts it with SIGINT (Ctrl-C) and checks that
nothing it started survives. Arguments: one server per argument, given as a JSON
argv list. Prints ``{"leaders": [...], "descendants": [...]}`` on one line when ready.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import psutil
from mcp import ClientSession

from kairox_mcp.config import McpServerConfig
from kairox_mcp.transport import ConnectContext
from kairox_stdio import StdioTransport


async def main(argvs: list[list[str]]) -> None:
    transport = StdioTransport()
    leaders = []
    async with AsyncExitStack() as stack:
        for i, argv in enumerate(argvs):
            ctx = ConnectContext(server_name=f"s{i}", workspace=Path.cwd(), env=dict(os.environ))
            config = McpServerConfig(command=argv[0], args=argv[1:])
            read, write = await stack.enter_async_context(transport.connect(config, ctx))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            await session.list_tools()
            leaders.append(ctx.diagnostics.pid)
        descendants = [p.pid for p in psutil.Process().children(recursive=True)]
        print(json.dumps({"leaders": leaders, "descendants": descendants}), flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, [json.loads(a) for a in sys.argv[1:]])
