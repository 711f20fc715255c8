"""Helpers of the runtime-level fault tests: server entries, opening a runtime,
killing a server's process group, waiting for a restart, classifying outcomes."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio
from peers import FIXTURE_SERVERS

from kairox import Runtime
from kairox._types import ServerState
from kairox_mcp.lifecycle import ServerLifecycle
from kairox_mcp.manager import manager_of


def script(name: str, *args: str, **fields: Any) -> dict[str, Any]:
    """A stdio ``[mcp_servers.X]`` entry running ``tests/fixtures/mcp_servers/<name>.py``."""
    return {"command": sys.executable, "args": [str(FIXTURE_SERVERS / f"{name}.py"), *args], **fields}


def yes(_request: Any) -> bool:
    return True


@contextlib.asynccontextmanager
async def open_runtime(
    workspace: Path, servers: Mapping[str, Mapping[str, Any]], *, plugins: tuple[Any, ...] = ()
) -> AsyncIterator[Runtime]:
    """A runtime whose only configuration is ``[mcp_servers]`` = ``servers`` (every call approved)."""
    docs = [(str(workspace / "kairox.toml"), {"mcp_servers": {k: dict(v) for k, v in servers.items()}})]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workspace)}
    async with Runtime.open(
        workspace,
        home=workspace / "home",
        env=env,
        approver=yes,
        plugins=list(plugins),
        config_documents=docs,
        config_files=[],
    ) as rt:
        yield rt


def kill_group(server: ServerLifecycle) -> int:
    """SIGKILL the server's whole process group; returns the pid that was killed."""
    pid = server.diagnostics.pid
    assert pid is not None, f"{server.name} has no process"
    os.killpg(pid, signal.SIGKILL)
    return pid


async def wait_ready(rt: Runtime, name: str, *, not_pid: int | None = None, timeout: float = 20.0) -> ServerLifecycle:
    """Until server ``name`` is ready (on a process other than ``not_pid``)."""
    mcp = manager_of(rt)
    with anyio.fail_after(timeout):
        while True:
            server = mcp.server(name)
            fresh = not_pid is None or server.diagnostics.pid != not_pid
            if server.state is ServerState.READY and server.client is not None and fresh:
                return server
            await anyio.sleep(0.02)


def pids_of(rt: Runtime) -> dict[str, int | None]:
    return {name: s.diagnostics.pid for name, s in manager_of(rt).servers.items()}


class Clock:
    """Monotonic seconds since creation (for down-window bookkeeping)."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def __call__(self) -> float:
        return time.monotonic() - self.t0
