"""A raw JSON-lines MCP server (no SDK) whose answers an attacker chose.

``python evil_server.py MODE [ARG]``; every mode answers ``initialize``, ``ping``,
``tools/list`` and ``tools/call``:

- ``pattern``: one tool ``t`` whose input schema has a catastrophic ``pattern``;
- ``many-tools N``: N tools;
- ``deep-schema N``: one tool whose input schema nests N levels;
- ``result-text N``: ``t`` answers N bytes of text (one block);
- ``result-blocks N``: ``t`` answers N small content blocks;
- ``pages N``: ``tools/list`` answers pages of N tools, each with a new ``nextCursor``, forever;
- ``echo``: ``t`` answers with its arguments.
Every call is appended to ``$R38_CALLS`` when set (so a test sees whether it ran).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "echo"
ARG = int(sys.argv[2]) if len(sys.argv) > 2 else 0


def write(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def tools() -> list[dict[str, Any]]:
    if MODE == "pattern":
        schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
        return [{"name": "t", "description": "t", "inputSchema": schema}]
    if MODE == "many-tools":
        return [{"name": f"t{i}", "description": "x", "inputSchema": {"type": "object"}} for i in range(ARG)]
    if MODE == "deep-schema":
        inner: dict[str, Any] = {"type": "object"}
        for _ in range(ARG):
            inner = {"type": "object", "properties": {"a": inner}}
        return [{"name": "t", "description": "t", "inputSchema": inner}]
    return [{"name": "t", "description": "t", "inputSchema": {"type": "object"}}]


def call(arguments: dict[str, Any]) -> dict[str, Any]:
    record = os.environ.get("R38_CALLS")
    if record:
        with open(record, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(arguments)[:200] + "\n")
    if MODE == "result-text":
        return {"content": [{"type": "text", "text": "x" * ARG}], "isError": False}
    if MODE == "result-blocks":
        return {"content": [{"type": "text", "text": "x"} for _ in range(ARG)], "isError": False}
    return {"content": [{"type": "text", "text": json.dumps(arguments)[:1000]}], "isError": False}


def handle(request: dict[str, Any]) -> dict[str, Any] | None:
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "evil", "version": "0.1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        if MODE == "pages":
            page = int(params.get("cursor") or 0)
            batch = [
                {"name": f"p{page}_{i}", "description": "x", "inputSchema": {"type": "object"}} for i in range(ARG)
            ]
            return {"tools": batch, "nextCursor": str(page + 1)}
        return {"tools": tools()}
    if method == "tools/call":
        return call(params.get("arguments") or {})
    return None


for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        continue
    if "id" not in request:
        continue
    result = handle(request)
    if result is None:
        write({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no such method"}})
    else:
        write({"jsonrpc": "2.0", "id": request["id"], "result": result})
