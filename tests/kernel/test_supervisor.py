"""Tool providers' lives (kairox._supervisor): discover, idle, start once, fail alone, close.

Every test opens a real runtime with inline providers that record what was asked of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from kairox import FunctionTool, ServerState, ServerStatus, ToolNotFound, ToolSpec, hookimpl
from kairox_testing import KairoxHarness

pytestmark = pytest.mark.anyio


class Recorder:
    """A provider that records its calls; ``found`` is what its discover answers."""

    def __init__(
        self,
        name: str,
        *,
        found: bool | None = True,
        start_delay: float = 0.0,
        fail: str = "",
        servers: int = 0,
    ) -> None:
        self.name = name
        self.found = found
        self.start_delay = start_delay
        self.fail = fail
        self.servers = servers
        self.calls: list[str] = []

    async def discover(self, runtime: Any) -> bool | None:
        self.calls.append("discover")
        return self.found

    async def start(self, runtime: Any) -> None:
        self.calls.append("start")
        if self.start_delay:
            await anyio.sleep(self.start_delay)
        if self.fail:
            raise RuntimeError(self.fail)
        tool = FunctionTool(ToolSpec(f"{self.name}.ping", domain="local", capability="read"), lambda: "pong")
        runtime.tools.replace_provider(self.name, [tool])
        self.calls.append("started")

    async def stop(self) -> None:
        self.calls.append("stop")

    def status(self) -> Sequence[ServerStatus]:
        return [ServerStatus(f"{self.name}-{i}", "x", ServerState.READY) for i in range(self.servers)]


class Lazy(Recorder):
    """One that can start for a single tool call."""

    async def start_for(self, name: str, arguments: dict[str, Any]) -> None:
        self.calls.append(f"start_for {name}")
        if name.startswith(f"{self.name}."):
            await self.start(None if False else self.runtime)  # type: ignore[attr-defined]

    async def discover(self, runtime: Any) -> bool | None:
        self.runtime = runtime
        return await super().discover(runtime)


def plugin_of(*providers: Any) -> object:
    class Plugin:
        __name__ = "providers"

        @hookimpl
        def kairox_register_tool_providers(self, registrar: Any, runtime: Any) -> None:
            for provider in providers:
                registrar.add(provider)

    return Plugin()


def state_of(rt: Any, name: str) -> str:
    return {p.name: p.state for p in rt.status().providers}[name]


async def test_a_provider_with_nothing_to_do_stays_idle_until_named(kairox_harness: KairoxHarness) -> None:
    idle, busy = Recorder("idle", found=False), Recorder("busy")
    async with kairox_harness.open(plugins=[plugin_of(idle, busy)]) as rt:
        assert (state_of(rt, "idle"), state_of(rt, "busy")) == ("idle", "ready")
        assert idle.calls == ["discover"] and "idle.ping" not in rt.tools
        await rt.start_providers(["idle"])
        assert state_of(rt, "idle") == "ready" and "idle.ping" in rt.tools
    assert idle.calls == ["discover", "start", "started", "stop"]


async def test_an_idle_provider_given_servers_during_discovery_starts(kairox_harness: KairoxHarness) -> None:
    given = Recorder("given", found=False, servers=1)  # another's discovery handed it a server
    async with kairox_harness.open(plugins=[plugin_of(given)]) as rt:
        assert state_of(rt, "given") == "ready"


async def test_two_starts_at_once_start_a_provider_once(kairox_harness: KairoxHarness) -> None:
    slow = Recorder("slow", start_delay=0.2)
    async with kairox_harness.open(plugins=[plugin_of(slow)], start=False) as rt:
        async with anyio.create_task_group() as tg:
            tg.start_soon(rt.start_providers)
            tg.start_soon(rt.start_providers)
            tg.start_soon(rt.start_providers, ["slow"])
        assert slow.calls.count("start") == 1 and slow.calls.count("discover") == 1


async def test_a_failing_provider_fails_alone_and_its_tools_name_it(kairox_harness: KairoxHarness) -> None:
    bad, good = Recorder("bad", fail="no such binary"), Recorder("good")
    async with kairox_harness.open(plugins=[plugin_of(bad, good)]) as rt:
        assert (state_of(rt, "bad"), state_of(rt, "good")) == ("failed", "ready")
        with pytest.raises(ToolNotFound, match="tool provider bad of providers: RuntimeError: no such binary"):
            await rt.call_tool("bad.ping")


async def test_a_provider_that_takes_too_long_fails(kairox_harness: KairoxHarness) -> None:
    stuck = Recorder("stuck", start_delay=30)
    async with kairox_harness.open(plugins=[plugin_of(stuck)], start=False) as rt:
        rt.provider_start_timeout = 0.2
        await rt.start_providers()
        [state] = [p for p in rt.status().providers if p.name == "stuck"]
        assert state.state == "failed" and "within 0.2 s" in state.error


async def test_closing_ends_a_start_in_progress_before_it_stops(kairox_harness: KairoxHarness) -> None:
    slow = Recorder("slow", start_delay=30)
    async with kairox_harness.open(plugins=[plugin_of(slow)], start=False) as rt:
        rt.spawn(rt.start_providers)
        for _ in range(100):
            if "start" in slow.calls:
                break
            await anyio.sleep(0.01)
    # the start was cancelled and awaited first, so the stop came after it, once
    assert slow.calls == ["discover", "start", "stop"]


async def test_a_provider_whose_start_closes_the_runtime_does_not_wait_for_itself(
    kairox_harness: KairoxHarness,
) -> None:
    class Closer(Recorder):
        async def start(self, runtime: Any) -> None:
            self.calls.append("start")
            with anyio.fail_after(5):
                await runtime.aclose()
            self.calls.append("closed")

    closer = Closer("closer")
    with anyio.fail_after(10):  # waiting for its own start stage would never end
        async with kairox_harness.open(plugins=[plugin_of(closer)], start=False) as rt:
            await rt.start_providers()
    assert closer.calls == ["discover", "start", "stop"]  # closing ended its start


async def test_a_lazy_runtime_starts_only_what_a_call_needs(kairox_harness: KairoxHarness) -> None:
    a, b, eager = Lazy("a"), Lazy("b"), Recorder("eager")
    async with kairox_harness.open(plugins=[plugin_of(a, b, eager)], start="lazy") as rt:
        assert "start" not in a.calls and "start" not in b.calls and "started" in eager.calls
        assert (await rt.call_tool("a.ping")).text == "pong"
        assert "started" in a.calls and "started" not in b.calls
        assert "start_for a.ping" in b.calls  # asked, and it said it is not its tool
        # an activated provider is shown as ready, not "stopped"
        assert state_of(rt, "a") == "ready"


async def test_closing_ends_a_start_for_one_call_before_it_stops(kairox_harness: KairoxHarness) -> None:
    """A lazy start for one tool call is a start stage too: closing cancels it and waits, so
    the provider's stop never runs beside its start."""
    slow = Lazy("slow", start_delay=30)
    outcome: list[str] = []

    async def call(rt: Any) -> None:  # a host's own task (a gateway request), not the runtime's
        try:
            await rt.call_tool("slow.ping")
            outcome.append("called")
        except Exception as exc:
            outcome.append(type(exc).__name__)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as host:
            async with kairox_harness.open(plugins=[plugin_of(slow)], start="lazy") as rt:
                host.start_soon(call, rt)
                for _ in range(100):
                    if "start" in slow.calls:
                        break
                    await anyio.sleep(0.01)
    assert slow.calls == ["discover", "start_for slow.ping", "start", "stop"]
    assert outcome == ["ToolNotFound"]


async def test_a_failing_discovery_is_that_provider_s_failure(kairox_harness: KairoxHarness) -> None:
    class Broken(Recorder):
        async def discover(self, runtime: Any) -> bool | None:
            raise RuntimeError("cannot read my file")

    broken, good = Broken("broken"), Recorder("good")
    async with kairox_harness.open(plugins=[plugin_of(broken, good)]) as rt:
        [state] = [p for p in rt.status().providers if p.name == "broken"]
        assert state.state == "failed" and "discovery failed: RuntimeError: cannot read my file" in state.error
        assert "start" not in broken.calls and state_of(rt, "good") == "ready"


async def test_a_cancelled_discovery_is_no_discovery(kairox_harness: KairoxHarness) -> None:
    class Slow(Recorder):
        async def discover(self, runtime: Any) -> bool | None:
            self.calls.append("discover")
            await anyio.sleep(0.3 if self.calls.count("discover") == 1 else 0)
            return True

    from kairox import Runtime

    slow = Slow("slow")
    h = kairox_harness
    rt = Runtime(h.workspace, home=h.home, env=h.env, plugins=[plugin_of(slow)], load_entrypoints=False)
    with anyio.move_on_after(0.05):
        await rt.supervisor.discover()
    assert slow.calls == ["discover"]
    await rt.supervisor.discover()  # the cancelled one did not count: it runs again, and ends
    await rt.supervisor.discover()  # once ended, it is not run again
    assert slow.calls == ["discover", "discover"] and "slow" not in rt.supervisor.states
