"""``kairox_mcp.lifecycle.import_client``: concurrent first calls all get the finished module.

The first MCP server to start imports ``kairox_mcp.client`` (and ``mcp``) in a worker
thread. While that import runs, the module is already in ``sys.modules``,
half-initialised; the old code returned it from there to every other server starting
at the same moment, which then failed on ``module.McpClient``. The race is made
deterministic with a meta path hook that holds the import (module already in
``sys.modules``) for a moment, and repeated in one fresh interpreter: each round removes
``kairox_mcp.client`` and ``mcp*`` from ``sys.modules``, resets the remembered module, and
has many staggered tasks call ``import_client()`` at once. The same harness runs the old
code as the control, so the test is seen to catch the race.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

RACE = r"""
import importlib, importlib.abc, json, sys, time
import anyio
import kairox_mcp.lifecycle as lifecycle

NAME = "kairox_mcp.client"
HOLD = 0.02   # seconds the import is held with the module in sys.modules, half-initialised
TASKS = 12
mode, rounds = sys.argv[1], int(sys.argv[2])
assert NAME not in sys.modules, "a fresh interpreter must not have imported the client yet"


class HoldTheImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != NAME:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        real = spec.loader

        class Held(importlib.abc.Loader):
            def create_module(self, spec):
                return real.create_module(spec)

            def exec_module(self, module):
                time.sleep(HOLD)
                real.exec_module(module)

        spec.loader = Held()
        return spec


sys.meta_path.insert(0, HoldTheImport())


async def old_import_client():  # before the fix
    module = sys.modules.get(NAME)
    if module is None:
        module = await anyio.to_thread.run_sync(importlib.import_module, NAME)
    return module


import_client = lifecycle.import_client if mode == "new" else old_import_client


async def one_round():
    results = []

    async def call(i):
        await anyio.sleep(i * 0.003)  # staggered: some call while the first import is held
        module = await import_client()
        # checked when the call returns: a half-initialised module finishes later, as the same object
        results.append((module, hasattr(module, "McpClient")))

    async with anyio.create_task_group() as tg:
        for i in range(TASKS):
            tg.start_soon(call, i)
    return results


bad_rounds, bad_results, other_module, forgotten = 0, 0, 0, 0
for _ in range(rounds):
    for key in [k for k in sys.modules if k == NAME or k == "mcp" or k.startswith("mcp.")]:
        del sys.modules[key]
    lifecycle._client_module = None
    results = anyio.run(one_round)
    bad = [m for m, complete in results if not complete]
    other_module += sum(1 for m, _ in results if m is not sys.modules.get(NAME))
    bad_rounds += bool(bad)
    bad_results += len(bad)
    forgotten += lifecycle._client_module is not sys.modules[NAME]  # the finished module is remembered
summary = {"rounds": rounds, "bad_rounds": bad_rounds, "bad_results": bad_results, "other_module": other_module}
print(json.dumps({**summary, "forgotten": forgotten}))
"""


#: rounds per run, each re-importing ``mcp`` (about 0.25 s): the control sees the race in
#: every round, so ten rounds of the fixed code are as telling as fifty
ROUNDS = 10


def race(mode: str, rounds: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", RACE, mode, str(rounds)], capture_output=True, text=True, timeout=240, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_concurrent_first_imports_all_get_the_finished_module() -> None:
    result = race("new", ROUNDS)
    assert result == {"rounds": ROUNDS, "bad_rounds": 0, "bad_results": 0, "other_module": 0, "forgotten": 0}


def test_the_old_import_client_is_caught_returning_a_half_initialised_module() -> None:
    """The control: the same rounds against the code before the fix do see the race."""
    result = race("old", ROUNDS)
    assert result["bad_rounds"] >= 1, result


#: prepended to a fresh interpreter's script: every ``import_module`` the lifecycle runs is
#: noted in ``calls`` as (module name, thread id); ``imports_of_client()`` counts those of the client
COUNT_IMPORTS = r"""
import importlib, threading
import kairox_mcp.lifecycle as lifecycle

calls = []
_real_import = importlib.import_module


class _Counting:
    def __getattr__(self, name):
        return getattr(importlib, name)

    @staticmethod
    def import_module(name, package=None):
        calls.append((name, threading.get_ident()))
        return _real_import(name, package)


lifecycle.importlib = _Counting()


def imports_of_client():
    mine = [thread for name, thread in calls if name == "kairox_mcp.client"]
    return {"imports": len(mine), "threads": len(set(mine))}
"""

ONE_THREAD = (
    COUNT_IMPORTS
    + r"""
import json, sys
import anyio

cancel_first = sys.argv[1] == "cancel-first"


async def main():
    got = []

    async def call(i):
        await anyio.sleep(i * 0.002)
        got.append(await lifecycle.import_client())

    async with anyio.create_task_group() as tg:
        if cancel_first:  # the task that runs the import is cancelled while the import runs
            first = anyio.CancelScope()

            async def doomed():
                with first:
                    await lifecycle.import_client()

            tg.start_soon(doomed)
            await anyio.sleep(0.001)
            first.cancel()
        for i in range(1, 13):
            tg.start_soon(call, i)
    return got


got = anyio.run(main)
complete = all(hasattr(m, "McpClient") for m in got)
print(json.dumps({"callers": len(got), "complete": complete, **imports_of_client()}))
"""
)


def one_thread(mode: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", ONE_THREAD, mode], capture_output=True, text=True, timeout=240, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_many_servers_starting_at_once_share_one_import_thread() -> None:
    """Issue 17: one import of the SDK for everyone, not one worker thread per server."""
    result = one_thread("plain")
    assert result["callers"] == 12 and result["complete"]
    assert result["imports"] == 1 and result["threads"] == 1


def test_waiters_still_get_the_module_when_the_importing_task_is_cancelled() -> None:
    result = one_thread("cancel-first")
    assert result["callers"] == 12 and result["complete"]
    # the cancelled importer's import still finishes and is remembered: nobody imports again
    assert result["imports"] == 1 and result["threads"] == 1
