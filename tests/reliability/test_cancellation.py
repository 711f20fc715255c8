"""Issue 9: cancelling a call in flight.

The caller's cancel scope (or ``call_tool(timeout=)``, or the server's
``tool_timeout``) ends the call promptly; the server is told with
``notifications/cancelled`` naming the request (``threaded.py --record`` writes
down every message it receives, and interrupts the call it names); the next call
on the same server works, and so does the other server.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from fault_helpers import open_runtime, script

from kairox._types import ServerState
from kairox.errors import ToolError
from kairox_mcp.manager import manager_of

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]


def received(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def wait_for(path: Path, predicate: Any, what: str, timeout: float = 5.0) -> list[dict[str, Any]]:
    """Until some received entries match ``predicate``; returns them."""
    with anyio.fail_after(timeout):
        while True:
            hits = [e for e in received(path) if predicate(e)]
            if hits:
                return hits
            await anyio.sleep(0.02)
    raise AssertionError(what)  # pragma: no cover - fail_after raises first


def servers(record: Path, **fields: Any) -> dict[str, dict[str, Any]]:
    return {
        "rec": script("threaded", "--name", "rec", "--record", str(record), **fields),
        "good": script("well_behaved", "--name", "good"),
    }


async def sleep_call_id(record: Path) -> Any:
    """The JSON-RPC id of the one ``tools/call sleep`` the server received."""
    calls = await wait_for(record, lambda e: e.get("tool") == "sleep", "the sleep call reached the server")
    assert len(calls) == 1
    return calls[0]["id"]


async def assert_told_and_still_serving(rt: Any, record: Path, request_id: Any) -> dict[str, Any]:
    cancelled = await wait_for(
        record,
        lambda e: e.get("method") == "notifications/cancelled" and e.get("requestId") == request_id,
        f"notifications/cancelled for request {request_id}",
    )
    await wait_for(record, lambda e: e.get("event") == "interrupted" and e.get("id") == request_id, "interrupted")
    assert (await rt.call_tool("rec.echo", {"message": "next"})).text == "next"
    assert (await rt.call_tool("good.echo", {"message": "other"})).text == "other"
    assert manager_of(rt).server("rec").state is ServerState.READY
    # nothing answered the cancelled request: the server sent no result for it
    assert not [e for e in received(record) if e.get("event") == "answered" and e.get("id") == request_id]
    return cancelled[0]


async def test_caller_cancel_scope_cancels_the_call_and_tells_the_server(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    with anyio.fail_after(60):
        async with open_runtime(tmp_path, servers(record)) as rt:
            outcome: list[str] = []
            cancelled_at = ended_at = 0.0
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    nonlocal ended_at
                    with anyio.CancelScope() as scope:
                        scopes.append(scope)
                        await rt.call_tool("rec.sleep", {"seconds": 60})
                        outcome.append("returned")
                    ended_at = time.monotonic()
                    outcome.append("cancelled" if scope.cancelled_caught else "not cancelled")

                scopes: list[anyio.CancelScope] = []
                tg.start_soon(call)
                request_id = await sleep_call_id(record)
                cancelled_at = time.monotonic()
                scopes[0].cancel()
            latency = ended_at - cancelled_at
            assert outcome == ["cancelled"]
            assert latency < 1.0
            note = await assert_told_and_still_serving(rt, record, request_id)
            assert note["reason"]
    print(f"[reliability] caller cancel: call ended {latency * 1000:.1f} ms after cancel", file=sys.stderr)


async def test_call_tool_timeout_cancels_the_call_and_tells_the_server(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    with anyio.fail_after(60):
        async with open_runtime(tmp_path, servers(record)) as rt:
            started = time.monotonic()
            with pytest.raises(ToolError, match=r"rec\.sleep: timed out after 0\.5 s"):
                await rt.call_tool("rec.sleep", {"seconds": 60}, timeout=0.5)
            assert time.monotonic() - started < 2.0
            request_id = await sleep_call_id(record)
            await assert_told_and_still_serving(rt, record, request_id)


async def test_tool_timeout_cancels_the_call_and_tells_the_server(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    with anyio.fail_after(60):
        async with open_runtime(tmp_path, servers(record, tool_timeout=0.5)) as rt:
            started = time.monotonic()
            with pytest.raises(ToolError) as info:
                await rt.call_tool("rec.sleep", {"seconds": 60})
            elapsed = time.monotonic() - started
            assert (
                str(info.value) == "tools/call sleep timed out after 0.5 s (MCP server rec; the request was cancelled)"
            )
            assert elapsed < 2.0
            request_id = await sleep_call_id(record)
            note = await assert_told_and_still_serving(rt, record, request_id)
            # the SDK's own timeout wrote it, in its own words
            assert note["reason"] == "timed out after 0.5s"


async def test_many_calls_cancelled_at_once(tmp_path: Path) -> None:
    """Ten sleeps in flight are cancelled together while echoes on the same server go on."""
    record = tmp_path / "received.jsonl"
    with anyio.fail_after(60):
        async with open_runtime(tmp_path, servers(record)) as rt:
            async with anyio.create_task_group() as tg:
                for i in range(10):
                    tg.start_soon(rt.call_tool, "rec.sleep", {"seconds": 60 + i})
                with anyio.fail_after(10):
                    while len([e for e in received(record) if e.get("tool") == "sleep"]) < 10:  # noqa: ASYNC110
                        await anyio.sleep(0.02)
                # the server is busy with ten calls and still answers others
                texts = [(await rt.call_tool("rec.echo", {"message": f"m{i}"})).text for i in range(5)]
                assert texts == [f"m{i}" for i in range(5)]
                started = time.monotonic()
                tg.cancel_scope.cancel()
            assert time.monotonic() - started < 1.0
            ids = {e["id"] for e in received(record) if e.get("tool") == "sleep"}
            with anyio.fail_after(5):
                while True:
                    told = {e["requestId"] for e in received(record) if e.get("method") == "notifications/cancelled"}
                    interrupted = {e["id"] for e in received(record) if e.get("event") == "interrupted"}
                    if ids <= told and ids <= interrupted:
                        break
                    await anyio.sleep(0.02)
            assert (await rt.call_tool("rec.echo", {"message": "after"})).text == "after"
            assert (await rt.call_tool("good.echo", {"message": "other"})).text == "other"
