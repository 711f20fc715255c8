"""Gateway benchmark: a tool call through ``kairox serve`` against the same call straight
to the backend server. Prints a table of ratios.

    uv run python benchmarks/bench_serve.py [--calls 300]

The backend is npm server-everything over stdio (tool ``echo``). Clients, one call each in
turn (round robin, so machine noise hits all alike), all the mcp SDK's ``ClientSession``:
- straight to the backend (``stdio_client`` of ``node server-everything stdio``),
- through ``kairox serve --stdio`` (the gateway's tool ``ev_echo``: the gateway's server,
  a kairox session's ``call_tool`` with policy and events, kairox-stdio to the same backend),
- through ``kairox serve --http`` (streamable HTTP on 127.0.0.1, bearer token).
Median and p99 of each, and the ratios to the direct call (target: stdio gateway <= 1.3x).

Not a test: numbers depend on the machine; the script only reports them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

TOKEN = "bench-token-0123456789"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def workspace(root: Path, js: Path) -> tuple[Path, dict[str, str]]:
    from kairox.testing import trust_workspace

    ws, home = root / "ws", root / "home"
    ws.mkdir()
    home.mkdir()
    (ws / "kairox.toml").write_text(f'[mcp_servers.ev]\ncommand = "node"\nargs = ["{js}", "stdio"]\n')
    (home / "kairox.toml").write_text('[policy.rules]\n"ev.*" = "allow"\n')
    env = {"PATH": os.environ["PATH"], "KAIROX_HOME": str(home), "HOME": str(home)}
    trust_workspace(ws, home, env=env)
    return ws, env


@contextlib.contextmanager
def http_gateway(ws: Path, env: dict[str, str]) -> Iterator[str]:
    import peers

    port = peers.free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from kairox.cli import main; sys.exit(main())",
            "-w",
            str(ws),
            "serve",
            "--http",
            "--port",
            str(port),
            "--token-env",
            "BENCH_TOKEN",
        ],
        env={**env, "BENCH_TOKEN": TOKEN},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        peers.wait_for_port(port, timeout=60, proc=proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        peers._stop_group(proc)


async def bench(calls: int) -> list[tuple[str, float, float]]:
    import httpx2
    import peers
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    js = peers.everything_server_js()
    samples: dict[str, list[float]] = {
        "direct to the backend": [],
        "kairox serve --stdio": [],
        "kairox serve --http": [],
    }
    with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as devnull:
        ws, env = workspace(Path(tmp), js)
        direct = StdioServerParameters(command="node", args=[str(js), "stdio"])
        gateway = StdioServerParameters(
            command=sys.executable,
            args=["-c", "import sys; from kairox.cli import main; sys.exit(main())", "-w", str(ws), "serve", "--stdio"],
            env=env,
        )
        async with contextlib.AsyncExitStack() as stack:
            url = stack.enter_context(http_gateway(ws, env))
            sessions: dict[str, tuple[Any, str]] = {}
            for name, params, tool in (
                ("direct to the backend", direct, "echo"),
                ("kairox serve --stdio", gateway, "ev_echo"),
            ):
                read, write = await stack.enter_async_context(stdio_client(params, errlog=devnull))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                sessions[name] = (session, tool)
            http = await stack.enter_async_context(httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}))
            read, write = await stack.enter_async_context(streamable_http_client(url, http_client=http))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions["kairox serve --http"] = (session, "ev_echo")

            def caller(session: Any, tool: str) -> Callable[[], Awaitable[None]]:
                async def call() -> None:
                    result = await session.call_tool(tool, {"message": "hi"})
                    assert result.content[0].text == "Echo: hi", result

                return call

            clients = [(name, caller(*sessions[name])) for name in samples]
            for _, fn in clients:  # warm-up
                for _ in range(50):
                    await fn()
            for i in range(calls):
                for k in range(len(clients)):
                    name, fn = clients[(i + k) % len(clients)]
                    start = time.perf_counter()
                    await fn()
                    samples[name].append(time.perf_counter() - start)
    return [(name, statistics.median(v), pct(v, 0.99)) for name, v in samples.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    rows = anyio.run(bench, args.calls)
    base = rows[0][1]
    print(f"tool call latency, {args.calls} calls each (server-everything echo over stdio)\n")
    print(f"| {'client':<24} | median ms | p99 ms | median / direct |")
    print(f"|{'-' * 26}|-----------|--------|-----------------|")
    for name, median, p99 in rows:
        print(f"| {name:<24} | {median * 1000:9.3f} | {p99 * 1000:6.3f} | {median / base:14.2f}x |")
    print("\ntarget: kairox serve --stdio within 1.3x of the direct call")


if __name__ == "__main__":
    main()
