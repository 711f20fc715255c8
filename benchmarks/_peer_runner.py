"""One benchmark scenario with one MCP client library, in a fresh interpreter.

    python benchmarks/_peer_runner.py LIBRARY SCENARIO '{"servers": [...], ...}'

Prints one JSON document on its last stdout line. The harness
(``bench_peers.py``) runs these interleaved and repeated and reports medians
and ratios. Libraries: ``kairox`` (Runtime API), ``kairox-guard`` (the same with
contrib/kairox-example's ``pre_tool_call`` guard), ``sdk`` (raw ``mcp``
``ClientSession``), ``fastmcp`` (``fastmcp.Client`` with an ``mcpServers``
config), ``langchain`` (``MultiServerMCPClient``, the library's default: a new
session per tool call), ``langchain-session`` (one persistent session),
``pipe`` (raw JSON lines over a pipe: the floor, latency only).

Scenarios:
- ``coldstart``: connect to every server, list every tool, exit (the harness times the process).
- ``latency``: ``calls`` echo calls on the first server; per-call seconds.
- ``parallel``: seconds from start to every server's tools listed.
- ``isolation``: seconds and number of tools available when some servers fail.
- ``scale``: open (every server's tools listed), then close; seconds of each, the tools
  counted, this process's RSS growth over the open, and its CPU seconds from before the
  open to after the close (kairox and sdk only). With ``"warm": server``, the library first opens and closes that one server
  (untimed), so its lazy imports are done before the measurement.
"""

from __future__ import annotations

import atexit
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

Server = dict[str, Any]  # {"name", "command", "args"}


def _result(data: dict[str, Any]) -> None:
    print(json.dumps(data))


def _scratch(prefix: str) -> str:
    """A new temporary directory, removed when this process exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path


def _rss_kib() -> int:
    """This process's resident set size (``VmRSS``), in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


async def _echo_times(
    call: Callable[..., Awaitable[Any]],
    *lead: Any,
    check: Callable[[Any, str], bool],
    calls: int,
    warm: int = 20,
) -> dict[str, Any]:
    """``latency``: ``call(*lead, {"message": ...})`` ``warm`` times untimed, then ``calls`` times,
    each timed alone (the library's own call, no wrapper around it); ``check(reply, message)`` holds."""
    for _ in range(warm):
        await call(*lead, {"message": "warm"})
    times = []
    for i in range(calls):
        message = f"m{i}"
        t0 = time.perf_counter()
        reply = await call(*lead, {"message": message})
        times.append(time.perf_counter() - t0)
        assert check(reply, message), reply
    return {"times": times}


def _first_text(reply: Any, message: str) -> bool:
    return bool(reply.content[0].text == message)


# -- kairox ---------------------------------------------------------------------
def _kairox_doc(servers: list[Server]) -> dict[str, Any]:
    return {
        "mcp_servers": {
            s["name"]: {"command": s["command"], "args": s["args"], "domain": "local", "capability": "read"}
            for s in servers
        }
    }


async def kairox_run(scenario: str, servers: list[Server], calls: int, guard: bool = False) -> dict[str, Any]:
    import kairox

    if scenario != "coldstart":
        # scenarios 2-4 time the client, not imports (every runner imports its SDK before the clock);
        # `import kairox` is lazy, so its runtime module (what `kairox.Runtime` names) is imported
        # here too, as the scale scenario's `kairox.Runtime` argument always was
        import mcp.client.session  # noqa: F401

        from kairox import Runtime  # noqa: F401

    names = {s["name"] for s in servers}
    # the harness's home, kept between runs as a user's is (its entry-point index saves the
    # scan of installed packages); a new empty one when run alone or with --fresh-home
    home = os.environ.get("KAIROX_BENCH_HOME") or _scratch("kairox-bench-home-")
    # kairox's own plugins only: contrib/kairox-example (installed in the dev workspace)
    # adds a pre_tool_call guard to every call, which no peer library pays ("kairox-guard" keeps it)
    env = {**os.environ, "KAIROX_HOME": home}
    if not guard:
        from _common import without_contrib  # here: the other libraries' interpreters may lack attrs

        env = without_contrib(env)
    ws = _scratch("kairox-bench-ws-")
    if scenario == "scale":
        return await _kairox_scale(kairox.Runtime, ws, env, servers, names)
    started = time.perf_counter()
    async with kairox.Runtime.open(ws, env=env, config_documents=[("bench", _kairox_doc(servers))]) as rt:
        ready = time.perf_counter() - started
        tools = [t for t in rt.tools.specs() if t.id.split(".", 1)[0] in names]
        if scenario == "latency":
            name = f"{servers[0]['name']}.echo"
            return await _echo_times(rt.call_tool, name, check=lambda r, m: bool(r.text == m), calls=calls)
    return {"seconds": ready, "tools": len(tools)}


async def _kairox_scale(
    runtime: Any, ws: str, env: dict[str, str], servers: list[Server], names: set[str]
) -> dict[str, Any]:
    rss = _rss_kib()
    async with AsyncExitStack() as stack:
        started = time.perf_counter()
        rt = await stack.enter_async_context(
            runtime.open(ws, env=env, config_documents=[("bench", _kairox_doc(servers))])
        )
        opened = time.perf_counter() - started
        tools = sum(1 for t in rt.tools.specs() if t.id.split(".", 1)[0] in names)
        grown = _rss_kib() - rss
        started = time.perf_counter()
    closed = time.perf_counter() - started
    return {"open": opened, "close": closed, "tools": tools, "rss_kib": grown}


# -- raw SDK ----------------------------------------------------------------------
async def sdk_run(scenario: str, servers: list[Server], calls: int) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    rss = _rss_kib()
    started = time.perf_counter()
    counts: dict[str, int] = {}
    # the tools listed are kept, as a client that hands them to a model keeps them (kairox does)
    listed: dict[str, list[Any]] = {}
    errors: list[str] = []
    if scenario == "latency":
        s = servers[0]
        params = StdioServerParameters(command=s["command"], args=s["args"])
        with open(os.devnull, "w") as devnull:
            async with stdio_client(params, errlog=devnull) as (r, w), ClientSession(r, w) as session:
                await session.initialize()
                return await _echo_times(session.call_tool, "echo", check=_first_text, calls=calls)

    # several servers: each in its own task (contexts must exit in the task that entered them)
    done = anyio.Event()

    async def one(s: Server, ready: anyio.Event) -> None:
        params = StdioServerParameters(command=s["command"], args=s["args"])
        try:
            with open(os.devnull, "w") as devnull:
                async with stdio_client(params, errlog=devnull) as (r, w), ClientSession(r, w) as session:
                    with anyio.fail_after(30):
                        await session.initialize()
                        listed[s["name"]] = (await session.list_tools()).tools
                        counts[s["name"]] = len(listed[s["name"]])
                    ready.set()
                    await done.wait()
        except Exception as exc:
            errors.append(f"{s['name']}: {type(exc).__name__}")
        finally:
            ready.set()

    async with anyio.create_task_group() as tg:
        events = []
        for s in servers:
            ev = anyio.Event()
            events.append(ev)
            tg.start_soon(one, s, ev)
        for ev in events:
            await ev.wait()
        seconds = time.perf_counter() - started
        grown = _rss_kib() - rss
        closing = time.perf_counter()
        done.set()
    closed = time.perf_counter() - closing
    if scenario == "scale":
        return {"open": seconds, "close": closed, "tools": sum(counts.values()), "rss_kib": grown, "errors": errors}
    return {"seconds": seconds, "tools": sum(counts.values()), "errors": errors}


# -- fastmcp ----------------------------------------------------------------------
async def fastmcp_run(scenario: str, servers: list[Server], calls: int) -> dict[str, Any]:
    from fastmcp import Client

    config = {"mcpServers": {s["name"]: {"command": s["command"], "args": s["args"]} for s in servers}}
    started = time.perf_counter()
    try:
        async with Client(config) as client:
            tools = await client.list_tools()
            seconds = time.perf_counter() - started
            if scenario == "latency":
                name = "echo" if len(servers) == 1 else f"{servers[0]['name']}_echo"
                return await _echo_times(client.call_tool, name, check=_first_text, calls=calls)
            return {"seconds": seconds, "tools": len(tools)}
    except Exception as exc:
        return {"seconds": time.perf_counter() - started, "tools": 0, "errors": [f"{type(exc).__name__}: {exc}"[:200]]}


# -- langchain-mcp-adapters ---------------------------------------------------------
async def langchain_run(scenario: str, servers: list[Server], calls: int, persistent: bool) -> dict[str, Any]:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    connections = {s["name"]: {"command": s["command"], "args": s["args"], "transport": "stdio"} for s in servers}
    client = MultiServerMCPClient(connections)  # type: ignore[arg-type]
    started = time.perf_counter()
    if scenario == "latency":
        first = servers[0]["name"]
        async with AsyncExitStack() as stack:
            if persistent:
                from langchain_mcp_adapters.tools import load_mcp_tools

                session = await stack.enter_async_context(client.session(first))
                tools = await load_mcp_tools(session)
            else:
                tools = await client.get_tools(server_name=first)
            echo = next(t for t in tools if t.name == "echo")
            return await _echo_times(
                echo.ainvoke, check=lambda r, m: m in str(r), calls=calls, warm=5 if not persistent else 20
            )
    try:
        tools = await client.get_tools()
    except BaseException as exc:  # an ExceptionGroup when one server fails
        return {"seconds": time.perf_counter() - started, "tools": 0, "errors": [f"{type(exc).__name__}"]}
    return {"seconds": time.perf_counter() - started, "tools": len(tools)}


# -- raw JSON lines (the floor) -------------------------------------------------------
def pipe_run(scenario: str, servers: list[Server], calls: int) -> dict[str, Any]:
    s = servers[0]
    proc = subprocess.Popen(
        [s["command"], *s["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin and proc.stdout

    def rpc(i: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin and proc.stdout
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).encode() + b"\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())  # type: ignore[no-any-return]

    rpc(
        0,
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "0"}},
    )
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    proc.stdin.flush()
    for i in range(20):
        rpc(i + 1, "tools/call", {"name": "echo", "arguments": {"message": "warm"}})
    times = []
    for i in range(calls):
        t0 = time.perf_counter()
        reply = rpc(100 + i, "tools/call", {"name": "echo", "arguments": {"message": f"m{i}"}})
        times.append(time.perf_counter() - t0)
        assert reply["result"]["content"][0]["text"] == f"m{i}"
    proc.stdin.close()
    proc.wait(5)
    return {"times": times}


def main() -> None:
    library, scenario, raw = sys.argv[1], sys.argv[2], sys.argv[3]
    args = json.loads(raw)
    servers: list[Server] = args["servers"]
    calls = int(args.get("calls", 200))
    if library == "pipe":
        _result(pipe_run(scenario, servers, calls))
        return
    runners = {
        "kairox": lambda: kairox_run(scenario, servers, calls),
        "kairox-guard": lambda: kairox_run(scenario, servers, calls, guard=True),
        "sdk": lambda: sdk_run(scenario, servers, calls),
        "fastmcp": lambda: fastmcp_run(scenario, servers, calls),
        "langchain": lambda: langchain_run(scenario, servers, calls, persistent=False),
        "langchain-session": lambda: langchain_run(scenario, servers, calls, persistent=True),
    }
    if scenario == "scale" and args.get("warm"):
        warm = args["warm"]
        anyio.run(lambda: sdk_run("parallel", [warm], 0) if library == "sdk" else kairox_run("parallel", [warm], 0))
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    result = anyio.run(runners[library])
    if scenario == "scale":
        now = resource.getrusage(resource.RUSAGE_SELF)
        result["cpu"] = now.ru_utime - cpu.ru_utime + now.ru_stime - cpu.ru_stime
    _result(result)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
