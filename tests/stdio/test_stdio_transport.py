"""The stdio transport with well-behaved servers: messages, environment, cwd, stderr, errors, shutdown.

Every test runs the SDK's ClientSession over StdioTransport directly and
checks that no process is left behind.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from stdio_helpers import FAST, Recorder, context, open_session, server

from kairox._registrar import Registrar
from kairox_mcp.config import McpServerConfig
from kairox_mcp.transport import ConnectContext, McpTransport
from kairox_stdio import InvalidServerMessage, StdioServerError, StdioTransport

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]


async def test_echo_and_a_five_megabyte_result_line(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    with anyio.fail_after(30):
        async with open_session(server("well_behaved"), ctx) as session:
            assert session.server_info.name == "well_behaved"
            tools = await session.list_tools()
            assert {"echo", "big", "sleep", "env", "cwd", "log"} <= {t.name for t in tools.tools}
            result = await session.call_tool("echo", {"message": "héllo wörld"})
            assert result.content[0].text == "héllo wörld"
            big = await session.call_tool("big", {"size": 5_000_000})
            assert len(big.content[0].text) == 5_000_000
            assert ctx.diagnostics.pid is not None
    assert ctx.diagnostics.exit_code == 0  # it exited by itself on stdin EOF
    assert ctx.diagnostics.error is None


async def test_environment_is_the_base_set_plus_what_the_entry_declares(tmp_path: Path) -> None:
    runtime_env = {
        "PATH": os.environ["PATH"],
        "HOME": "/home/someone",
        "LANG": "C.UTF-8",
        "HTTPS_PROXY": "http://proxy.invalid:3128",
        "OPENAI_API_KEY": "sk-not-for-servers",
        "GITHUB_TOKEN": "ghp_for_this_server",
        "EXTRA": "passed by name",
    }
    config = server("well_behaved", env={"GITHUB_TOKEN": "", "MODE": "test"}, env_vars=["EXTRA"])
    ctx = context(tmp_path, env=runtime_env)
    with anyio.fail_after(30):
        async with open_session(config, ctx) as session:
            env = json.loads((await session.call_tool("env", {})).content[0].text)
    env.pop("LC_CTYPE", None)  # Python may set it when coercing the C locale
    assert env == {
        "PATH": os.environ["PATH"],
        "HOME": "/home/someone",
        "LANG": "C.UTF-8",
        "HTTPS_PROXY": "http://proxy.invalid:3128",
        "GITHUB_TOKEN": "ghp_for_this_server",
        "MODE": "test",
        "EXTRA": "passed by name",
    }


async def test_inherit_env_passes_everything(tmp_path: Path) -> None:
    runtime_env = {"PATH": os.environ["PATH"], "SOMETHING_ELSE": "yes"}
    ctx = context(tmp_path, env=runtime_env)
    with anyio.fail_after(30):
        async with open_session(server("well_behaved", inherit_env=True), ctx) as session:
            env = json.loads((await session.call_tool("env", {})).content[0].text)
    assert env["SOMETHING_ELSE"] == "yes"


@pytest.mark.parametrize("cwd", [None, "sub/dir", "ABSOLUTE"])
async def test_working_directory_is_relative_to_the_workspace(tmp_path: Path, cwd: str | None) -> None:
    (tmp_path / "sub" / "dir").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    given = str(elsewhere) if cwd == "ABSOLUTE" else cwd
    expected = {None: tmp_path, "sub/dir": tmp_path / "sub" / "dir", "ABSOLUTE": elsewhere}[cwd]
    with anyio.fail_after(30):
        async with open_session(server("well_behaved", cwd=given), context(tmp_path)) as session:
            got = (await session.call_tool("cwd", {})).content[0].text
    assert await anyio.Path(got).resolve() == await anyio.Path(expected).resolve()


async def test_stderr_goes_to_the_buffer_and_log_file_never_to_our_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    log_file = tmp_path / "logs" / "server.log"
    ctx = context(tmp_path, log_file=log_file)
    with anyio.fail_after(30):
        async with open_session(server("well_behaved"), ctx) as session:
            await session.call_tool("log", {"text": "line one from the server"})
            await session.call_tool("log", {"text": "line two from the server"})
    captured = capfd.readouterr()
    assert "from the server" not in captured.err and "from the server" not in captured.out
    assert ctx.diagnostics.stderr.lines()[:2] == ["line one from the server", "line two from the server"]
    text = log_file.read_text()
    assert "line one from the server\nline two from the server\n" in text
    assert "--- kairox" in text and "started" in text and "stopped (exit code 0)" in text


async def test_config_object_is_read_defensively(tmp_path: Path) -> None:
    """Any object with the right attributes works (not only McpServerConfig)."""

    class Entry:
        command = sys.executable
        args = [str(server("well_behaved").args[0])]

    with anyio.fail_after(30):
        async with open_session(Entry(), context(tmp_path)) as session:
            assert (await session.call_tool("echo", {"message": "ok"})).content[0].text == "ok"


async def test_missing_command_is_a_clear_error_naming_it(tmp_path: Path) -> None:
    ctx = context(tmp_path, name="ghost")
    config = McpServerConfig(command="kairox-no-such-command-xyz", args=["--flag"])
    with pytest.raises(StdioServerError, match=r"^command not found: 'kairox-no-such-command-xyz'"):
        async with FAST.connect(config, ctx):
            pass
    assert ctx.diagnostics.error is not None and "kairox-no-such-command-xyz" in ctx.diagnostics.error


async def test_missing_command_given_as_a_path(tmp_path: Path) -> None:
    config = McpServerConfig(command=str(tmp_path / "nope" / "server"))
    with pytest.raises(StdioServerError, match="command not found"):
        async with FAST.connect(config, context(tmp_path)):
            pass


async def test_command_that_is_not_executable(tmp_path: Path) -> None:
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(StdioServerError, match="not executable"):
        async with FAST.connect(McpServerConfig(command=str(script)), context(tmp_path)):
            pass


async def test_missing_working_directory(tmp_path: Path) -> None:
    with pytest.raises(StdioServerError, match="working directory does not exist"):
        async with FAST.connect(server("well_behaved", cwd="no/such/dir"), context(tmp_path)):
            pass


async def test_over_long_stdout_line_is_dropped_and_reported_and_the_session_goes_on(tmp_path: Path) -> None:
    transport = StdioTransport(shutdown_grace=0.5, term_grace=0.5, max_message_bytes=4096)
    recorder = Recorder()
    config = server("garbage_stdout", "--long-garbage", "100000")
    with anyio.fail_after(30):
        async with open_session(config, context(tmp_path), transport=transport, message_handler=recorder) as s:
            assert (await s.call_tool("echo", {"message": "still here"})).content[0].text == "still here"
    dropped = [e for e in recorder.errors() if "dropped a stdout line of 100000 bytes" in str(e)]
    assert dropped
    assert isinstance(dropped[0], InvalidServerMessage)
    assert dropped[0].size == 100_000 and len(dropped[0].line) == 200


async def test_closing_during_a_call_stops_a_server_that_does_not_read_eof(tmp_path: Path) -> None:
    """The server is busy in a blocking call, so stdin EOF goes unnoticed: SIGTERM ends it."""
    ctx = context(tmp_path)
    started = time.monotonic()
    with anyio.fail_after(30):
        async with open_session(server("well_behaved"), ctx) as session:
            with anyio.move_on_after(0.3):
                await session.call_tool("sleep", {"seconds": 60})
    assert time.monotonic() - started < 20
    assert ctx.diagnostics.exit_code is not None and ctx.diagnostics.exit_code < 0  # by a signal


async def test_a_write_the_server_stops_reading_ends_the_connection_after_writes_that_went_through(
    tmp_path: Path,
) -> None:
    """The stall timer is one per connection: writes that went through leave it idle, and the
    1 MB request written while the server sleeps (not reading) fails the connection."""
    from mcp.shared.exceptions import MCPError

    ctx = context(tmp_path)
    transport = StdioTransport(shutdown_grace=0.3, term_grace=0.5, write_stall_timeout=0.5)
    failures: list[BaseException] = []

    async def call(session: object, *args: object) -> None:
        try:
            await session.call_tool(*args)  # type: ignore[attr-defined]
        except MCPError as exc:
            failures.append(exc)

    with anyio.fail_after(30):
        async with open_session(server("well_behaved"), ctx, transport=transport, read_timeout=30) as session:
            for i in range(20):
                assert (await session.call_tool("echo", {"message": str(i)})).content[0].text == str(i)
            await anyio.sleep(0.8)  # idle past the stall timeout: nothing is being written
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, session, "sleep", {"seconds": 60})
                await anyio.sleep(0.2)  # the server is asleep in the call now
                tg.start_soon(call, session, "echo", {"message": "x" * 1_000_000})
    assert len(failures) == 2
    assert ctx.diagnostics.error is not None
    assert re.fullmatch(
        r"the server stopped reading its stdin \(a 100\d{4}-byte write blocked for 0\.5 s\)", ctx.diagnostics.error
    )


async def test_a_write_that_blocks_for_less_than_the_stall_timeout_goes_through(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    transport = StdioTransport(shutdown_grace=0.3, term_grace=0.5, write_stall_timeout=20)
    results: list[str] = []

    async def call(session: object, *args: object) -> None:
        result = await session.call_tool(*args)  # type: ignore[attr-defined]
        results.append(result.content[0].text[:10])

    with anyio.fail_after(30):
        async with open_session(server("well_behaved"), ctx, transport=transport, read_timeout=30) as session:
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, session, "sleep", {"seconds": 0.5})
                await anyio.sleep(0.2)  # the server is asleep in the call: the 1 MB write waits for it
                tg.start_soon(call, session, "echo", {"message": "x" * 1_000_000})
    assert sorted(results) == ["slept", "x" * 10]
    assert ctx.diagnostics.error is None


async def test_cancelling_the_owner_task_kills_the_server(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    in_call = anyio.Event()

    async def owner() -> None:
        async with open_session(server("well_behaved"), ctx) as session:
            in_call.set()
            await session.call_tool("sleep", {"seconds": 300})

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(owner)
            await in_call.wait()
            await anyio.sleep(0.1)
            tg.cancel_scope.cancel()
    assert ctx.diagnostics.exit_code is not None and ctx.diagnostics.exit_code < 0
    assert ctx.diagnostics.error is None  # we stopped it: not a failure


async def test_the_session_may_end_before_the_server_answers(tmp_path: Path) -> None:
    """A late answer after the session is gone must not break the transport (no ExceptionGroup)."""
    ctx = context(tmp_path)
    transport = StdioTransport(shutdown_grace=2.0)
    with anyio.fail_after(30):
        async with transport.connect(server("well_behaved"), ctx) as (read, write):
            from mcp import ClientSession

            async with ClientSession(read, write) as session:
                await session.initialize()
                with anyio.move_on_after(0.2):
                    await session.call_tool("sleep", {"seconds": 0.5})
            await anyio.sleep(0.6)  # the answer arrives now, nobody reads it
    assert ctx.diagnostics.error is None


def test_the_transport_satisfies_the_protocol() -> None:
    assert isinstance(StdioTransport(), McpTransport)
    assert StdioTransport.name == "stdio"


def test_hooks_register_the_transport() -> None:
    from kairox_stdio import hooks

    registrar: Registrar[object] = Registrar("transport")
    hooks.kairox_register_transports(registrar)
    assert registrar.names() == ["stdio"]
    assert isinstance(registrar["stdio"], StdioTransport)


def test_importing_the_plugin_does_not_import_mcp() -> None:
    code = "import sys, kairox_stdio.hooks, kairox_stdio; assert 'mcp' not in sys.modules, 'mcp imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


async def test_runtime_finds_the_transport_through_its_entry_point(tmp_path: Path) -> None:
    from kairox import Runtime
    from kairox.ext import Registrar

    async with Runtime.open(tmp_path, home=tmp_path / "home", env={}, start=False) as rt:
        # kairox-mcp's hook (kairox_mcp.hookspecs), called as kairox-mcp calls it
        transports = rt.dispatch.register_owned("kairox_register_transports", Registrar("transport"))
        assert "stdio" in transports
        assert isinstance(transports["stdio"], StdioTransport)


def test_connect_context_defaults() -> None:
    ctx = ConnectContext(server_name="x", workspace=Path("."), env={})
    assert ctx.diagnostics.exit_code is None and ctx.log_file is None


async def test_a_server_that_closes_its_stdout_ends_the_session(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    config = McpServerConfig(command="sh", args=["-c", "exec 1>&-; echo closing stdout >&2; sleep 30"])
    from mcp import ClientSession
    from mcp.shared.exceptions import MCPError

    with anyio.fail_after(20):
        async with FAST.connect(config, ctx) as (read, write), ClientSession(read, write) as session:
            with pytest.raises(MCPError):
                await session.initialize()
            assert ctx.diagnostics.error == "the server closed its stdout"
            assert ctx.diagnostics.exit_code is None  # still running until we close
    assert ctx.diagnostics.exit_code is not None
    assert ctx.diagnostics.stderr.lines() == ["closing stdout"]


async def test_connecting_in_a_cancelled_scope_leaves_nothing(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    entered = False
    with anyio.fail_after(20):
        with anyio.CancelScope() as scope:
            scope.cancel()
            async with FAST.connect(server("well_behaved"), ctx):
                entered = True
                await anyio.sleep(10)
    assert scope.cancelled_caught and entered
    assert ctx.diagnostics.pid is not None and ctx.diagnostics.exit_code is not None
