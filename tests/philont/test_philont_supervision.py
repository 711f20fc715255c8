"""Supervised plugin hosts: a crash fails the pending calls at once with the stderr tail, the
host restarts with backoff (bounded), and the lifecycle shows in status and events. Real Node
and Python processes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from philont_helpers import Install

from kairox import Event, ServerState, ToolError
from kairox_philont.events import PhilontWorkerFailed, PhilontWorkerReady, PhilontWorkerStarting
from kairox_philont.supervisor import HostProcess, Limits
from kairox_testing import KairoxHarness

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]


def gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def row(rt: Any, name: str) -> Any:
    return next(s for s in rt.status().servers if s.name == name)


def host_of(rt: Any, plugin: str) -> HostProcess:
    from kairox_manifests.loader import loader_of

    loader = loader_of(rt)
    assert loader is not None
    rec = loader.record(plugin)
    assert rec is not None and rec.activation is not None and rec.activation.tools
    host = rec.activation.tools[0]._host  # type: ignore[attr-defined]
    assert isinstance(host, HostProcess)
    return host


def record(rt: Any) -> list[Event]:
    events: list[Event] = []
    rt.events.subscribe(events.append, PhilontWorkerStarting, PhilontWorkerReady, PhilontWorkerFailed)
    return events


async def test_js_worker_crash_mid_call_fails_it_at_once_and_restarts(
    fast_restarts: KairoxHarness, install: Install
) -> None:
    install("secrets-js")
    fast_restarts.env["SECRET_TOKEN"] = "tok-5555"
    async with fast_restarts.open() as rt:
        events = record(rt)
        first = (await rt.call_tool("secrets.pid", {})).structured["pid"]  # type: ignore[index]
        with anyio.fail_after(10), pytest.raises(ToolError) as info:  # not the 30 s startup timeout
            await rt.call_tool("secrets.crash_mid_call", {})
        message = str(info.value)
        assert "exited with code 7" in message and "secrets: lost the vault connection" in message
        host = host_of(rt, "secrets")
        with anyio.fail_after(20):
            await host.wait_state(ServerState.READY)
        second = (await rt.call_tool("secrets.pid", {})).structured["pid"]  # type: ignore[index]
        assert second != first and gone(first)
        assert (await rt.call_tool("secrets.token_tail", {})).text == "5555"  # loaded again, env intact
        status = row(rt, "secrets (worker)")
        assert status.state is ServerState.READY and status.detail == f"pid {second}, 1 restart"
        failed = [e for e in events if isinstance(e, PhilontWorkerFailed)]
        assert len(failed) == 1 and failed[0].will_restart and failed[0].exit_code == 7
        assert "secrets: lost the vault connection" in failed[0].stderr_tail
        assert [type(e).__name__ for e in events] == [
            "PhilontWorkerFailed",
            "PhilontWorkerStarting",
            "PhilontWorkerReady",
        ]
        assert isinstance(events[1], PhilontWorkerStarting) and events[1].attempt == 1
    assert gone(second)


async def test_python_worker_crash_and_restart(fast_restarts: KairoxHarness, install: Install) -> None:
    install("counter-py")
    async with fast_restarts.open() as rt:
        assert (await rt.call_tool("counter.count", {})).structured["count"] == 1  # type: ignore[index]
        before = (await rt.call_tool("counter.count", {})).structured
        assert before is not None and before["count"] == 2
        with anyio.fail_after(10), pytest.raises(ToolError, match="exited with code 5") as info:
            await rt.call_tool("counter.crash", {})
        assert "counter: out of fingers" in str(info.value)
        with anyio.fail_after(20):
            await host_of(rt, "counter").wait_state(ServerState.READY)
        after = (await rt.call_tool("counter.count", {})).structured
        assert after is not None and after["count"] == 1 and after["pid"] != before["pid"]
    assert gone(after["pid"])


async def test_the_shared_node_process_restarts_with_all_its_plugins(
    fast_restarts: KairoxHarness, install: Install
) -> None:
    install("notes-js")
    install("esm-js")
    async with fast_restarts.open() as rt:
        pid = (await rt.call_tool("notes.pid", {})).structured["pid"]  # type: ignore[index]
        with pytest.raises(ToolError, match="exited with code 4"):
            await rt.call_tool("notes.crash", {})
        assert row(rt, "esm (node)").state in (ServerState.FAILED, ServerState.STARTING, ServerState.READY)
        with anyio.fail_after(20):
            await host_of(rt, "esm").wait_state(ServerState.READY)
        assert (await rt.call_tool("esm.where", {})).text.startswith("esm in")
        assert (await rt.call_tool("notes.echo", {"text": "back"})).text == "echo: back"
        # its hooks were registered again in the new process, in the same order
        assert (await rt.call_tool("notes.echo", {"text": "rewrite-me"})).text == "echo: rewritten"
        assert gone(pid)


async def test_restarts_are_bounded(fast_restarts: KairoxHarness, user_home: Path, tmp_path: Path) -> None:
    """After the first crash every start dies in register(): two restarts (max_restarts = 2),
    then the worker stays failed and its calls say why."""
    flag = tmp_path / "crashed-once"
    root = user_home / ".philont" / "plugins" / "flaky"
    root.mkdir(parents=True)
    (root / "plugin.json").write_text('{"id": "flaky", "sandbox": "worker", "domain": "local", "capability": "read"}')
    (root / "index.js").write_text(
        "const fs = require('fs');\n"
        f"const FLAG = {str(flag)!r};\n"
        "exports.register = (ctx) => {\n"
        "  if (fs.existsSync(FLAG)) { console.error('flaky: broken for good'); process.exit(9); }\n"
        "  ctx.registerTool({name: 'die', execute: () => { fs.writeFileSync(FLAG, '1'); process.exit(2); }});\n"
        "};\n"
    )
    async with fast_restarts.open() as rt:
        events = record(rt)
        with pytest.raises(ToolError, match="exited with code 2"):
            await rt.call_tool("flaky.die", {})
        host = host_of(rt, "flaky")
        with anyio.fail_after(30):
            await host.wait_done()
        status = row(rt, "flaky (worker)")
        assert status.state is ServerState.FAILED and "restarting" not in status.detail
        assert any("flaky: broken for good" in line for line in status.log_tail)
        failed = [e for e in events if isinstance(e, PhilontWorkerFailed)]
        assert [e.will_restart for e in failed] == [True, True, False]
        assert [e.retry_in_s for e in failed] == [0.05, 0.1, 0.0]
        with pytest.raises(ToolError, match="not ready"):
            await rt.call_tool("flaky.die", {})


async def test_a_cancelled_runtime_reaps_its_hosts(kairox_harness: KairoxHarness, install: Install) -> None:
    """Ctrl-C in a host program cancels the task holding the runtime: every process goes."""
    install("notes-js")
    install("counter-py")
    pids: list[int] = []
    async with anyio.create_task_group() as tg:

        async def hold() -> None:
            async with kairox_harness.open() as rt:
                pids.append((await rt.call_tool("notes.pid", {})).structured["pid"])  # type: ignore[index]
                pids.append((await rt.call_tool("counter.count", {})).structured["pid"])  # type: ignore[index]
                tg.cancel_scope.cancel()
                await anyio.sleep_forever()

        tg.start_soon(hold)
    assert len(pids) == 2 and all(gone(pid) for pid in pids)


async def test_an_oversized_line_on_the_channel_fails_that_call_only(
    kairox_harness: KairoxHarness, tmp_path: Path
) -> None:
    """A host (a real process speaking the protocol) answers one call with 3 MB, writes
    garbage and 3 MB without a newline: the reader (1 MB limit) skips them, never holding
    more than its limit, fails that call, and the next answer still arrives."""
    peer = tmp_path / "peer.py"
    peer.write_text(
        "import json, os, socket\n"
        "s = socket.socket(fileno=0)\n"
        "s.sendall(b'stray words first\\n' + json.dumps({'type': 'hello', 'pid': os.getpid()}).encode() + b'\\n')\n"
        "for line in s.makefile('rb'):\n"
        "    m = json.loads(line)\n"
        "    if m.get('op') == 'load':\n"
        "        s.sendall(json.dumps({'id': m['id'], 'ready': {'tools': [], 'hooks': []}}).encode() + b'\\n')\n"
        "    elif m.get('name') == 'big':\n"
        "        s.sendall(b'{\"id\": %d, \"result\": {\"text\": \"' % m['id'] + b'x' * 3_000_000 + b'\"}}\\n')\n"
        "        s.sendall(b'not json\\n' + b'z' * 3_000_000)\n"
        "    elif m.get('name') == 'small':\n"
        "        s.sendall(b'\\n' + json.dumps({'id': m['id'], 'result': {'text': 'small'}}).encode() + b'\\n')\n"
    )
    async with kairox_harness.open() as rt:
        host = HostProcess("peer", "test", [sys.executable, str(peer)], {}, tmp_path, rt, Limits(max_line=1024 * 1024))
        try:
            await host.start()
            await host.load("p", {"id": "p"})
            big = await host.request("p", {"op": "tool", "name": "big", "arguments": {}})
            assert "longer than the limit" in big["error"]
            small = await host.request("p", {"op": "tool", "name": "small", "arguments": {}})
            assert small["result"] == {"text": "small"}
            reader = host._attempt.reader
            assert reader.oversized == 2 and reader.buffered == 0
            assert any("stray words first" in line for line in host.stderr_lines())
        finally:
            await host.close()


async def test_python_plugins_return_mcp_style_content_too(kairox_harness: KairoxHarness, user_home: Path) -> None:
    """The same result shapes as JavaScript, in process (direct) and in a worker."""
    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
    body = (
        "def register(ctx):\n"
        "    ctx.registerTool({'name': 'pic', 'execute': lambda a: {'content': [\n"
        "        {'type': 'text', 'text': 'look'},\n"
        "        {'type': 'image', 'data': " + repr(pixel) + ", 'mimeType': 'image/png'}], 'isError': False}})\n"
    )
    for sandbox in ("direct", "worker"):
        root = user_home / ".philont" / "plugins" / f"pic-{sandbox}"
        root.mkdir(parents=True)
        (root / "plugin.json").write_text(
            f'{{"id": "pic{sandbox}", "sandbox": "{sandbox}", "domain": "local", "capability": "read"}}'
        )
        (root / "index.py").write_text(body)
    async with kairox_harness.open() as rt:
        for sandbox in ("direct", "worker"):
            result = await rt.call_tool(f"pic{sandbox}.pic", {})
            kinds = [block.type for block in result.content]
            assert kinds == ["text", "image"] and result.text.startswith("look"), sandbox
