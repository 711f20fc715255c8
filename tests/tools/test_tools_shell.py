"""shell.exec on real processes: output, exit codes, cwd, timeouts, process groups, cancellation."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

import kairox_tools._proc
from kairox._runtime import Runtime
from kairox._tools import ToolContext, ToolResult
from kairox.errors import PolicyDenied, ToolError
from kairox_tools import ShellExec, ToolEnv, ToolsConfig

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups"),
]


async def run(tool_env: ToolEnv, **arguments: Any) -> ToolResult:
    result: ToolResult = await ShellExec(tool_env).call(arguments, ToolContext())
    return result


async def test_stdout_stderr_and_exit_code(tool_env: ToolEnv, no_leftovers: None) -> None:
    r = await run(tool_env, command="echo out; echo err >&2; exit 3")
    assert r.is_error
    assert r.structured is not None
    assert (r.structured["exit_code"], r.structured["stdout"], r.structured["stderr"]) == (3, "out\n", "err\n")
    assert r.text.splitlines()[0].startswith("exit code 3 (")
    assert r.text.splitlines()[1:] == ["--- stdout ---", "out", "--- stderr ---", "err"]
    ok = await run(tool_env, command="true")
    assert not ok.is_error and ok.text.endswith("(no output)")


async def test_cwd_env_and_stdin(ws: Path, tool_env: ToolEnv, no_leftovers: None) -> None:
    (ws / "sub").mkdir()
    r = await run(tool_env, command='pwd; echo "$GREETING"; cat', cwd="sub", env={"GREETING": "hi"}, stdin="from stdin")
    assert r.structured is not None
    assert r.structured["stdout"] == f"{ws / 'sub'}\nhi\nfrom stdin"
    assert r.structured["cwd"] == "sub"
    default = await run(tool_env, command="pwd")
    assert default.structured is not None and default.structured["stdout"] == f"{ws}\n"


@pytest.mark.parametrize("cwd", ["..", "/", "sub/../..", "escape"])
async def test_cwd_must_be_inside_the_workspace(ws: Path, tool_env: ToolEnv, cwd: str) -> None:
    (ws / "sub").mkdir()
    (ws / "escape").symlink_to(ws.parent)
    r = await run(tool_env, command="touch created-here")
    assert not r.is_error
    bad = await run(tool_env, command="touch should-not-exist", cwd=cwd)
    assert bad.is_error and "outside the workspace" in bad.text
    assert not (ws.parent / "should-not-exist").exists()


async def test_cwd_must_exist(tool_env: ToolEnv) -> None:
    r = await run(tool_env, command="true", cwd="missing")
    assert r.is_error and "not a directory" in r.text


async def test_output_is_capped_with_head_tail_and_a_marker(ws: Path, no_leftovers: None) -> None:
    env = ToolEnv.create(ws, ToolsConfig(max_output_chars=1_000))
    r = await run(env, command="echo FIRST; head -c 200000 /dev/zero | tr '\\0' x; echo; echo LAST")
    assert r.structured is not None and r.structured["stdout_truncated"]
    out = r.structured["stdout"]
    assert out.startswith("FIRST\n") and out.rstrip().endswith("LAST")
    assert "bytes omitted ...]" in out
    assert len(out) < 1_100
    assert len(r.text) < 3_200


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


async def test_timeout_kills_the_whole_process_group(ws: Path, tool_env: ToolEnv, no_leftovers: None) -> None:
    pidfile = ws / "child.pid"
    started = time.monotonic()
    r = await run(tool_env, command=f"sleep 60 & echo $! > {pidfile}; echo started; wait", timeout=0.5)
    elapsed = time.monotonic() - started
    assert r.is_error and r.structured is not None
    assert r.structured["timed_out"] is True
    assert r.structured["stdout"] == "started\n"
    assert "timed out after 0.5 s" in r.text
    assert elapsed < 10  # not the 60 s of the grandchild
    assert not _alive(int(pidfile.read_text()))


async def test_a_command_ignoring_sigterm_is_killed(
    ws: Path, tool_env: ToolEnv, no_leftovers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kairox_tools._proc, "TERM_GRACE", 0.3)  # test-sized (2 s): SIGKILL comes after it
    started = time.monotonic()
    r = await run(tool_env, command="trap '' TERM; echo ready; sleep 30", timeout=0.3)
    assert r.structured is not None and r.structured["timed_out"] and r.structured["stdout"] == "ready\n"
    assert time.monotonic() - started < 10  # not the 30 s of the sleep


async def test_background_leftovers_are_stopped_when_the_command_exits(
    ws: Path, tool_env: ToolEnv, no_leftovers: None
) -> None:
    pidfile = ws / "bg.pid"
    r = await run(tool_env, command=f"sleep 60 & echo $! > {pidfile}; echo done")
    assert not r.is_error and r.structured is not None and r.structured["stdout"] == "done\n"
    assert not _alive(int(pidfile.read_text()))


async def test_cancelling_the_call_kills_the_group(ws: Path, tool_env: ToolEnv, no_leftovers: None) -> None:
    pidfile = ws / "c.pid"
    with anyio.move_on_after(0.5) as scope:
        await run(tool_env, command=f"echo $$ > {pidfile}; sleep 60")
    assert scope.cancelled_caught
    assert not _alive(int(pidfile.read_text()))


async def test_timeout_limits(ws: Path) -> None:
    env = ToolEnv.create(ws, ToolsConfig(shell_max_timeout=5))
    r = await run(env, command="true", timeout=6)
    assert r.is_error and "over the limit of 5 s" in r.text
    assert (await run(env, command="")).is_error
    bad = await run(env, command="true", timeout="soon")
    assert bad.is_error and "timeout: expected a number" in bad.text


async def test_shell_is_system_execute_and_asks_through_the_runtime(rt: Runtime, ws: Path, no_leftovers: None) -> None:
    spec = rt.tools.get_spec("shell.exec")
    assert (spec.domain.value, spec.capability.value) == ("system", "execute")
    with pytest.raises(PolicyDenied) as info:
        await rt.call_tool("shell.exec", {"command": "touch ran"})
    assert "needs approval" in info.value.reason
    assert not (ws / "ran").exists()
    result = await rt.call_tool("shell.exec", {"command": "touch ran"}, approver=lambda request: True)
    assert not result.is_error and (ws / "ran").exists()


async def test_a_runtime_timeout_also_kills_the_group(rt: Runtime, ws: Path, no_leftovers: None) -> None:
    pidfile = ws / "rt.pid"
    with pytest.raises(ToolError, match="timed out"):
        await rt.call_tool(
            "shell.exec", {"command": f"echo $$ > {pidfile}; sleep 60"}, timeout=0.5, approver=lambda r: True
        )
    assert not _alive(int(pidfile.read_text()))
