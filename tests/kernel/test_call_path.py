"""The per-call path (issue 17): hook targets resolved once and again when plugins change,
events built only for listeners, policy decisions remembered per spec (and forgotten when
the policy changes). What it costs is in ``benchmarks/bench_peers.py --only latency``."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from kairox import (
    Block,
    Event,
    EventBus,
    PolicyDenied,
    Runtime,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolsChanged,
    ToolSpec,
)
from kairox._policy import Allow, Deny, PolicyConfig, PolicyEngine
from kairox.testing import InMemoryToolProvider, KairoxHarness, make_plugin

from .tool_helpers import read_tool

pytestmark = pytest.mark.anyio


# -- the event bus ------------------------------------------------------------------


async def test_has_listeners_counts_matching_subscribers_streams_and_active_ones() -> None:
    bus = EventBus()
    assert not bus.has_listeners(ToolCallStarted)
    off = bus.subscribe(lambda e: None, ToolsChanged)
    assert not bus.has_listeners(ToolCallStarted) and bus.has_listeners(ToolsChanged)
    off()
    wanted = [False]
    seen: list[Event] = []
    bus.subscribe(seen.append, active=lambda: wanted[0])
    assert not bus.has_listeners(ToolCallStarted)  # a forwarder with nobody to forward to
    wanted[0] = True
    assert bus.has_listeners(ToolCallStarted)
    wanted[0] = False
    async with bus.stream(ToolCallFinished) as _events:
        assert bus.has_listeners(ToolCallFinished) and not bus.has_listeners(ToolCallStarted)
    assert not bus.has_listeners(ToolCallFinished)
    bus.publish(ToolsChanged(provider="p"))  # an inactive subscriber still gets what is published
    assert [e.kind for e in seen] == ["ToolsChanged"]


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


# -- hook targets ------------------------------------------------------------------------


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


# -- policy decisions --------------------------------------------------------------------


def test_decisions_are_remembered_and_forgotten_when_the_policy_changes(tmp_path: Any) -> None:
    engine = PolicyEngine.build(PolicyConfig(), tmp_path)
    spec = ToolSpec("mem.echo", domain="local", capability="read")
    first = engine.decide_at(spec, "none")
    assert isinstance(first, Allow)
    assert engine.decide_at(spec, "outside") is first  # a read tool's location does not matter
    engine.config = attrs.evolve(engine.config, rules={"mem.*": "deny"})
    assert isinstance(engine.decide_at(spec, "none"), Deny)
    # a spec with the same id but other facts is decided on its own
    other = attrs.evolve(spec, capability="execute")
    assert engine.decide_at(other, "none").kind == "deny"
    engine.config = PolicyConfig()
    assert engine.decide_at(other, "none").kind == "ask"


def test_a_remembered_decision_is_the_decision(tmp_path: Any) -> None:
    """Every cell the engine can be asked, twice: the second answer is the first one's."""
    config = PolicyConfig(rules={"w.*": "allow", "x.deny": "deny", "a.*": "ask"})
    fresh = PolicyEngine.build(config, tmp_path)
    cached = PolicyEngine.build(config, tmp_path)
    for tid in ("w.one", "x.deny", "a.b", "plain.tool"):
        for domain in ("local", "network", "system"):
            for capability in ("read", "write", "execute"):
                spec = ToolSpec(tid, domain=domain, capability=capability)
                for location in ("inside", "outside", "none"):
                    cached.decide_at(spec, location)  # type: ignore[arg-type]
                    again = cached.decide_at(spec, location)  # type: ignore[arg-type]
                    assert again == PolicyEngine.build(config, tmp_path).decide_at(spec, location)  # type: ignore[arg-type]
                    assert again == fresh._decide_at(spec, location if capability == "write" else "none")  # type: ignore[arg-type]
