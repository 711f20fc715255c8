"""Latency of lsp.definition through the runtime against a bare framed client.

Two copies of the same language server run side by side on a copy of
tests/fixtures/lsp_project: one behind ``Runtime.call_tool("lsp.definition")``
(policy, hooks, events, document sync, rendering ``path:line:col: source``),
one driven by a bare client written here with asyncio streams (Content-Length
frames, no kairox code). Both ask for the definition of ``Circle`` at
pkg/main.py:6:15 (a line with characters outside the BMP), alternating request
by request so that machine noise hits both alike. A third row times
``LspClient.request`` on the runtime's own connection (the library without the
runtime around it).

    uv run python benchmarks/bench_lsp.py [--server basedpyright|pylsp] [-n 300]

Target: the runtime's median within 1.2x the bare client's.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "lsp_project"
SERVERS = {"basedpyright": ("basedpyright-langserver", ["--stdio"]), "pylsp": ("pylsp", [])}
# line 6 (1-based) is `PAIR = ("😀😀", Circle(3.0))`: column 15 in characters, 16 (0-based) in UTF-16
LINE, COLUMN, UTF16_CHARACTER = 6, 15, 16


class BareClient:
    """The least a client can do: frames, ids, null answers to server requests."""

    def __init__(self, command: list[str], root: Path) -> None:
        self.command = command
        self.root = root
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[Any]] = {}

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            cwd=self.root,
            start_new_session=True,
        )
        self.reader = asyncio.ensure_future(self._read())
        uri = self.root.as_uri()
        await self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "p"}],
                "capabilities": {},
            },
        )
        self.notify("initialized", {})
        main = self.root / "pkg" / "main.py"
        self.main_uri = main.as_uri()
        doc = {"uri": self.main_uri, "languageId": "python", "version": 1, "text": main.read_text()}
        self.notify("textDocument/didOpen", {"textDocument": doc})

    def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        rid = next(self.ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[rid] = future
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return await future

    async def definition(self) -> Any:
        position = {"line": LINE - 1, "character": UTF16_CHARACTER}
        return await self.request(
            "textDocument/definition", {"textDocument": {"uri": self.main_uri}, "position": position}
        )

    async def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            header = await stdout.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1]) for line in header.split(b"\r\n") if line.lower().startswith(b"content-length")
            )
            message = json.loads(await stdout.readexactly(length))
            if "method" in message and "id" in message:  # a server request
                items = (message.get("params") or {}).get("items")
                result = [None] * len(items) if isinstance(items, list) else None
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif "id" in message and message["id"] in self.waiting:
                self.waiting.pop(message["id"]).set_result(message.get("result"))

    async def close(self) -> None:
        self.reader.cancel()
        try:
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass
        await self.proc.wait()


def _stats(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.9)], ordered[0]


async def run(server: str, rounds: int, warmup: int) -> None:
    import kairox_lsp.hooks
    from kairox import Runtime
    from kairox_lsp import LspToolProvider

    name, args = SERVERS[server]
    command = shutil.which(name)
    if command is None:
        sys.exit(f"{name} is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        ws_runtime = Path(tmp) / "runtime"
        ws_bare = Path(tmp) / "bare"
        shutil.copytree(FIXTURE, ws_runtime)
        shutil.copytree(FIXTURE, ws_bare)
        config = {"lsp_servers": {server: {"command": command, "args": args, "languages": ["python"]}}}
        bare = BareClient([command, *args], ws_bare)
        await bare.start()
        try:
            async with Runtime.open(
                ws_runtime,
                home=Path(tmp) / "home",
                load_entrypoints=False,
                plugins=[kairox_lsp.hooks],
                config_files=[],
                config_documents=[("kairox.toml", config)],
            ) as rt:
                provider = rt.providers.get("lsp")
                assert isinstance(provider, LspToolProvider)
                arguments = {"path": "pkg/main.py", "line": LINE, "column": COLUMN}
                first = await rt.call_tool("lsp.definition", arguments)
                expected = bare_expected = None
                assert "pkg/shapes.py:8:7: class Circle:" in first.text, first.text
                client = provider.servers[server].client
                assert client is not None
                doc = provider.servers[server].documents.get(ws_runtime / "pkg" / "main.py")
                assert doc is not None
                params = {
                    "textDocument": {"uri": doc.uri},
                    "position": {"line": LINE - 1, "character": UTF16_CHARACTER},
                }
                bare_expected = await bare.definition()
                expected = await client.request("textDocument/definition", params)
                assert bare_expected and expected, "both servers must find the definition"
                times: dict[str, list[float]] = {"bare": [], "library": [], "runtime": []}
                for i in range(warmup + rounds):
                    order = ["bare", "runtime", "library"] if i % 2 else ["runtime", "bare", "library"]
                    for kind in order:
                        started = time.perf_counter()
                        if kind == "bare":
                            await bare.definition()
                        elif kind == "runtime":
                            result = await rt.call_tool("lsp.definition", arguments)
                        else:
                            await client.request("textDocument/definition", params)
                        elapsed = time.perf_counter() - started
                        if i >= warmup:
                            times[kind].append(elapsed)
                    assert not result.is_error
        finally:
            await bare.close()
    base = statistics.median(times["bare"])
    print(f"lsp.definition latency, {server}, {rounds} rounds after {warmup} warm-up (milliseconds)")
    print(f"{'client':<44} {'median':>8} {'p90':>8} {'min':>8} {'ratio':>7}")
    labels = {
        "bare": "bare framed client (asyncio, no kairox)",
        "library": "LspClient.request (kairox_lsp, no runtime)",
        "runtime": "Runtime.call_tool('lsp.definition')",
    }
    for kind in ("bare", "library", "runtime"):
        median, p90, low = _stats(times[kind])
        print(f"{labels[kind]:<44} {median * 1e3:8.3f} {p90 * 1e3:8.3f} {low * 1e3:8.3f} {median / base:6.2f}x")
    ratio = statistics.median(times["runtime"]) / base
    print(f"runtime / bare median: {ratio:.2f}x (target <= 1.20x): {'met' if ratio <= 1.2 else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", choices=sorted(SERVERS), default="basedpyright")
    parser.add_argument("-n", "--rounds", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    ns = parser.parse_args()
    anyio.run(run, ns.server, ns.rounds, ns.warmup)


if __name__ == "__main__":
    main()
