"""Server lifecycle through a real runtime: crash mid-request, restart, failure isolation, reaping."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

import kairox_lsp.hooks
from kairox import Event, Runtime, ServerState, ToolsChanged
from kairox_lsp import LspServerFailed, LspServerRunning, LspServerStarting, LspServerStopped, add_bundle_servers
from kairox_lsp._provider import LspToolProvider

from .helpers import alive, live_children, open_runtime, server_command

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_leftovers")]

FAKE = str(Path(__file__).with_name("fake_lsp_server.py"))


def pyright(**extra: Any) -> dict[str, Any]:
    return {
        "command": server_command("basedpyright-langserver"),
        "args": ["--stdio"],
        "languages": ["python"],
        "settings": {"basedpyright": {"analysis": {"typeCheckingMode": "standard"}}},
        **extra,
    }


def fake(mode: str, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [FAKE, mode], "languages": ["python"], **extra}


@asynccontextmanager
async def runtime(
    workspace: Path, servers: dict[str, Any], events: list[Event] | None = None, *, lazy: bool = False
) -> AsyncIterator[Runtime]:
    """A runtime with the lsp plugin and ``servers``, started (``lazy``: by the first tool call)."""
    document = {"lsp_servers": servers}
    async with open_runtime(workspace, kairox_lsp.hooks, document, start="lazy" if lazy else False) as rt:
        if events is not None:
            rt.events.subscribe(events.append)
        if not lazy:
            await rt.start_providers()
        yield rt


def provider(rt: Runtime) -> LspToolProvider:
    p = rt.providers.get("lsp")
    assert isinstance(p, LspToolProvider)
    return p


DEFINITION = {"path": "pkg/main.py", "line": 6, "column": 15}


E = TypeVar("E", bound=Event)


async def _wait_for(events: list[Event], kind: type[E], count: int = 1, timeout: float = 30) -> list[E]:
    with anyio.fail_after(timeout):
        while len(found := [e for e in events if isinstance(e, kind)]) < count:  # noqa: ASYNC110 - events list
            await anyio.sleep(0.01)
    return found


@pytest.mark.anyio
async def test_events_tools_and_status_over_a_normal_life(project: Path) -> None:
    events: list[Event] = []
    async with runtime(project, {"py": pyright()}, events) as rt:
        assert [type(e) for e in events if type(e).__module__.startswith("kairox_lsp")] == [
            LspServerStarting,
            LspServerRunning,
        ]
        running = next(e for e in events if isinstance(e, LspServerRunning))
        assert running.server == "py" and running.position_encoding == "utf-16"
        assert running.server_name == "basedpyright"
        [status] = provider(rt).status()
        assert status.state is ServerState.READY and status.kind == "lsp" and status.tools == 6
        assert f"pid {running.pid}" in status.detail
        assert "lsp.definition" in rt.tools
        result = await rt.call_tool("lsp.definition", DEFINITION)
        assert result.text.splitlines()[1] == "pkg/shapes.py:8:7: class Circle:"
        assert result.structured == {
            "locations": [{"path": "pkg/shapes.py", "line": 8, "column": 7, "text": "class Circle:"}],
            "total": 1,
        }
        pid = running.pid
    assert isinstance(events[-1], Event)
    stopped = [e for e in events if isinstance(e, LspServerStopped)]
    assert len(stopped) == 1 and stopped[0].server == "py"
    assert any(isinstance(e, ToolsChanged) and "lsp.definition" in e.removed for e in events)
    assert alive([pid]) == []


@pytest.mark.anyio
async def test_a_server_started_by_a_lazy_runtime_s_first_call_is_stopped_by_aclose(project: Path) -> None:
    """``start="lazy"`` (``kairox tools call``): the server starts for the call (start_for), and
    ``Runtime.aclose`` stops it as it stops a provider started at open: goodbye, exit, reaped."""
    events: list[Event] = []
    async with runtime(project, {"py": pyright()}, events, lazy=True) as rt:
        assert not any(isinstance(e, LspServerStarting) for e in events)
        result = await rt.call_tool("lsp.definition", DEFINITION)
        assert result.text.splitlines()[1] == "pkg/shapes.py:8:7: class Circle:"
        server = provider(rt).servers["py"]
        pid = server.pid
        assert pid is not None and alive([pid]) == [pid]
        await rt.aclose()  # not the cancellation at the end of the runtime's block
        assert server.state is ServerState.STOPPED
        assert alive([pid]) == []
        [stopped] = [e for e in events if isinstance(e, LspServerStopped)]
        assert stopped.returncode == 0  # it exited after shutdown + exit, it was not killed
        assert "lsp.definition" not in rt.tools


@pytest.mark.anyio
async def test_server_killed_mid_request_fails_promptly_and_restarts(project: Path) -> None:
    events: list[Event] = []
    async with runtime(project, {"py": pyright()}, events) as rt:
        server = provider(rt).servers["py"]
        assert (await rt.call_tool("lsp.definition", DEFINITION)).is_error is False
        old_pid = server.pid
        assert old_pid is not None
        os.killpg(old_pid, signal.SIGSTOP)  # it can no longer answer
        results: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                results.append(await rt.call_tool("lsp.references", {"path": "pkg/shapes.py", "line": 8, "column": 7}))

            tg.start_soon(call)
            with anyio.fail_after(10):
                while server.client is None or not server.client._pending:  # noqa: ASYNC110 - no event for this
                    await anyio.sleep(0.01)
            killed_at = time.monotonic()
            os.killpg(old_pid, signal.SIGKILL)
        assert time.monotonic() - killed_at < 3  # not the 30 s request timeout
        [result] = results
        assert result.is_error
        assert "went away during the request" in result.text
        failed = await _wait_for(events, LspServerFailed)
        assert failed[0].restart_in == pytest.approx(0.5)
        assert failed[0].returncode == -signal.SIGKILL
        running = await _wait_for(events, LspServerRunning, count=2)
        assert running[1].pid != old_pid
        assert [e.attempt for e in events if isinstance(e, LspServerStarting)] == [1, 2]
        # tools stayed registered through the restart, the document was opened again
        assert not any(isinstance(e, ToolsChanged) and e.removed for e in events)
        assert project / "pkg" / "main.py" in server.documents
        again = await rt.call_tool("lsp.definition", DEFINITION)
        assert again.text.splitlines()[1] == "pkg/shapes.py:8:7: class Circle:"
        assert "restarted 1x" in provider(rt).status()[0].detail
        assert alive([old_pid]) == []


@pytest.mark.anyio
async def test_crash_without_restarts_left_is_a_failure_with_stderr(project: Path) -> None:
    events: list[Event] = []
    async with runtime(project, {"f": fake("crash-after-init", max_restarts=0)}, events) as rt:
        assert "lsp.hover" in rt.tools
        result = await rt.call_tool("lsp.hover", {"path": "pkg/main.py", "line": 1, "column": 1})
        assert result.is_error and "went away" in result.text
        [failed] = await _wait_for(events, LspServerFailed)
        assert failed.restart_in is None and failed.returncode == 3
        assert "crashing on purpose" in failed.stderr_tail
        [status] = provider(rt).status()
        assert status.state is ServerState.FAILED
        assert "lsp.hover" not in rt.tools
        assert rt.status().ok is False


@pytest.mark.anyio
async def test_one_broken_server_does_not_stop_the_others(project: Path) -> None:
    servers = {
        "missing": {"command": "kairox-no-such-language-server", "file_patterns": ["*.nothing"]},
        "silent": fake("silent", startup_timeout=0.5, file_patterns=["*.silent"]),
        "py": pyright(),
    }
    async with runtime(project, servers) as rt:
        status = {s.name: s for s in provider(rt).status()}
        assert status["py"].state is ServerState.READY
        assert status["missing"].state is ServerState.FAILED
        assert "is not on PATH" in status["missing"].detail
        assert status["silent"].state is ServerState.FAILED
        assert "no answer to initialize within 0.5 s" in status["silent"].detail
        result = await rt.call_tool("lsp.definition", DEFINITION)
        assert not result.is_error
        (project / "x.nothing").write_text("")
        result = await rt.call_tool("lsp.hover", {"path": "x.nothing", "line": 1, "column": 1})
        assert result.is_error and "language server missing failed" in result.text


@pytest.mark.anyio
async def test_server_hanging_on_exit_is_hard_killed(project: Path) -> None:
    async with runtime(project, {"hang": fake("hang-on-exit", shutdown_timeout=0.3)}) as rt:
        server = provider(rt).servers["hang"]
        pid = server.pid
        assert pid is not None and alive([pid]) == [pid]
        started = time.monotonic()
    assert time.monotonic() - started < 5
    assert alive([pid]) == []


@pytest.mark.anyio
async def test_cancelling_the_runtime_reaps_the_servers(project: Path) -> None:
    pids: list[int] = []
    with anyio.move_on_after(30) as scope:
        # the hanging server gets a test-sized shutdown_timeout (3 s): this test is about the reaping
        hang = fake("hang-on-exit", file_patterns=["*.x"], shutdown_timeout=0.3)
        async with runtime(project, {"py": pyright(), "hang": hang}) as rt:
            pids = [s.pid for s in provider(rt).servers.values() if s.pid]
            assert len(pids) == 2
            async with anyio.create_task_group() as tg:
                tg.start_soon(rt.call_tool, "lsp.references", {"path": "pkg/shapes.py", "line": 8, "column": 7})
                await anyio.sleep(0.05)
                scope.cancel()
    assert scope.cancelled_caught
    assert alive(pids) == []
    assert live_children() == []


@pytest.mark.anyio
async def test_cancelling_during_startup_reaps(project: Path) -> None:
    with anyio.move_on_after(0.5):
        async with runtime(project, {"silent": fake("silent", startup_timeout=30)}):
            pytest.fail("the silent server cannot become ready")
    assert live_children() == []


@pytest.mark.anyio
async def test_a_file_changed_on_disk_is_sent_again(project: Path) -> None:
    async with runtime(project, {"py": pyright()}) as rt:
        assert "pkg/shapes.py:8:7" in (await rt.call_tool("lsp.definition", DEFINITION)).text
        main = project / "pkg" / "main.py"
        main.write_text("# one more line\n" + main.read_text())
        result = await rt.call_tool("lsp.definition", {"path": "pkg/main.py", "line": 7, "column": 15})
        assert result.text.splitlines() == [
            "definition of `Circle` at pkg/main.py:7:15:",
            "pkg/shapes.py:8:7: class Circle:",
        ]
        doc = provider(rt).servers["py"].documents.get(main)
        assert doc is not None and doc.version == 2


@pytest.mark.anyio
async def test_plugin_servers_start_and_bring_their_tools(project: Path) -> None:
    events: list[Event] = []
    async with runtime(project, {}, events) as rt:
        assert "lsp.definition" not in rt.tools
        errors = add_bundle_servers(
            rt,
            "pyplugin",
            {
                "pyright": {
                    "command": server_command("basedpyright-langserver"),
                    "args": ["--stdio"],
                    "extensionToLanguage": {".py": "python"},
                    "startupTimeout": 20000,
                },
                "broken": {"command": "x"},
            },
            root=project,
            file=str(project / "plugin.json"),
        )
        assert [e.path for e in errors] == ["pyplugin.lspServers.broken.extensionToLanguage"]
        await _wait_for(events, LspServerRunning)
        assert "lsp.definition" in rt.tools
        [status] = provider(rt).status()
        assert status.name == "pyplugin:pyright" and status.source == "plugin pyplugin"
        result = await rt.call_tool("lsp.definition", DEFINITION)
        assert result.text.splitlines()[1] == "pkg/shapes.py:8:7: class Circle:"
        assert add_bundle_servers(rt, "pyplugin", "../outside.json", root=project)[0].message.endswith(
            "leaves the plugin directory"
        )
