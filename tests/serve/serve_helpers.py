"""A trusted workspace for the gateway tests, and ``kairox serve`` as a real process.

The workspace declares one backend MCP server (``tests/fixtures/mcp_servers/well_behaved.py``
as ``wb``: tools ``wb_echo``, ``wb_sleep``, ``wb_cwd``, ...) and one skill folder (``greet``,
with an argument and a file beside ``SKILL.md``). The user's config (``$KAIROX_HOME/kairox.toml``)
allows ``wb.*``, asks for ``wb.cwd`` and denies ``wb.env``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import peers
from shared_helpers import sdk_stdio

if TYPE_CHECKING:
    from mcp import Client

__all__ = [
    "ACCEPT",
    "INIT",
    "KAIROX",
    "SKILL",
    "TOKEN",
    "Workspace",
    "connect",
    "gateway_client",
    "kairox_env",
    "make_workspace",
    "serve_http",
    "serve_http_up",
    "stop",
    "uvicorn_workers",
    "with_backend",
    "with_script",
]

#: a raw ``initialize`` request, for the tests that speak HTTP without the SDK
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
#: the headers a Streamable HTTP client's POST carries
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

#: the kairox CLI as a fresh interpreter (as the console script runs it), test-sized graces
KAIROX = peers.KAIROX_TEST_GRACES
TOKEN = "s3cret-token-0123456789abcdef"

SKILL = textwrap.dedent(
    """\
    ---
    name: greet
    description: Greet someone by name
    arguments:
      who: {type: string, required: true, description: Who to greet}
    ---
    Say hello to {{ who }}, warmly.
    """
)

USER_CONFIG = textwrap.dedent(
    """\
    [policy.rules]
    "wb.*" = "allow"
    "wb.cwd" = "ask"
    "wb.env" = "deny"
    """
)


class Workspace:
    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.home = home

    def env(self, **extra: str) -> dict[str, str]:
        return kairox_env(self.home, **extra)


def kairox_env(home: Path, **extra: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KAIROX_HOME": str(home), "HOME": str(home)}
    env.update(extra)
    return env


def make_workspace(tmp_path: Path, *, trusted: bool = True, serve: str = "", user_config: str = "") -> Workspace:
    """A workspace under ``tmp_path`` (``ws``, home ``home``), trusted unless told otherwise."""
    from kairox_testing import trust_workspace

    ws = tmp_path / "ws"
    home = tmp_path / "home"
    (ws / ".kairox" / "skills" / "greet" / "references").mkdir(parents=True)
    home.mkdir()
    server = peers.fixture_server("well_behaved")
    (ws / "kairox.toml").write_text(
        f"[mcp_servers.wb]\ncommand = {server[0]!r}\nargs = [{server[1]!r}]\n\n{serve}",
        encoding="utf-8",
    )
    (ws / ".kairox" / "skills" / "greet" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (ws / ".kairox" / "skills" / "greet" / "references" / "notes.md").write_text("# Notes\nbe kind\n", encoding="utf-8")
    (ws / "hello.txt").write_text("hello from the workspace\n", encoding="utf-8")
    (home / "kairox.toml").write_text(USER_CONFIG + user_config, encoding="utf-8")
    if trusted:
        trust_workspace(ws, home, env=kairox_env(home))
    return Workspace(ws, home)


def with_backend(tmp_path: Path, name: str, command: str, *args: str | Path, user_config: str = "") -> Workspace:
    """:func:`make_workspace` with one more backend server, ``name`` (``command args``), trusted."""
    from kairox_testing import trust_workspace

    ws = make_workspace(tmp_path, trusted=False, user_config=user_config)
    toml = ws.root / "kairox.toml"
    argv = ", ".join(repr(str(a)) for a in args)
    toml.write_text(toml.read_text() + f"\n[mcp_servers.{name}]\ncommand = {command!r}\nargs = [{argv}]\n")
    trust_workspace(ws.root, ws.home, env=ws.env())
    return ws


def with_script(tmp_path: Path, name: str, source: str, *args: str, user_config: str = "") -> Workspace:
    """:func:`with_backend` whose server ``name`` is the Python program ``source`` (run with ``args``)."""
    script = tmp_path / f"{name}.py"
    script.write_text(source, encoding="utf-8")
    return with_backend(tmp_path, name, sys.executable, str(script), *args, user_config=user_config)


def raw_server(
    name: str, tools: str | list[str], branches: str = "", *, setup: str = "", list_changed: bool = False
) -> str:
    """A raw JSON-lines MCP server's source, ``serverInfo.name`` ``name``: ``setup`` at module
    level (``json``, ``os``, ``sys``, ``threading`` and ``time`` imported, ``write(message)``
    defined, safe from threads), then for each ``msg`` (its ``method``) ``initialize`` and
    ``tools/list`` answered (``tools``: the names of tools with an object schema, or a Python
    expression for the list), then the ``branches`` (``elif`` clauses); any other request gets
    an empty result."""
    listing = tools if isinstance(tools, str) else repr([{"name": t, "inputSchema": {"type": "object"}} for t in tools])
    capabilities = {"tools": {"listChanged": True} if list_changed else {}}
    head = textwrap.dedent(
        """\
        import json, os, sys, threading, time
        lock = threading.Lock()
        def write(m):
            with lock:
                sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
        """
    )
    loop = textwrap.dedent(
        f"""
        for line in sys.stdin:
            msg = json.loads(line)
            method = msg.get("method")
            if method == "initialize":
                write({{"jsonrpc": "2.0", "id": msg["id"], "result": {{
                    "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {capabilities!r},
                    "serverInfo": {{"name": {name!r}, "version": "1"}}}}}})
            elif method == "tools/list":
                write({{"jsonrpc": "2.0", "id": msg["id"], "result": {{"tools": {listing}}}}})
        """
    )
    rest = """
    elif "id" in msg:
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
    """
    body = textwrap.indent(textwrap.dedent(branches).strip("\n") + textwrap.dedent(rest), "    ")
    return head + textwrap.dedent(setup) + loop + body


async def assert_names_file_and_field(tmp_path: Path, section: str, error: str) -> None:
    """A runtime over the home whose ``kairox.toml`` is ``section`` reports a config error that
    names that file and says ``error`` (its field path and what is wrong)."""
    from kairox import Runtime

    home = tmp_path / "home"
    home.mkdir()
    (home / "kairox.toml").write_text(section, encoding="utf-8")
    async with Runtime.open(tmp_path, start=False, home=home) as rt:
        rendered = [e.render() for e in rt.config.errors]
    assert any(str(home / "kairox.toml") in r and error in r for r in rendered), rendered


def refused(ws: Workspace, *args: str, timeout: float = 60) -> tuple[str, subprocess.CompletedProcess[bytes]]:
    """``kairox -w WS serve ARGS``, which must refuse to start (exit 1): its stderr and the process."""
    proc = subprocess.run(
        [*KAIROX, "-w", str(ws.root), "serve", *args],
        input=b"",
        capture_output=True,
        env=ws.env(),
        timeout=timeout,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    return err, proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End a ``kairox serve`` process group (SIGTERM, then SIGKILL) and reap it."""
    peers._stop_group(proc, grace=10.0)


@contextlib.contextmanager
def listening(
    what: str,
    argv: list[str],
    port: int,
    log: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    *,
    timeout: float = 60,
) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` as a process (its output in ``log``; ``env``: this process's when ``None``),
    yielded once it listens on ``port`` (within ``timeout`` seconds), then stopped; one that
    does not come up is a RuntimeError naming ``what`` with the log's end."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    try:
        try:
            peers.wait_for_port(port, timeout=timeout, proc=proc)
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(f"{what}: {exc}\n{log.read_text(errors='replace')[-3000:]}") from exc
        yield proc
    finally:
        stop(proc)


@contextlib.contextmanager
def serve_http(
    ws: Workspace, *args: str, env: dict[str, str] | None = None, verbose: bool = False
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``kairox [-v] -w WS serve --http --port P ARGS`` as a process; yields (``http://127.0.0.1:P/mcp``,
    the process). Its output is in ``serve-P.log`` beside the workspace (``-v``: warnings and info too)."""
    port = peers.free_port()
    argv = [*KAIROX, *(["-v"] if verbose else []), "-w", str(ws.root), "serve", "--http", "--port", str(port), *args]
    with listening("kairox serve --http", argv, port, ws.root.parent / f"serve-{port}.log", env or ws.env()) as proc:
        yield f"http://127.0.0.1:{port}/mcp", proc


@contextlib.contextmanager
def serve_http_up(ws: Workspace, tool: str, *args: str, mode: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """:func:`serve_http` with the token ``TOKEN``, once an SDK client (``connect(mode=mode)``) lists
    ``tool``: its backend is up. For a fixture, which an async test asks for inside its event loop,
    so the client runs on a thread of its own."""
    with serve_http(ws, "--token-env", "MCP_TOKEN", *args, env=ws.env(MCP_TOKEN=TOKEN)) as (url, proc):

        async def backend_up() -> None:
            async with connect(url, mode=mode) as client:
                assert tool in {t.name for t in (await client.list_tools()).tools}

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(anyio.run, backend_up).result()
        yield url, proc


@contextlib.contextmanager
def uvicorn_workers(ws: Workspace, workers: int, env: dict[str, str], *args: str) -> Iterator[str]:
    """``uvicorn kairox_serve.asgi:app --workers N ARGS`` as a process; yields the endpoint URL."""
    port = peers.free_port()
    argv = [sys.executable, "-m", "uvicorn", "kairox_serve.asgi:app", "--port", str(port), "--workers", str(workers)]
    argv += args
    with listening("uvicorn", argv, port, ws.root.parent / f"uvicorn-{port}.log", env, cwd=ws.root.parent):
        yield f"http://127.0.0.1:{port}/mcp"


def stdio_params(ws: Workspace) -> object:
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=KAIROX[0], args=[*KAIROX[1:], "-w", str(ws.root), "serve", "--stdio"], env=ws.env()
    )


@contextlib.asynccontextmanager
async def connect(url: str, token: str | None = TOKEN, **kwargs: Any) -> AsyncIterator[Client]:
    """An SDK ``Client`` of the gateway at ``url`` (with ``Authorization: Bearer token``)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    limits = kwargs.pop("limits", None)
    async with httpx2.AsyncClient(headers=headers, timeout=60, **({"limits": limits} if limits else {})) as http:
        async with Client(streamable_http_client(url, http_client=http), **kwargs) as client:
            yield client


@contextlib.asynccontextmanager
async def gateway_client(ws: Workspace, transport: str, *args: str, **kwargs: Any) -> AsyncIterator[Client]:
    """An SDK ``Client`` (``kwargs``) of ``kairox serve --stdio`` or ``--http ARGS`` (with a
    token), a real process either way."""
    from mcp import Client

    if transport == "stdio":
        async with Client(sdk_stdio(stdio_params(ws)), **kwargs) as client:
            yield client
        return
    with serve_http(ws, "--token-env", "MCP_TOKEN", *args, env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        async with connect(url, **kwargs) as client:
            yield client
