"""Restart and stop of one debug adapter by name (kairox_dap.restart_server / stop_server),
with a real debugpy adapter: stop ends its debug session and reaps the adapter and the
debuggee; restart starts it again, idle; dap.launch still works afterwards."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import kairox_dap.hooks
from kairox import ApprovalAnswer, ApprovalRequest, KairoxError, ServerState
from kairox_dap import provider_of, restart_server, stop_server

from .helpers import alive, open_runtime

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_leftovers")]

DEBUGPY = {"command": sys.executable, "args": ["-m", "debugpy.adapter"], "languages": ["python"]}
LOOP_LINE = 9


def approve(request: ApprovalRequest) -> ApprovalAnswer:
    return ApprovalAnswer.ALLOW_ONCE


@pytest.mark.anyio
async def test_stop_ends_the_session_and_restart_brings_the_adapter_back(dap_workspace: Path) -> None:
    document = {"dap_servers": {"debugpy": DEBUGPY}}
    async with open_runtime(dap_workspace, kairox_dap.hooks, document, approver=approve, start=False) as rt:
        await rt.start_providers()
        provider = provider_of(rt)
        adapter = provider.adapters["debugpy"]
        await rt.call_tool("dap.set_breakpoints", {"file": "sample.py", "lines": [LOOP_LINE]})
        launched = await rt.call_tool("dap.launch", {"program": "sample.py", "args": ["5", "7"]})
        assert not launched.is_error and "stopped (breakpoint)" in launched.text
        assert provider.session is not None
        debuggee, adapter_pid = provider.session.pid, adapter.pid
        assert debuggee is not None and adapter_pid is not None

        status = await stop_server(rt, "debugpy")
        assert status.state is ServerState.STOPPED and status.kind == "dap"
        assert provider.session is None
        assert alive([debuggee, adapter_pid]) == []  # both reaped
        ended = await rt.call_tool("dap.stack_trace", {})
        assert ended.is_error and "no debug session" in ended.text

        status = await restart_server(rt, "debugpy")
        assert status.state is ServerState.READY, status.detail
        assert adapter.pid is not None and adapter.pid != adapter_pid and alive([adapter.pid])

        # a debug session after the restart (dap.launch starts its own fresh adapter)
        again = await rt.call_tool("dap.launch", {"program": "sample.py", "args": ["1"]})
        assert not again.is_error and "stopped (breakpoint)" in again.text, again.text
        done = await rt.call_tool("dap.disconnect", {})
        assert not done.is_error

        with pytest.raises(KairoxError, match=r"no debug adapter named 'nope'.*configured: debugpy"):
            await restart_server(rt, "nope")


@pytest.mark.anyio
async def test_an_adapter_that_cannot_start_is_failed_after_a_restart(dap_workspace: Path) -> None:
    document = {"dap_servers": {"gone": {"command": str(dap_workspace / "no-such-adapter")}}}
    async with open_runtime(dap_workspace, kairox_dap.hooks, document, start=False) as rt:
        await rt.start_providers()
        status = await restart_server(rt, "gone")
        assert status.state is ServerState.FAILED and "no-such-adapter" in status.detail
        status = await stop_server(rt, "gone")
        assert status.state is ServerState.FAILED  # nothing to stop: it stays as it ended
