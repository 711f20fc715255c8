"""The manager over the stdio transport with real servers: PyPI mcp-server-time and
mcp-server-git, npm server-everything, and the fault servers of tests/fixtures/mcp_servers.
After each test no process is left (``no_leftovers``)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import peers
import pytest
from mcp_helpers import open_runtime

from kairox._events import ToolsChanged
from kairox._tools import ImageContent
from kairox._types import Capability, ServerState
from kairox.errors import KairoxError, ToolError, ToolNotFound
from kairox_mcp import McpServerConfig, McpServerFailed, McpServerReady, ServerDefinition, manager_of

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent


def yes(_request: Any) -> bool:
    return True


def fixture(name: str, *args: str, **fields: Any) -> dict[str, Any]:
    argv = peers.fixture_server(name)
    return {"command": argv[0], "args": [*argv[1:], *args], **fields}


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    run = {"cwd": repo, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q", "-b", "main"], **run)  # type: ignore[call-overload]
    (repo / "a.txt").write_text("hello\n")
    subprocess.run(["git", "add", "a.txt"], **run)  # type: ignore[call-overload]
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "first"],
        **run,  # type: ignore[call-overload]
    )
    (repo / "a.txt").write_text("hello\nworld\n")
    return repo


@pytest.mark.anyio
async def test_python_servers_time_and_git(tmp_path: Path, git_repo: Path, no_leftovers: None) -> None:
    servers = {
        "time": {"command": str(BIN / "mcp-server-time")},
        "git": {"command": str(BIN / "mcp-server-git"), "args": ["--repository", str(git_repo)]},
    }
    async with open_runtime(tmp_path, servers) as rt:
        assert [s.id for s in rt.tools.by_provider("mcp:time")] == ["time.convert_time", "time.get_current_time"]
        assert len(rt.tools.by_provider("mcp:git")) == 12
        now = await rt.call_tool("time.get_current_time", {"timezone": "UTC"})
        assert now.structured is not None and now.structured["timezone"] == "UTC"
        converted = await rt.call_tool(
            "time_convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        )
        assert "21:00" in converted.text
        status = await rt.call_tool("git.git_status", {"repo_path": str(git_repo)})
        assert "a.txt" in status.text
        diff = await rt.call_tool("git.git_diff_unstaged", {"repo_path": str(git_repo)})
        assert "+world" in diff.text
        assert rt.tools.get_spec("git.git_status").capability is Capability.READ
        assert rt.tools.get_spec("git.git_reset").capability is Capability.WRITE  # destructiveHint
        states = {s.name: s.state for s in manager_of(rt).status()}
        assert states == {"time": ServerState.READY, "git": ServerState.READY}


@pytest.mark.anyio
async def test_server_everything_over_stdio(tmp_path: Path, everything_js: Path, no_leftovers: None) -> None:
    servers = {"ev": {"command": "node", "args": [str(everything_js), "stdio"]}}
    async with open_runtime(tmp_path, servers) as rt:
        assert len(rt.tools.by_provider("mcp:ev")) == 13
        image = await rt.call_tool("ev.get-tiny-image", {})
        assert any(isinstance(c, ImageContent) and c.mime_type == "image/png" for c in image.content)
        assert "Starting default (STDIO) server..." in manager_of(rt).logs("ev")


@pytest.mark.anyio
async def test_crash_mid_call_fails_the_call_with_the_diagnostic_then_restarts(
    tmp_path: Path, no_leftovers: None
) -> None:
    servers = {"c": fixture("crash_mid_call", max_restarts=1, restart_backoff=0.05)}
    async with open_runtime(tmp_path, servers, start=False) as rt:
        seen: list[Any] = []
        rt.events.subscribe(seen.append, McpServerFailed, McpServerReady)
        await rt.start_providers()
        server = manager_of(rt).server("c")
        started = time.monotonic()
        with pytest.raises(ToolError) as info:
            await rt.call_tool("c.crash", {"code": 7}, approver=yes)
        assert time.monotonic() - started < 1.0
        message = str(info.value)
        assert "exit code 7" in message and "crash_mid_call: about to die in the middle of a call" in message
        first = next(e for e in seen if isinstance(e, McpServerFailed))
        assert first.exit_code == 7 and first.will_restart and first.retry_in_s == 0.05
        assert "crash_mid_call: about to die in the middle of a call" in first.stderr_tail
        with anyio.fail_after(10):
            while server.state is not ServerState.READY:  # noqa: ASYNC110 - polling the restart
                await anyio.sleep(0.02)
        assert server.restarts == 1
        assert (await rt.call_tool("c.echo", {"message": "back"}, approver=yes)).text == "back"
        with pytest.raises(ToolError, match="exit code 9"):
            await rt.call_tool("c.crash", {"code": 9}, approver=yes)
        with anyio.fail_after(10):
            await server.wait_done()  # no restart left
        last = [e for e in seen if isinstance(e, McpServerFailed)][-1]
        assert last.exit_code == 9 and not last.will_restart
        assert manager_of(rt).server("c").state is ServerState.FAILED and "exit code 9" in server.detail
        logs = manager_of(rt).logs("c")
        assert logs[0].startswith("[kairox] --- attempt 1") and any("attempt 2" in line for line in logs)
        with pytest.raises(ToolNotFound):  # a failed server's tools are unregistered
            await rt.call_tool("c.echo", {"message": "x"}, approver=yes)


@pytest.mark.anyio
async def test_a_server_that_never_answers_initialize_fails_at_its_startup_timeout(
    tmp_path: Path, no_leftovers: None
) -> None:
    servers = {"h": fixture("hang_initialize", "--ignore-eof", "--ignore-sigterm", startup_timeout=1)}
    # the open ends (a server that ignores EOF and SIGTERM would hold it forever without
    # startup_timeout); how long it takes under load is no business of a unit test
    with anyio.fail_after(120):
        async with open_runtime(tmp_path, servers) as rt:
            server = manager_of(rt).server("h")
            assert server.state is ServerState.FAILED
            assert server.detail.startswith("no answer to initialize within 1 s (startup_timeout)")
            assert "hang_initialize: waiting forever" in manager_of(rt).logs("h")
            assert server.diagnostics.exit_code is not None  # the group was killed


@pytest.mark.anyio
async def test_parallel_start_one_failing_never_affects_the_others(tmp_path: Path, no_leftovers: None) -> None:
    servers = {
        "bad": fixture("crash_on_start"),
        "good": fixture("well_behaved", "--name", "good"),
        "slow": fixture("slow_start", "--delay", "0.5"),
        "nocmd": {"command": str(tmp_path / "no-such-server")},
    }
    async with open_runtime(tmp_path, servers) as rt:
        status = {s.name: s for s in manager_of(rt).status()}
        assert status["good"].state is ServerState.READY and status["slow"].state is ServerState.READY
        assert status["bad"].state is ServerState.FAILED and "exit code 3" in status["bad"].detail
        assert "fatal: cannot open /nonexistent/config.toml" in "\n".join(manager_of(rt).logs("bad"))
        assert status["nocmd"].state is ServerState.FAILED and "not found" in status["nocmd"].detail
        assert (await rt.call_tool("good.echo", {"message": "ok"}, approver=yes)).text == "ok"
        assert not rt.status().ok


@pytest.mark.anyio
async def test_restart_backoff_doubles_up_to_the_maximum(tmp_path: Path, no_leftovers: None) -> None:
    servers = {"c": fixture("crash_mid_call", max_restarts=3, restart_backoff=0.05)}
    async with open_runtime(tmp_path, servers, start=False) as rt:
        failures: list[Any] = []
        rt.events.subscribe(failures.append, McpServerFailed)
        await rt.start_providers()
        server = manager_of(rt).server("c")
        for _ in range(4):
            with anyio.fail_after(10):
                while server.state is not ServerState.READY:  # noqa: ASYNC110 - polling the restart
                    await anyio.sleep(0.02)
            with pytest.raises(ToolError):
                await rt.call_tool("c.crash", {}, approver=yes)
        with anyio.fail_after(10):
            await server.wait_done()
        assert [(f.will_restart, f.retry_in_s) for f in failures] == [
            (True, 0.05),
            (True, 0.1),
            (True, 0.2),
            (False, 0.0),
        ]
        assert server.restarts == 3


@pytest.mark.anyio
async def test_grandchildren_are_reaped_when_the_server_dies(tmp_path: Path, no_leftovers: None) -> None:
    servers = {"g": fixture("grandchild", max_restarts=0)}
    async with open_runtime(tmp_path, servers) as rt:
        with pytest.raises(ToolError):
            with anyio.fail_after(5):
                await rt.call_tool("g.crash", {}, approver=yes)
        server = manager_of(rt).server("g")
        with anyio.fail_after(10):
            await server.wait_done()
        assert server.state is ServerState.FAILED


@pytest.mark.anyio
async def test_closing_the_runtime_while_a_server_starts_kills_it_promptly(tmp_path: Path, no_leftovers: None) -> None:
    servers = {"h": fixture("hang_initialize", "--ignore-eof", "--ignore-sigterm")}  # default 30 s timeout
    async with open_runtime(tmp_path, servers, start=False) as rt:
        mcp = manager_of(rt)

        def hanging() -> bool:
            return "h" in mcp.servers and "hang_initialize: waiting forever" in mcp.logs("h")

        async with anyio.create_task_group() as tg:
            tg.start_soon(mcp.start_servers)
            with anyio.fail_after(20):
                while not hanging():  # noqa: ASYNC110 - polling the child's stderr
                    await anyio.sleep(0.02)
            started = time.monotonic()
            await mcp.stop()
        assert time.monotonic() - started < 5
        assert mcp.server("h").state is ServerState.STOPPED


@pytest.mark.anyio
async def test_manual_restart_gives_a_fresh_process(tmp_path: Path, no_leftovers: None) -> None:
    servers = {"w": fixture("well_behaved", "--name", "w")}
    async with open_runtime(tmp_path, servers) as rt:
        mcp = manager_of(rt)
        first = mcp.server("w").diagnostics.pid
        server = await mcp.restart("w")
        assert server.state is ServerState.READY and server.diagnostics.pid not in (None, first)
        assert (await rt.call_tool("w.echo", {"message": "again"}, approver=yes)).text == "again"


@pytest.mark.anyio
async def test_servers_from_mcp_json_and_philont_run_like_the_others(tmp_path: Path, no_leftovers: None) -> None:
    import json

    argv = peers.fixture_server("well_behaved")
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"claude": {"command": argv[0], "args": [*argv[1:], "--name", "${WHO:-claude}"]}}})
    )
    philont = tmp_path / "philont.json"
    philont.write_text(
        json.dumps(
            [
                {
                    "name": "ph",
                    "transport": {"transport": "stdio", "command": argv[0], "args": [*argv[1:], "--name", "ph"]},
                    "toolPrefix": "phil",
                    "domain": "local",
                    "capability": "read",
                    "timeout": 5000,
                }
            ]
        )
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PHILONT_MCP_CONFIG": str(philont)}
    # trusted: the workspace's .mcp.json server runs (and its ${WHO:-claude} is expanded) only once trusted
    async with open_runtime(tmp_path, {}, env=env, trusted=True) as rt:
        mcp = manager_of(rt)
        assert {n: d.origin for n, d in mcp.definitions.items()} == {"claude": ".mcp.json", "ph": "philont"}
        assert (await rt.call_tool("claude.echo", {"message": "hi"}, approver=yes)).text == "hi"
        assert "claude" in mcp.server("claude").detail
        spec = rt.tools.get_spec("phil.echo")
        assert (spec.domain.value, spec.capability.value) == ("local", "read")
        assert (await rt.call_tool("phil.echo", {"message": "no approval needed"})).text == "no approval needed"
        assert mcp.server("ph").config.tool_timeout_s == 5.0


def clock(name: str = "clock", **fields: Any) -> ServerDefinition:
    """mcp-server-time (PyPI) as a server added from code."""
    return ServerDefinition(name, McpServerConfig(command=str(BIN / "mcp-server-time"), **fields), origin="code")


@pytest.mark.anyio
async def test_a_server_added_at_run_time_starts_and_registers_and_removing_it_takes_it_back(
    tmp_path: Path, no_leftovers: None
) -> None:
    async with open_runtime(tmp_path, {}) as rt:
        mcp = manager_of(rt)
        seen: list[Any] = []
        rt.events.subscribe(seen.append)
        server = await mcp.add_server(clock())
        assert server is not None and server.state is ServerState.READY
        pid = server.diagnostics.pid
        assert pid is not None and peers.alive([pid]) == [pid]
        assert [s.id for s in rt.tools.by_provider("mcp:clock")] == ["clock.convert_time", "clock.get_current_time"]
        now = await rt.call_tool("clock.get_current_time", {"timezone": "UTC"}, approver=yes)
        assert now.structured is not None and now.structured["timezone"] == "UTC"
        assert [(s.name, s.state) for s in mcp.status()] == [("clock", ServerState.READY)]
        with pytest.raises(KairoxError, match="running; remove it first"):
            await mcp.add_server(clock())

        assert await mcp.remove_server("clock")
        assert rt.tools.by_provider("mcp:clock") == [] and mcp.status() == []
        with anyio.fail_after(5):
            while peers.alive([pid]):  # noqa: ASYNC110 - polling the process table
                await anyio.sleep(0.02)
        with pytest.raises(ToolNotFound):
            await rt.call_tool("clock.get_current_time", {"timezone": "UTC"}, approver=yes)
        assert not await mcp.remove_server("clock")  # gone: nothing left to remove
    kinds = [e.kind for e in seen if e.kind.startswith("McpServer")]
    assert kinds == ["McpServerStarting", "McpServerReady", "McpServerStopped"]
    changes = [e for e in seen if isinstance(e, ToolsChanged) and e.provider == "mcp:clock"]
    tools = {"clock.convert_time", "clock.get_current_time"}
    assert [(set(c.added), set(c.removed)) for c in changes] == [(tools, set()), (set(), tools)]


@pytest.mark.anyio
async def test_a_server_added_before_the_manager_starts_is_only_defined(tmp_path: Path, no_leftovers: None) -> None:
    async with open_runtime(tmp_path, {}, start=False) as rt:
        mcp = manager_of(rt)
        assert await mcp.add_server(clock()) is None
        assert await mcp.add_server(clock("later", enabled=False)) is None
        assert [(s.name, s.state, s.detail) for s in mcp.status()] == [
            ("clock", ServerState.STOPPED, "not started"),
            ("later", ServerState.STOPPED, "disabled"),
        ]
        assert rt.tools.by_provider("mcp:clock") == [] and mcp.servers == {}  # no process yet
        await rt.start_providers()  # the manager's start starts it with the others
        assert mcp.server("clock").state is ServerState.READY
        assert [s.id for s in rt.tools.by_provider("mcp:clock")] == ["clock.convert_time", "clock.get_current_time"]
        assert "later" not in mcp.servers  # disabled: not started by default ...
        assert await mcp.add_server(clock("later", enabled=False)) is None
        explicit = await mcp.add_server(clock("later", enabled=False), start=True)  # ... but when asked to
        assert explicit is not None and explicit.state is ServerState.READY
        assert len(rt.tools.by_provider("mcp:later")) == 2
