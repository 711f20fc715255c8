"""The call pipeline (:mod:`kairox._call`) as a tool call takes it: its events are built only
for listeners (a ``kairox_event`` hookimpl counts) and reach one that comes later; the hooks
it runs follow every change of the plugins and run-time hooks, including one registered while
the tool runs; the resolve step hands the tool and the hooks the registry's exported spec; and a
hook's rewrite of a read tool's arguments reaches the tool without a second decision."""

from __future__ import annotations

from typing import Any

import pytest

from kairox import (
    Block,
    Event,
    FunctionTool,
    PolicyDenied,
    Runtime,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolSpec,
)
from kairox_testing import InMemoryToolProvider, KairoxHarness, make_plugin

from .tool_helpers import read_tool

pytestmark = pytest.mark.anyio


# -- events --------------------------------------------------------------------------------


async def test_tool_call_events_reach_a_listener_that_comes_later(kairox_harness: KairoxHarness) -> None:
    provider = InMemoryToolProvider("mem", [read_tool()])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        assert (await rt.call_tool("mem.echo", {"text": "a"})).text == "echo:a"  # nobody listens
        seen: list[Event] = []
        rt.events.subscribe(seen.append, ToolCallStarted, ToolCallFinished)
        await rt.call_tool("mem.echo", {"text": "b"})
        assert [(e.kind, e.call_id) for e in seen] == [("ToolCallStarted", "c2"), ("ToolCallFinished", "c2")]
        assert isinstance(seen[1], ToolCallFinished) and seen[1].outcome == "ok"


async def test_a_kairox_event_hookimpl_is_a_listener(kairox_harness: KairoxHarness) -> None:
    got: list[str] = []

    def on_event(event: Event, runtime: Runtime) -> None:
        if isinstance(event, (ToolCallStarted, ToolCallFinished)):
            got.append(event.kind)

    provider = InMemoryToolProvider("mem", [read_tool()])
    observer = make_plugin("observer", kairox_event=on_event)
    async with kairox_harness.open(plugins=[provider.plugin(), observer]) as rt:
        assert rt.events.has_listeners(ToolCallStarted)
        await rt.call_tool("mem.echo", {"text": "x"})
        rt.host.pm.unregister(name="observer")
        assert not rt.events.has_listeners(ToolCallStarted)
        await rt.call_tool("mem.echo", {"text": "y"})
    assert got == ["ToolCallStarted", "ToolCallFinished"]


# -- hooks ---------------------------------------------------------------------------------


async def test_hook_targets_follow_plugins_and_runtime_hooks(kairox_harness: KairoxHarness) -> None:
    calls: list[str] = []

    def guard(call: ToolCall) -> Block | None:
        calls.append("guard:" + call.arguments["text"])
        return Block("no") if call.arguments["text"] == "stop" else None

    provider = InMemoryToolProvider("mem", [read_tool()])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        assert not rt.dispatch.implemented("kairox_pre_tool_call")
        await rt.call_tool("mem.echo", {"text": "1"})
        rt.host.register(make_plugin("guard", kairox_pre_tool_call=guard), name="guard")
        assert rt.dispatch.implemented("kairox_pre_tool_call")
        with pytest.raises(PolicyDenied, match="blocked by a hook: no"):
            await rt.call_tool("mem.echo", {"text": "stop"})
        rt.host.pm.unregister(name="guard")
        await rt.call_tool("mem.echo", {"text": "stop"})  # the guard is gone: it runs
        remove = rt.hooks.add("pre_tool_call", lambda call: calls.append("runtime"), source="script")
        await rt.call_tool("mem.echo", {"text": "2"})
        remove()
        await rt.call_tool("mem.echo", {"text": "3"})
        rt.hooks.add("post_tool_call", lambda call, result: calls.append("post:" + result.text), source="s2")
        await rt.call_tool("mem.echo", {"text": "4"})
        rt.hooks.remove_source("s2")
        await rt.call_tool("mem.echo", {"text": "5"})
    assert calls == ["guard:stop", "runtime", "post:echo:4"]


async def test_a_plugin_swapped_for_another_is_the_one_called(kairox_harness: KairoxHarness) -> None:
    """One implementation replaced by another between two calls: as many as before, other ones."""
    seen: list[str] = []

    def guard(name: str) -> Any:
        def pre(call: ToolCall) -> Block | None:
            seen.append(name)
            return Block(name) if name == "b" else None

        return pre

    provider = InMemoryToolProvider("mem", [read_tool()])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        rt.host.pm.register(make_plugin("a", kairox_pre_tool_call=guard("a")), name="a")
        await rt.call_tool("mem.echo", {"text": "1"})
        rt.host.pm.unregister(name="a")
        rt.host.pm.register(make_plugin("b", kairox_pre_tool_call=guard("b")), name="b")
        with pytest.raises(PolicyDenied, match="blocked by a hook: b"):
            await rt.call_tool("mem.echo", {"text": "2"})
    assert seen == ["a", "b"]


async def test_a_hook_registered_while_the_tool_runs_sees_its_result(kairox_harness: KairoxHarness) -> None:
    """post_tool_call's implementations are the ones there when the tool has finished."""
    after: list[str] = []
    rt_box: list[Runtime] = []

    def register_then_answer(text: str = "") -> str:
        post = make_plugin("late", kairox_post_tool_call=lambda result: after.append(result.text))
        rt_box[0].host.pm.register(post, name="late")
        return f"ran:{text}"

    tool = FunctionTool(
        ToolSpec("mem.late", "registers a hook", domain="local", capability="read"), register_then_answer
    )
    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        rt_box.append(rt)
        assert (await rt.call_tool("mem.late", {"text": "a"})).text == "ran:a"
    assert after == ["ran:a"]


async def test_a_hook_s_rewrite_of_a_read_tool_s_arguments_reaches_the_tool_unasked(
    kairox_harness: KairoxHarness,
) -> None:
    """A tool whose decision does not depend on its arguments is not decided again after the
    hooks (no snapshot is taken): what they changed, in place or by returning a dict, is what
    the tool gets, and nobody is asked."""

    def in_place(call: ToolCall) -> None:
        call.arguments["text"] += "-a"

    def replaced(call: ToolCall) -> dict[str, Any]:
        return {"text": call.arguments["text"] + "-b"}

    async def never(request: Any) -> bool:
        raise AssertionError("asked")

    provider = InMemoryToolProvider("mem", [read_tool()])
    plugins = [
        provider.plugin(),
        make_plugin("one", kairox_pre_tool_call=in_place),
        make_plugin("two", kairox_pre_tool_call=replaced),
    ]
    async with kairox_harness.open(plugins=plugins) as rt:
        given = {"text": "x"}
        result = await rt.call_tool("mem.echo", given, approver=never)
        assert given == {"text": "x"}  # the caller's mapping is not the one changed
    assert result.text in ("echo:x-a-b", "echo:x-b-a")


# -- resolve -------------------------------------------------------------------------------


async def test_a_tool_seen_through_the_registry_is_called_with_its_exported_spec(
    kairox_harness: KairoxHarness,
) -> None:
    """A tool whose exported name differs from its id (the registry hands out a view): the call
    reaches the tool, and hooks and the policy see the view's spec."""
    seen: list[tuple[str, str]] = []

    def pre(call: ToolCall) -> None:
        seen.append((call.tool.id, call.tool.exported_name))

    tool = FunctionTool(ToolSpec("mem.dotted.name", "echo", domain="local", capability="read"), lambda text="": text)
    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin(), make_plugin("pre", kairox_pre_tool_call=pre)]) as rt:
        exported = rt.tools.get_spec("mem.dotted.name").exported_name
        assert exported and exported != "mem.dotted.name"
        assert (await rt.call_tool(exported, {"text": "v"})).text == "v"
        assert (await rt.call_tool("mem.dotted.name", {"text": "w"})).text == "w"
    assert seen == [("mem.dotted.name", exported)] * 2
