"""The process a Python ``sandbox: "worker"`` plugin runs in (``python -m kairox_philont._worker_host CONFIG``).

Standard library only (its environment holds nothing but the plugin's
``requiresEnv``). It speaks the JSON lines of :mod:`kairox_philont.protocol`:
``hello`` first, then ``load`` (import ``main``, call ``register(ctx)``), ``tool``,
``hook``, ``cancel`` and ``unload`` requests.

The protocol runs over file descriptor 0, a socket kairox holds the other end
of (both directions); fd 0 is then pointed at ``/dev/null``, and stdout/stderr
are diagnostics (kairox keeps a bounded tail), so a plugin that prints or reads
its input cannot corrupt it. The host exits when its input ends.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import socket
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, BinaryIO

from kairox_philont.context import PhilontContext, load_main

MAX_STACK = 4000


class Channel:
    def __init__(self, sock: socket.socket, max_line: int) -> None:
        self._sock = sock
        self._lock = threading.Lock()
        self.max_line = max_line

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, default=str, ensure_ascii=False).encode("utf-8")
        if len(data) > self.max_line:
            why = f"the answer ({len(data)} bytes) is longer than the limit ({self.max_line} bytes)"
            short = {"id": message.get("id"), "result": {"error": why}} if "result" in message else None
            data = json.dumps(short or {"id": message.get("id"), "error": why}).encode("utf-8")
        with self._lock:
            try:
                self._sock.sendall(data + b"\n")
            except OSError:  # kairox went away: nobody to answer
                pass


def to_wire(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        return {"text": value}
    text = getattr(value, "text", None)
    if isinstance(text, str) and hasattr(value, "is_error"):  # a kairox ToolResult
        return {"text": text, "is_error": bool(value.is_error), "structured": getattr(value, "structured", None)}
    if isinstance(value, dict) and isinstance(value.get("content"), list):  # MCP-style
        wire: dict[str, Any] = {"content": value["content"], "is_error": bool(value.get("isError"))}
        if isinstance(value.get("structuredContent"), dict):
            wire["structured"] = value["structuredContent"]
        return json.loads(json.dumps(wire, default=str))  # type: ignore[no-any-return]
    try:
        return {"json": json.loads(json.dumps(value, default=str))}
    except (TypeError, ValueError):
        return {"text": str(value)}


def error_of(exc: BaseException) -> dict[str, Any]:
    return {"error": f"{type(exc).__name__}: {exc}", "stack": traceback.format_exc()[-MAX_STACK:]}


async def call(fn: Any, arg: Any) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn(arg)
    value = await asyncio.to_thread(fn, arg)
    if inspect.isawaitable(value):
        value = await value
    return value


class Host:
    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.plugins: dict[str, PhilontContext] = {}
        self.tasks: dict[Any, asyncio.Task[None]] = {}

    async def load(self, spec: dict[str, Any]) -> dict[str, Any]:
        root = Path(spec["root"])
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        module = load_main(Path(spec["main"]), spec["module"])
        register = getattr(module, "register", None)
        if not callable(register):
            raise TypeError(f"{Path(spec['main']).name} has no register(ctx) function")
        ctx = PhilontContext(
            spec["id"], root, dict(spec.get("env") or {}), name=spec.get("name", ""), version=spec.get("version", "")
        )
        result = register(ctx)
        if inspect.isawaitable(result):
            await result
        self.plugins[spec["id"]] = ctx
        return {"tools": [t.describe() for t in ctx.tools.values()], "hooks": [event for event, _ in ctx.hooks]}

    async def handle(self, message: dict[str, Any]) -> None:
        mid = message.get("id")
        op = message.get("op")
        send = self.channel.send
        try:
            if op == "load":
                try:
                    send({"id": mid, "ready": await self.load(message["plugin"])})
                except BaseException as exc:
                    send({"id": mid, "fatal": error_of(exc)})
                return
            if op == "unload":
                self.plugins.pop(str(message.get("plugin")), None)
                send({"id": mid, "value": None})
                return
            ctx = self.plugins.get(str(message.get("plugin")))
            if ctx is None:
                send({"id": mid, "error": f"no plugin {message.get('plugin')!r}"})
            elif op == "tool":
                tool = ctx.tools.get(str(message.get("name")))
                if tool is None:
                    send({"id": mid, "error": f"no tool {message.get('name')!r}"})
                    return
                try:
                    value = await call(tool.handler, dict(message.get("arguments") or {}))
                except Exception as exc:
                    send({"id": mid, "result": error_of(exc)})
                    return
                send({"id": mid, "result": to_wire(value)})
            elif op == "hook":
                _event, handler = ctx.hooks[int(message.get("index", -1))]
                value = await call(handler, message.get("payload") or {})
                send({"id": mid, "value": json.loads(json.dumps(value, default=str))})
            else:
                send({"id": mid, "error": f"unknown op {op!r}"})
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            send({"id": mid, **error_of(exc)})

    def dispatch(self, message: dict[str, Any]) -> None:
        loop = asyncio.get_running_loop()
        if message.get("op") == "cancel":
            task = self.tasks.get(message.get("id"))
            if task is not None:
                task.cancel()
            return
        task = loop.create_task(self.handle(message))
        key = message.get("id")
        self.tasks[key] = task
        task.add_done_callback(lambda _t: self.tasks.pop(key, None))


def read_line(stdin: BinaryIO, max_line: int) -> bytes | None:
    """The next line (``b""`` for one too long, skipped), ``None`` at the end of input."""
    line = stdin.readline(max_line + 1)
    if not line:
        return None
    if len(line) > max_line and not line.endswith(b"\n"):
        while True:
            rest = stdin.readline(max_line)
            if not rest or rest.endswith(b"\n"):
                return b""
    return line


async def serve(host: Host, stdin: BinaryIO, max_line: int) -> None:
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, read_line, stdin, max_line)
        if line is None:
            break
        try:
            message = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(message, dict):
            host.dispatch(message)
    for task in list(host.tasks.values()):
        task.cancel()


def main(argv: list[str]) -> int:
    config = json.loads(argv[1]) if len(argv) > 1 else {}
    max_line = int(config.get("max_line") or 64 * 1024 * 1024)
    sock = socket.socket(fileno=os.dup(0))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    channel = Channel(sock, max_line)
    host = Host(channel)
    channel.send({"type": "hello", "pid": os.getpid(), "python": sys.version.split()[0]})
    asyncio.run(serve(host, sock.makefile("rb"), max_line))
    sys.stderr.flush()
    os._exit(0)  # threads running a sync handler do not hold the exit


if __name__ == "__main__":
    sys.exit(main(sys.argv))
