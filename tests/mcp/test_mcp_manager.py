"""McpServerManager and ServerLifecycle against in-process SDK servers (in-memory transport).

Real processes and real HTTP are in test_http.py / test_stdio_peers.py; here the
client side's logic: registration, list_changed swaps, pagination, timeouts,
filters, resources/prompts, failure isolation and events.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp_helpers import MemoryTransport, memory_config, open_runtime
from shared_helpers import loaded_after

from kairox._events import ProviderFailed, ToolsChanged
from kairox._tools import ImageContent
from kairox._types import Capability, Domain, ServerState
from kairox.errors import ToolError
from kairox_mcp import (
    McpServerFailed,
    McpServerReady,
    McpServerStarting,
    McpServerStopped,
    McpToolsRefreshed,
    manager_of,
)

TINY_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def make_server(name: str = "mem") -> tuple[MCPServer, dict[str, Any]]:
    server = MCPServer(name, version="1.0")
    state: dict[str, Any] = {"cancelled": 0, "on_cancel": anyio.Event()}

    @server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def image() -> list[Any]:
        return [types.ImageContent(type="image", data=TINY_PNG, mime_type="image/png")]

    @server.tool(annotations=types.ToolAnnotations(destructive_hint=True, open_world_hint=True))
    async def slow(seconds: float, ctx: Context) -> str:
        try:
            steps = max(1, int(seconds * 10))
            for i in range(steps):
                await ctx.report_progress(i + 1, steps, f"step {i + 1}")
                await anyio.sleep(0.1)
            return "done"
        except anyio.get_cancelled_exc_class():
            state["cancelled"] += 1
            state["on_cancel"].set()
            raise

    @server.tool()
    async def grow(ctx: Context) -> str:
        def extra() -> str:
            return "extra!"

        server.add_tool(extra, name="extra")
        await ctx.session.send_tool_list_changed()
        return "grown"

    @server.tool()
    async def swap(ctx: Context) -> str:
        server.remove_tool("add")

        def subtract(a: int, b: int) -> int:
            return a - b

        server.add_tool(subtract, name="subtract")
        await ctx.session.send_tool_list_changed()
        return "swapped"

    @server.resource("demo://hello", mime_type="text/plain")
    def hello() -> str:
        return "hello resource"

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello {name}!"

    return server, state


@pytest.mark.anyio
async def test_tools_register_with_canonical_ids_and_call_through_the_runtime(tmp_path: Path) -> None:
    server, _ = make_server()
    transport = MemoryTransport({"mem": server})
    async with open_runtime(tmp_path, {"mem": memory_config()}, transports=(transport,)) as rt:
        ids = [s.id for s in rt.tools.by_provider("mcp:mem")]
        assert ids == ["mem.add", "mem.grow", "mem.image", "mem.slow", "mem.swap"]
        spec = rt.tools.get_spec("mem.add")
        assert (spec.domain, spec.capability) == (Domain.SYSTEM, Capability.READ)
        assert spec.exported_name == "mem_add"
        assert rt.tools.get_spec("mem.slow").domain is Domain.NETWORK
        result = await rt.call_tool("mem_add", {"a": 2, "b": 3})
        assert result.text == "5" and result.structured == {"result": 5} and not result.is_error
        image = await rt.call_tool("mem.image", {}, approver=lambda r: True)
        assert image.content == (ImageContent(data=TINY_PNG, mime_type="image/png"),)
        bad = await rt.call_tool("mem.add", {"a": "x"})
        assert bad.is_error
        status = manager_of(rt).status()
        assert [(s.name, s.kind, s.state, s.tools) for s in status] == [("mem", "mcp", ServerState.READY, 5)]
        assert "mem 1.0" in status[0].detail
        assert rt.status().servers == list(status)


@pytest.mark.anyio
async def test_progress_notifications_reach_the_caller(tmp_path: Path) -> None:
    server, _ = make_server()
    async with open_runtime(tmp_path, {"mem": memory_config()}, transports=(MemoryTransport({"mem": server}),)) as rt:
        seen: list[tuple[float, float | None, str | None]] = []

        async def progress(p: float, total: float | None, message: str | None) -> None:
            seen.append((p, total, message))

        result = await rt.call_tool("mem.slow", {"seconds": 0.3}, progress=progress, approver=lambda r: True)
        assert result.text == "done"
        assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


@pytest.mark.anyio
async def test_tool_timeout_fails_the_call_and_cancels_it_on_the_server(tmp_path: Path) -> None:
    server, state = make_server()
    config = memory_config(tool_timeout=0.3)
    async with open_runtime(tmp_path, {"mem": config}, transports=(MemoryTransport({"mem": server}),)) as rt:
        with anyio.fail_after(5):
            with pytest.raises(ToolError, match=r"timed out after 0\.3 s"):
                await rt.call_tool("mem.slow", {"seconds": 5}, approver=lambda r: True)
            await state["on_cancel"].wait()  # notifications/cancelled reached the server's handler
        assert state["cancelled"] == 1
        assert (await rt.call_tool("mem.add", {"a": 1, "b": 1})).text == "2"  # the session is still usable


@pytest.mark.anyio
async def test_list_changed_swaps_the_servers_tools_in_one_event(tmp_path: Path) -> None:
    server, _ = make_server()
    async with open_runtime(
        tmp_path, {"mem": memory_config(protocol="2025-11-25")}, transports=(MemoryTransport({"mem": server}),)
    ) as rt:
        changes: list[Any] = []
        refreshed = anyio.Event()
        rt.events.subscribe(changes.append, ToolsChanged)
        rt.events.subscribe(lambda e: refreshed.set(), McpToolsRefreshed)
        with anyio.fail_after(5):
            assert (await rt.call_tool("mem.grow", {}, approver=lambda r: True)).text == "grown"
            await refreshed.wait()
        assert [(c.provider, c.added, c.removed) for c in changes] == [("mcp:mem", ("mem.extra",), ())]
        assert (await rt.call_tool("mem.extra", {}, approver=lambda r: True)).text == "extra!"

        changes.clear()
        refreshed = anyio.Event()
        with anyio.fail_after(5):
            await rt.call_tool("mem.swap", {}, approver=lambda r: True)
            await refreshed.wait()
        assert len(changes) == 1
        assert set(changes[0].added) == {"mem.subtract"} and changes[0].removed == ("mem.add",)
        assert "mem.add" not in rt.tools and "mem.subtract" in rt.tools
        # what the server says it has is what the registry holds (the same objects), not the
        # fresh specs of a re-listing whose unchanged tools were never registered again
        held = manager_of(rt).server("mem").tool_specs
        assert [id(s) for s in held] == [id(s) for s in rt.tools.by_provider("mcp:mem")]


def paginated_server(pages: int, per_page: int) -> Server[Any]:
    names = [f"t{i:03d}" for i in range(pages * per_page)]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        start = int(params.cursor) if params and params.cursor else 0
        chunk = names[start : start + per_page]
        nxt = str(start + per_page) if start + per_page < len(names) else None
        tools = [types.Tool(name=n, input_schema={"type": "object"}) for n in chunk]
        return types.ListToolsResult(tools=tools, next_cursor=nxt)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    return Server("paged", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.mark.anyio
async def test_tools_list_follows_every_page(tmp_path: Path) -> None:
    transport = MemoryTransport({"paged": paginated_server(pages=4, per_page=3)})
    async with open_runtime(tmp_path, {"paged": memory_config()}, transports=(transport,)) as rt:
        assert [s.id for s in rt.tools.by_provider("mcp:paged")] == [f"paged.t{i:03d}" for i in range(12)]
        assert (await rt.call_tool("paged.t011", {}, approver=lambda r: True)).text == "t011"


@pytest.mark.anyio
async def test_filters_prefix_and_declared_domain(tmp_path: Path) -> None:
    server, _ = make_server()
    config = memory_config(
        tool_prefix="m", enabled_tools=["add", "slow", "image"], disabled_tools=["image"], domain="local"
    )
    async with open_runtime(tmp_path, {"mem": config}, transports=(MemoryTransport({"mem": server}),)) as rt:
        specs = {s.id: s for s in rt.tools.by_provider("mcp:mem")}
        assert sorted(specs) == ["m.add", "m.slow"]
        assert specs["m.slow"].domain is Domain.LOCAL and specs["m.slow"].capability is Capability.WRITE


@pytest.mark.anyio
async def test_two_servers_claiming_one_id_keep_the_first_and_say_so(tmp_path: Path) -> None:
    a, _ = make_server("a")
    b, _ = make_server("b")
    servers = {"a": memory_config(tool_prefix="same"), "b": memory_config(tool_prefix="same")}
    async with open_runtime(tmp_path, servers, transports=(MemoryTransport({"a": a, "b": b}),)) as rt:
        owners = {s.provider for s in rt.tools.specs() if s.id.startswith("same.")}
        assert len(owners) == 1
        statuses = {s.name: s for s in manager_of(rt).status()}
        assert all(s.state is ServerState.READY for s in statuses.values())
        assert sum("tools skipped (id taken)" in s.detail for s in statuses.values()) == 1


@pytest.mark.anyio
async def test_resources_and_prompts_api(tmp_path: Path) -> None:
    one, _ = make_server("one")
    two, _ = make_server("two")
    servers = {"one": memory_config(), "two": memory_config()}
    async with open_runtime(tmp_path, servers, transports=(MemoryTransport({"one": one, "two": two}),)) as rt:
        mcp = manager_of(rt)
        resources = await mcp.list_resources()
        assert [(r.server, r.uri, r.mime_type) for r in resources] == [
            ("one", "demo://hello", "text/plain"),
            ("two", "demo://hello", "text/plain"),
        ]
        assert [r.server for r in await mcp.list_resources("two")] == ["two"]
        contents = await mcp.read_resource("one", "demo://hello")
        assert [(c.uri, c.text) for c in contents] == [("demo://hello", "hello resource")]
        prompts = await mcp.list_prompts("one")
        assert [(p.name, p.description, [a.name for a in p.arguments]) for p in prompts] == [
            ("greet", "Greet someone.", ["name"])
        ]
        got = await mcp.get_prompt("one", "greet", {"name": "Ada"})
        assert got.text == "user: Hello Ada!"
        with pytest.raises(ToolError):
            await mcp.read_resource("one", "demo://missing")


@pytest.mark.anyio
async def test_events_of_a_lifecycle(tmp_path: Path) -> None:
    server, _ = make_server()
    transport = MemoryTransport({"mem": server})
    seen: list[Any] = []
    async with open_runtime(tmp_path, {"mem": memory_config()}, transports=(transport,), start=False) as rt:
        rt.events.subscribe(seen.append)
        await rt.start_providers()
    kinds = [e.kind for e in seen if e.kind.startswith("McpServer")]
    assert kinds == ["McpServerStarting", "McpServerReady", "McpServerStopped"]
    ready = next(e for e in seen if isinstance(e, McpServerReady))
    assert ready.tools == 5 and ready.protocol_version and ready.server_info == "mem 1.0"
    assert isinstance(seen[0], type(seen[0]))
    changes = [e for e in seen if isinstance(e, ToolsChanged)]
    assert changes[0].added and changes[-1].removed  # registered when ready, removed on stop
    assert isinstance(next(e for e in seen if e.kind == "McpServerStarting"), McpServerStarting)
    assert isinstance(next(e for e in seen if e.kind == "McpServerStopped"), McpServerStopped)


@pytest.mark.anyio
async def test_missing_transport_plugin_is_named_and_isolated(tmp_path: Path) -> None:
    server, _ = make_server()
    servers = {
        "remote": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        "local": {"command": "mcp-server-git"},  # stdio, the default: kairox-mcp does not bring it
        "odd": {"type": "websocket", "url": "ws://x"},
        "mem": memory_config(),
    }
    seen: list[Any] = []
    transport = MemoryTransport({"mem": server})
    async with open_runtime(tmp_path, servers, transports=(transport,), load_entrypoints=False, start=False) as rt:
        rt.events.subscribe(seen.append)
        await rt.start_providers()
        status = {s.name: s for s in manager_of(rt).status()}
        assert status["mem"].state is ServerState.READY
        assert status["remote"].state is ServerState.FAILED
        assert status["remote"].detail == (
            'transport "sse" is provided by kairox-sse, which is not installed (pip install kairox-sse)'
        )
        assert status["local"].state is ServerState.FAILED
        assert status["local"].detail == (
            'transport "stdio" is provided by kairox-stdio, which is not installed (pip install kairox-stdio)'
        )
        assert status["odd"].state is ServerState.FAILED
        assert status["odd"].detail == 'unknown transport "websocket" (installed transports: memory)'
        failed = [e for e in seen if isinstance(e, McpServerFailed)]
        assert {e.server for e in failed} == {"remote", "local", "odd"} and not any(e.will_restart for e in failed)
        assert not rt.status().ok


@pytest.mark.anyio
async def test_a_required_server_that_fails_fails_the_provider(tmp_path: Path) -> None:
    servers = {"need": {"type": "websocket", "url": "ws://x", "required": True}}
    seen: list[Any] = []
    async with open_runtime(tmp_path, servers, load_entrypoints=False, start=False) as rt:
        rt.events.subscribe(seen.append)
        await rt.start_providers()
    failed = [e for e in seen if isinstance(e, ProviderFailed)]
    assert len(failed) == 1 and failed[0].provider == "mcp" and "required MCP server need" in failed[0].error


@pytest.mark.anyio
async def test_disabled_servers_are_listed_but_not_started(tmp_path: Path) -> None:
    server, _ = make_server()
    transport = MemoryTransport({"mem": server})
    async with open_runtime(tmp_path, {"mem": memory_config(enabled=False)}, transports=(transport,)) as rt:
        assert transport.connects == []
        assert [(s.state, s.detail) for s in manager_of(rt).status()] == [(ServerState.STOPPED, "disabled")]
        assert not rt.tools.by_provider("mcp:mem")


def test_no_servers_means_mcp_is_never_imported(tmp_path: Path) -> None:
    code = (
        "import anyio\n"
        "from kairox import Runtime\n"
        "async def main():\n"
        f"    async with Runtime.open({str(tmp_path)!r}, config_files=[]) as rt:\n"
        "        pass\n"
        "anyio.run(main)"
    )
    assert loaded_after(code, "mcp", "httpx2", "pydantic", "starlette") == []


def test_hooks_modules_are_cheap_to_import() -> None:
    code = "import kairox_mcp.hooks, kairox_sse.hooks, kairox_streamable_http.hooks"
    assert loaded_after(code, "mcp", "httpx2", "httpx", "pydantic", "starlette") == []
