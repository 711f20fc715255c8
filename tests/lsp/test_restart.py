"""Restart and stop of one language server by name (kairox_lsp.restart_server / stop_server),
with a real pylsp: the process is reaped on stop, a new one answers after restart."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import kairox_lsp.hooks
from kairox import Event, KairoxError, ServerState
from kairox_lsp import LspServerRunning, LspServerStopped, provider_of, restart_server, stop_server

from .helpers import FIXTURE, alive, open_runtime, server_command

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_leftovers")]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(FIXTURE, ws)
    return ws


@pytest.mark.anyio
async def test_a_stopped_server_is_reaped_and_a_restarted_one_answers(workspace: Path) -> None:
    document = {
        "lsp_servers": {"py": {"command": server_command("pylsp"), "languages": ["python"], "shutdown_timeout": 0.5}}
    }
    events: list[Event] = []
    async with open_runtime(workspace, kairox_lsp.hooks, document, start=False) as rt:
        rt.events.subscribe(events.append)
        await rt.start_providers()
        server = provider_of(rt).servers["py"]
        assert server.state is ServerState.READY and "lsp.hover" in rt.tools
        first = server.pid
        assert first is not None and alive([first])

        status = await stop_server(rt, "py")
        assert status.state is ServerState.STOPPED and status.kind == "lsp"
        assert not alive([first])  # reaped, not just told to go
        assert "lsp.hover" not in rt.tools  # no server provides it any more
        assert [type(e) for e in events if isinstance(e, LspServerStopped)] == [LspServerStopped]

        status = await restart_server(rt, "py")
        assert status.state is ServerState.READY, status.detail
        second = server.pid
        assert second is not None and second != first and alive([second])
        assert "lsp.hover" in rt.tools
        result = await rt.call_tool("lsp.document_symbols", {"path": "pkg/shapes.py"})
        assert not result.is_error and "Circle" in result.text
        assert server.attempts == 1  # asked for: a fresh start, not a crash restart
        assert len([e for e in events if isinstance(e, LspServerRunning)]) == 2

        # restarting a running server replaces its process
        await restart_server(rt, "py")
        assert server.state is ServerState.READY and server.pid not in (None, second) and not alive([second])

        with pytest.raises(KairoxError, match=r"no language server named 'nope'.*configured: py"):
            await restart_server(rt, "nope")
        with pytest.raises(KairoxError, match="no language server named 'nope'"):
            await stop_server(rt, "nope")


@pytest.mark.anyio
async def test_a_server_that_cannot_start_is_failed_after_a_restart(workspace: Path) -> None:
    document = {"lsp_servers": {"gone": {"command": str(workspace / "no-such-server"), "languages": ["python"]}}}
    async with open_runtime(workspace, kairox_lsp.hooks, document, start=False) as rt:
        await rt.start_providers()
        status = await restart_server(rt, "gone")
        assert status.state is ServerState.FAILED and "no-such-server" in status.detail
