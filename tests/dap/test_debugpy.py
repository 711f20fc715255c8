"""dap.* tools through a real runtime and a real debugpy adapter (python -m debugpy.adapter).

sample_program.py: ``accumulate`` loops over values; line 9 is
``total += value * (index + 1)``, line 16 ``print(f"total={result}")``.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

import kairox_dap.hooks
from kairox import ApprovalAnswer, ApprovalRequest, Event, PolicyDenied, Runtime, ServerState
from kairox_dap import DapServerFailed, DapServerRunning, DapServerStarting, DapServerStopped
from kairox_dap._provider import DapToolProvider

from .helpers import alive, live_children, open_runtime

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_leftovers")]

DEBUGPY = {"command": sys.executable, "args": ["-m", "debugpy.adapter"], "languages": ["python"]}
LOOP_LINE = 9


@asynccontextmanager
async def runtime(
    workspace: Path, *, events: list[Event] | None = None, asked: list[ApprovalRequest] | None = None, **extra: Any
) -> AsyncIterator[Runtime]:
    def approve(request: ApprovalRequest) -> ApprovalAnswer:
        if asked is not None:
            asked.append(request)
        return ApprovalAnswer.ALLOW_ONCE

    document = {"dap_servers": {"debugpy": {**DEBUGPY, **extra}}}
    async with open_runtime(workspace, kairox_dap.hooks, document, approver=approve, start=False) as rt:
        if events is not None:
            rt.events.subscribe(events.append)
        await rt.start_providers()
        yield rt


async def call(rt: Runtime, tool: str, args: dict[str, Any] | None = None) -> str:
    result = await rt.call_tool(tool, args or {})
    assert not result.is_error, result.text
    return result.text


def provider(rt: Runtime) -> DapToolProvider:
    p = rt.providers.get("dap")
    assert isinstance(p, DapToolProvider)
    return p


@pytest.mark.anyio
async def test_breakpoint_locals_evaluate_continue_to_the_end(dap_workspace: Path) -> None:
    events: list[Event] = []
    async with runtime(dap_workspace, events=events) as rt:
        assert "dap.launch" in rt.tools
        assert (await call(rt, "dap.set_breakpoints", {"file": "sample.py", "lines": [LOOP_LINE]})).endswith(
            "(applied when dap.launch starts the program)"
        )
        launched = await call(rt, "dap.launch", {"program": "sample.py", "args": ["5", "7"]})
        lines = launched.splitlines()
        assert lines[0].startswith("launched sample.py (pid ")
        assert lines[1] == f"breakpoints in sample.py: line {LOOP_LINE}: verified"
        assert (
            lines[2] == f"stopped (breakpoint) at #0 accumulate  sample.py:{LOOP_LINE}:1: total += value * (index + 1)"
        )
        debuggee = provider(rt).session.pid  # type: ignore[union-attr]
        adapter_pid = provider(rt).adapters["debugpy"].pid
        assert debuggee is not None and adapter_pid is not None

        stack = await call(rt, "dap.stack_trace")
        assert stack.splitlines()[1] == "#1 main  sample.py:15:1: result = accumulate(values)"

        local_vars = await call(rt, "dap.variables")
        assert "  index: int = 0" in local_vars.splitlines()
        assert "  value: int = 5" in local_vars.splitlines()
        assert "  total: int = 0" in local_vars.splitlines()
        assert "  values: list = [5, 7]" in local_vars.splitlines()
        outer = await call(rt, "dap.variables", {"frame": 1, "depth": 2})
        assert "  values: list = [5, 7]" in outer and "    1: int = 7" in outer

        assert await call(rt, "dap.evaluate", {"expression": "value * 10 + len(values)"}) == "52 (int)"

        second = await call(rt, "dap.continue")
        assert second.startswith(f"stopped (breakpoint) at #0 accumulate  sample.py:{LOOP_LINE}:1")
        assert "  total: int = 5" in (await call(rt, "dap.variables")).splitlines()

        # no breakpoints left: run to the end
        await call(rt, "dap.set_breakpoints", {"file": "sample.py", "lines": []})
        ended = await call(rt, "dap.continue")
        assert ended.splitlines()[:3] == ["the program ended (exit code 0)", "output:", "total=19"]
        assert await call(rt, "dap.output", {"all": True}) == "total=19\n"
        finished = await rt.call_tool("dap.variables")
        assert finished.is_error and "the program has ended (exit code 0)" in finished.text

        assert (await call(rt, "dap.disconnect")).startswith("disconnected; the program had ended (exit code 0)")
        assert alive([debuggee, adapter_pid]) == []
        assert live_children() == []
    kinds = [type(e) for e in events if type(e).__module__.startswith("kairox_dap")]
    assert kinds == [DapServerStarting, DapServerRunning, DapServerStopped]


@pytest.mark.anyio
async def test_conditional_breakpoint_step_and_stop_on_entry(dap_workspace: Path) -> None:
    async with runtime(dap_workspace) as rt:
        await call(rt, "dap.set_breakpoints", {"file": "sample.py", "lines": [LOOP_LINE], "conditions": ["index == 2"]})
        entry = await call(rt, "dap.launch", {"program": "sample.py", "stop_on_entry": True})
        assert "if index == 2: verified" in entry
        assert "stopped (entry) at #0 <module>  sample.py:1:1: " in entry
        hit = await call(rt, "dap.continue")
        assert f"sample.py:{LOOP_LINE}:1" in hit
        assert "  index: int = 2" in (await call(rt, "dap.variables")).splitlines()
        stepped = await call(rt, "dap.step_over")
        assert stepped.startswith("stopped (step) at #0 accumulate  sample.py:8:1: for index, value in enumerate")
        out = await call(rt, "dap.step_out")
        assert out.startswith("stopped (step) at #0 main  sample.py:15:1")
        into = await call(rt, "dap.step_over")
        assert "sample.py:16:1" in into
        text = await call(rt, "dap.disconnect")
        assert text.startswith("disconnected; the program was terminated")


@pytest.mark.anyio
async def test_launch_asks_under_the_default_policy(dap_workspace: Path) -> None:
    asked: list[ApprovalRequest] = []
    async with runtime(dap_workspace, asked=asked) as rt:
        await call(rt, "dap.set_breakpoints", {"file": "sample.py", "lines": [LOOP_LINE]})
        assert asked == []  # breakpoints only change the session
        await call(rt, "dap.launch", {"program": "sample.py"})
        assert [r.tool.id for r in asked] == ["dap.launch"]
        assert "runs commands" in asked[0].reason
        await call(rt, "dap.stack_trace")
        await call(rt, "dap.evaluate", {"expression": "1 + 1"})
        assert [r.tool.id for r in asked] == ["dap.launch", "dap.evaluate"]
        # without an approver (non-interactive) it is refused
        rt.approver = None
        with pytest.raises(PolicyDenied):
            await rt.call_tool("dap.evaluate", {"expression": "1"}, approver=None)
        await call(rt, "dap.disconnect")


@pytest.mark.anyio
async def test_adapter_crash_fails_the_session_and_leaves_nothing(dap_workspace: Path) -> None:
    events: list[Event] = []
    async with runtime(dap_workspace, events=events) as rt:
        await call(rt, "dap.set_breakpoints", {"file": "sample.py", "lines": [LOOP_LINE]})
        await call(rt, "dap.launch", {"program": "sample.py"})
        session = provider(rt).session
        assert session is not None and session.pid is not None
        adapter = provider(rt).adapters["debugpy"]
        pids = [adapter.pid or 0, session.pid]
        os.killpg(pids[0], signal.SIGKILL)  # the adapter's group; the debuggee has a group of its own
        with anyio.fail_after(10):
            while adapter.active:  # noqa: ASYNC110 - no event for this
                await anyio.sleep(0.02)
        failed = [e for e in events if isinstance(e, DapServerFailed)]
        assert len(failed) == 1 and failed[0].returncode == -signal.SIGKILL
        assert adapter.state is ServerState.FAILED
        assert provider(rt).status()[0].state is ServerState.FAILED
        result = await rt.call_tool("dap.stack_trace")
        assert result.is_error and "the program has ended" in result.text
        assert alive(pids) == []
        # the next launch starts a fresh adapter
        relaunched = await call(rt, "dap.launch", {"program": "sample.py"})
        assert "stopped (breakpoint)" in relaunched
        assert provider(rt).status()[0].state is ServerState.READY
    assert live_children() == []


@pytest.mark.anyio
async def test_cancelling_the_runtime_mid_session_leaves_nothing(dap_workspace: Path) -> None:
    pids: list[int] = []
    with anyio.move_on_after(60) as scope:
        async with runtime(dap_workspace) as rt:
            await call(rt, "dap.set_breakpoints", {"file": "sample.py", "lines": [LOOP_LINE]})
            await call(rt, "dap.launch", {"program": "sample.py"})
            session = provider(rt).session
            assert session is not None and session.pid is not None
            pids = [provider(rt).adapters["debugpy"].pid or 0, session.pid]
            async with anyio.create_task_group() as tg:
                tg.start_soon(rt.call_tool, "dap.continue", {"wait": 30})
                await anyio.sleep(0.01)
                scope.cancel()
    assert scope.cancelled_caught
    assert pids and alive(pids) == []
    assert live_children() == []


@pytest.mark.anyio
async def test_closing_the_runtime_with_a_live_session_terminates_it(dap_workspace: Path) -> None:
    async with runtime(dap_workspace) as rt:
        await call(rt, "dap.launch", {"program": "sample.py", "stop_on_entry": True})
        session = provider(rt).session
        assert session is not None and session.pid is not None
        pids = [provider(rt).adapters["debugpy"].pid or 0, session.pid]
    assert alive(pids) == []


@pytest.mark.anyio
async def test_waiting_again_for_a_program_that_runs_long(dap_workspace: Path) -> None:
    shutil.copy(Path(__file__).with_name("slow_program.py"), dap_workspace / "slow.py")
    async with runtime(dap_workspace) as rt:
        await call(rt, "dap.set_breakpoints", {"file": "slow.py", "lines": [9]})
        first = await call(rt, "dap.launch", {"program": "slow.py", "wait": 0.2})
        assert first.splitlines()[-1] == "running (did not stop within 0.2 s)"
        again = await call(rt, "dap.continue", {"wait": 30})
        assert again.splitlines()[0] == "stopped (breakpoint) at #0 <module>  slow.py:9:1: value = 41 + 1"
        # debugpy's launcher relays the program's stdout on its own channel, so the DAP `output`
        # event may come after `stopped`: the line is in this answer or in the next dap.output.
        assert again.splitlines()[1:] in ([], ["output:", "woke up"])
        if again.splitlines()[1:] == []:
            late = await call(rt, "dap.output")
            with anyio.fail_after(10):
                while late == "(no new output)":
                    await anyio.sleep(0.05)
                    late = await call(rt, "dap.output")
            assert late == "woke up\n"
        await call(rt, "dap.disconnect")


@pytest.mark.anyio
async def test_errors_are_readable(dap_workspace: Path) -> None:
    async with runtime(dap_workspace) as rt:
        result = await rt.call_tool("dap.stack_trace")
        assert result.is_error and result.text == "no debug session; start one with dap.launch"
        result = await rt.call_tool("dap.launch", {"program": "nope.py"})
        assert result.is_error and result.text == "no such file: nope.py"
        (dap_workspace / "bad.py").write_text("this is not python\n")
        ended = await call(rt, "dap.launch", {"program": "bad.py"})
        assert "the program ended (exit code 1)" in ended
        assert "NameError: name 'this' is not defined" in ended
        again = await rt.call_tool("dap.evaluate", {"expression": "1"})
        assert again.is_error and "the program has ended (exit code 1)" in again.text
        await call(rt, "dap.disconnect")


@pytest.mark.anyio
async def test_an_adapter_that_cannot_start_is_reported(dap_workspace: Path) -> None:
    events: list[Event] = []
    async with runtime(dap_workspace, events=events, command="kairox-no-such-adapter", args=[]) as rt:
        result = await rt.call_tool("dap.launch", {"program": "sample.py"})
        assert result.is_error
        assert "debug adapter debugpy failed: cannot start 'kairox-no-such-adapter'" in result.text
        assert [e for e in events if isinstance(e, DapServerFailed)]
        assert rt.status().ok is False
