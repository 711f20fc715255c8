"""The process a ``sandbox: "worker"`` plugin runs in (``python -m kairox_philont._worker_host CONFIG``).

Standard library only. It imports the plugin's ``main``, calls ``register(ctx)``
and then serves JSON lines on stdin/stdout:

- host -> parent, once: ``{"type": "ready", "tools": [...], "hooks": [...]}`` or
  ``{"type": "fatal", "error": ..., "traceback": ...}``;
- parent -> host: ``{"id": N, "op": "tool", "name": ..., "arguments": {...}}`` or
  ``{"id": N, "op": "hook", "index": I, "payload": {...}}``;
- host -> parent: ``{"id": N, "result": {...}}`` (tool), ``{"id": N, "value": ...}`` (hook) or
  ``{"id": N, "error": "..."}``.

The protocol uses a private copy of the original stdout; file descriptor 1 is
pointed at stderr, so a plugin that prints cannot corrupt it. The host exits when
stdin closes.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, BinaryIO

from kairox_philont.context import PhilontContext, load_main


class Channel:
    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, default=str, ensure_ascii=False).encode("utf-8") + b"\n"
        with self._lock:
            self._out.write(data)
            self._out.flush()


def to_wire(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        return {"text": value}
    text = getattr(value, "text", None)
    if isinstance(text, str) and hasattr(value, "is_error"):  # a kairox ToolResult
        return {"text": text, "is_error": bool(value.is_error), "structured": getattr(value, "structured", None)}
    try:
        return {"json": json.loads(json.dumps(value, default=str))}
    except (TypeError, ValueError):
        return {"text": str(value)}


async def call(fn: Any, arg: Any) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn(arg)
    value = await asyncio.to_thread(fn, arg)
    if inspect.isawaitable(value):
        value = await value
    return value


async def handle(ctx: PhilontContext, channel: Channel, message: dict[str, Any]) -> None:
    mid = message.get("id")
    try:
        if message.get("op") == "tool":
            tool = ctx.tools.get(str(message.get("name")))
            if tool is None:
                channel.send({"id": mid, "error": f"no tool {message.get('name')!r}"})
                return
            try:
                value = await call(tool.handler, dict(message.get("arguments") or {}))
            except Exception as exc:
                channel.send({"id": mid, "result": {"error": f"{type(exc).__name__}: {exc}"}})
                return
            channel.send({"id": mid, "result": to_wire(value)})
        elif message.get("op") == "hook":
            _event, handler = ctx.hooks[int(message.get("index", -1))]
            value = await call(handler, message.get("payload") or {})
            channel.send({"id": mid, "value": json.loads(json.dumps(value, default=str))})
        else:
            channel.send({"id": mid, "error": f"unknown op {message.get('op')!r}"})
    except Exception as exc:
        channel.send({"id": mid, "error": f"{type(exc).__name__}: {exc}"})


async def serve(ctx: PhilontContext, channel: Channel) -> None:
    loop = asyncio.get_running_loop()
    stdin = sys.stdin.buffer
    tasks: set[asyncio.Task[None]] = set()
    while True:
        line = await loop.run_in_executor(None, stdin.readline)
        if not line:
            break
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        task = loop.create_task(handle(ctx, channel, message))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    for task in list(tasks):
        task.cancel()


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    channel = Channel(os.fdopen(os.dup(1), "wb"))
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    root = Path(config["root"])
    sys.path.insert(0, str(root))
    try:
        module = load_main(Path(config["main"]), config["module"])
        register = getattr(module, "register", None)
        if not callable(register):
            raise TypeError(f"{Path(config['main']).name} has no register(ctx) function")
        env = {name: os.environ[name] for name in config.get("requires_env", []) if name in os.environ}
        ctx = PhilontContext(config["id"], root, env, name=config.get("name", ""), version=config.get("version", ""))
        result = register(ctx)
        if inspect.isawaitable(result):
            asyncio.run(result)  # type: ignore[arg-type]
    except BaseException as exc:
        channel.send({"type": "fatal", "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
        return 1
    channel.send(
        {
            "type": "ready",
            "pid": os.getpid(),
            "tools": [t.describe() for t in ctx.tools.values()],
            "hooks": [event for event, _ in ctx.hooks],
        }
    )
    asyncio.run(serve(ctx, channel))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
