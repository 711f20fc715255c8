"""Issue 9: SIGKILL to a server's process group at random moments, while 20 workers
call three servers concurrently (``threaded.py``: answers out of order).

Every call returns its own echo or raises a ``ToolError`` naming the server (with the
kill in its diagnostic when the call was in flight); none is lost (each returns or
raises within a bound) and none gets another call's answer; calls that fail fall in a
window where that server was down; the server that is never killed never fails a call;
the killed servers restart per ``max_restarts`` / ``restart_backoff``; closing leaves
no process behind.
"""

from __future__ import annotations

import os
import random
import sys
import time
import uuid
from typing import Any

import anyio
import attrs
import pytest
from fault_helpers import Clock, kill_group, open_runtime, pids_of, script, wait_ready

from kairox._types import ServerState
from kairox.errors import ToolError, ToolNotFound
from kairox_mcp.events import McpServerFailed, McpServerReady
from kairox_mcp.manager import manager_of

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]

WORKERS = 20
KILLABLE = ("k0", "k1")
STEADY = "steady"
SERVERS = (*KILLABLE, STEADY)
KILLS = 6
#: no call may take longer than this (a hang is a lost call)
CALL_BOUND = 15.0
MIN_CALLS_PER_WORKER = 40


@attrs.define
class Outcome:
    server: str
    message: str
    started: float
    ended: float
    text: str | None = None
    error: BaseException | None = None


def classify(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, ToolNotFound):
        return "tool unregistered (server down)"
    if "closed the connection" in text:
        return "in flight when killed"
    if "is not ready" in text:
        return "server not ready"
    return f"other: {type(exc).__name__}"


def down_windows(
    kills: list[tuple[str, float, int]], ready: list[tuple[str, float]], end: float
) -> dict[str, list[tuple[float, float]]]:
    """Per server: [kill time, first ready time after it] (or ``end`` if it never came back)."""
    windows: dict[str, list[tuple[float, float]]] = {name: [] for name in SERVERS}
    for name, killed_at, _pid in kills:
        back = min((t for n, t in ready if n == name and t > killed_at), default=end)
        windows[name].append((killed_at, back))
    return windows


async def test_random_sigkill_under_concurrent_calls(tmp_path: Any) -> None:
    seed = int(os.environ.get("KAIROX_FAULT_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    servers = {
        name: script("threaded", "--name", name, max_restarts=KILLS, restart_backoff=0.1, tool_timeout=CALL_BOUND)
        for name in SERVERS
    }
    clock = Clock()
    outcomes: list[Outcome] = []
    kills: list[tuple[str, float, int]] = []
    ready: list[tuple[str, float]] = []
    failed: list[McpServerFailed] = []
    killer_done = anyio.Event()
    with anyio.fail_after(180):
        async with open_runtime(tmp_path, servers) as rt:
            first_pids = pids_of(rt)
            rt.events.subscribe(lambda e: ready.append((e.server, clock())), McpServerReady)
            rt.events.subscribe(failed.append, McpServerFailed)

            async def worker(w: int) -> None:
                i = 0
                while i < MIN_CALLS_PER_WORKER or not killer_done.is_set():
                    server = rng.choice(SERVERS)
                    message = f"{server}/w{w}/c{i}/{uuid.uuid4().hex}"
                    out = Outcome(server, message, clock(), 0.0)
                    try:
                        with anyio.fail_after(CALL_BOUND):
                            result = await rt.call_tool(
                                f"{server}.slow_echo", {"message": message, "delay": rng.uniform(0, 0.02)}
                            )
                        out.text = result.text
                    except (ToolError, TimeoutError) as exc:
                        out.error = exc
                    out.ended = clock()
                    outcomes.append(out)
                    i += 1

            async def killer() -> None:
                try:
                    for _ in range(KILLS):
                        await anyio.sleep(rng.uniform(0.2, 0.6))
                        name = rng.choice(KILLABLE)
                        # a crash after ready: the restart policy applies. Not the process killed
                        # last time: until the lifecycle has seen it die it may still say ready
                        killed_before = next((pid for n, _, pid in reversed(kills) if n == name), None)
                        server = await wait_ready(rt, name, not_pid=killed_before)
                        await anyio.sleep(rng.uniform(0, 0.05))  # somewhere inside the stream of calls
                        kills.append((name, clock(), kill_group(server)))
                finally:
                    killer_done.set()

            started = time.monotonic()
            async with anyio.create_task_group() as tg:
                tg.start_soon(killer)
                for w in range(WORKERS):
                    tg.start_soon(worker, w)
            storm_s = time.monotonic() - started

            # every killed server came back (restart policy), on a new process, and serves; not
            # the process killed last: until the lifecycle has seen it die it may still say ready
            for name in SERVERS:
                last_killed = next((pid for n, _, pid in reversed(kills) if n == name), None)
                await wait_ready(rt, name, not_pid=last_killed)
            mcp = manager_of(rt)
            for name in SERVERS:
                text = (await rt.call_tool(f"{name}.echo", {"message": f"after {name}"})).text
                assert text == f"after {name}"
            end = clock()
            killed_count = {name: sum(1 for n, _, _ in kills if n == name) for name in SERVERS}
            for name in SERVERS:
                server = mcp.server(name)
                assert server.state is ServerState.READY
                assert server.restarts == killed_count[name], (name, server.restarts, killed_count)
                if killed_count[name]:
                    assert pids_of(rt)[name] != first_pids[name]
                else:
                    assert pids_of(rt)[name] == first_pids[name]

    # -- what the calls saw --------------------------------------------------------------
    assert len(kills) == KILLS
    lost = [o for o in outcomes if isinstance(o.error, TimeoutError)]
    assert not lost, f"seed {seed}: {len(lost)} calls did not end within {CALL_BOUND} s: {lost[:3]}"
    mixed = [o for o in outcomes if o.error is None and o.text != o.message]
    assert not mixed, f"seed {seed}: answers mixed up: {mixed[:3]}"
    errors = [o for o in outcomes if o.error is not None]
    assert not [o for o in errors if o.server == STEADY], f"seed {seed}: the server never killed failed a call"
    windows = down_windows(kills, ready, end)
    for o in errors:
        text = str(o.error)
        # the error names the server (its tool id or "MCP server <name>")
        assert f"{o.server}.slow_echo" in text or f"MCP server {o.server}" in text, text
        if classify(o.error) == "in flight when killed":  # the diagnostic says how it died
            assert "killed by SIGKILL" in text and "exit code -9" in text, text
        # a restarting server keeps its tools: calls say "not ready" and why, never "no tool named"
        assert classify(o.error) in ("in flight when killed", "server not ready"), text
        if classify(o.error) == "server not ready":
            assert "killed by SIGKILL" in text or "restart" in text, text
        # it failed while its server was down: between a kill and the restart after it
        assert any(o.ended >= k - 0.05 and o.started <= back + 0.05 for k, back in windows[o.server]), (
            f"seed {seed}: {o} outside the down windows {windows[o.server]}"
        )
    assert sum(1 for o in errors if classify(o.error) == "in flight when killed") >= 1
    # one McpServerFailed per kill, each announcing a restart
    assert len(failed) == KILLS and all(e.will_restart and e.exit_code == -9 for e in failed)

    kinds: dict[str, int] = {}
    for o in errors:
        kinds[classify(o.error)] = kinds.get(classify(o.error), 0) + 1
    durations = sorted(o.ended - o.started for o in outcomes)
    print(
        f"[reliability] random SIGKILL (seed {seed}): {len(outcomes)} calls by {WORKERS} workers over "
        f"{len(SERVERS)} servers in {storm_s:.1f} s, {KILLS} kills ({killed_count}); "
        f"{len(outcomes) - len(errors)} ok, {len(errors)} errors {kinds}; slowest call "
        f"{durations[-1]:.2f} s",
        file=sys.stderr,
    )


async def test_restart_policy_gives_up_after_max_restarts(tmp_path: Any) -> None:
    servers = {
        "fragile": script("threaded", "--name", "fragile", max_restarts=1, restart_backoff=0.1),
        "good": script("threaded", "--name", "good"),
    }
    failed: list[McpServerFailed] = []
    with anyio.fail_after(60):
        async with open_runtime(tmp_path, servers) as rt:
            rt.events.subscribe(failed.append, McpServerFailed)
            mcp = manager_of(rt)
            first = kill_group(mcp.server("fragile"))
            server = await wait_ready(rt, "fragile", not_pid=first)
            assert server.restarts == 1
            assert (await rt.call_tool("fragile.echo", {"message": "back"})).text == "back"
            kill_group(server)
            with anyio.fail_after(10):
                await server.wait_done()
            assert server.state is ServerState.FAILED
            assert "killed by SIGKILL" in server.detail and "restarting" not in server.detail
            assert [e.will_restart for e in failed] == [True, False]
            assert failed[0].retry_in_s == pytest.approx(0.1)
            with pytest.raises(ToolNotFound):
                await rt.call_tool("fragile.echo", {"message": "gone"})
            assert (await rt.call_tool("good.echo", {"message": "still here"})).text == "still here"
            assert "fragile" in {s.name for s in mcp.status() if s.state is ServerState.FAILED}
