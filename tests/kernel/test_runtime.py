"""The runtime: providers, tool calls through policy and hooks, sessions, lifetime."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import attrs
import pytest

import kairox
from kairox import (
    ApprovalAnswer,
    Block,
    Capability,
    ContextPiece,
    Domain,
    FunctionTool,
    PolicyDenied,
    ProviderFailed,
    ProviderReady,
    ProviderStarting,
    ProviderStopped,
    Runtime,
    ServerState,
    ServerStatus,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolError,
    ToolNotFound,
    ToolResult,
    ToolSpec,
    hookimpl,
)
from kairox._events import HookFailed
from kairox.ext import Registrar
from kairox_testing import Approvals, EventLog, InMemoryToolProvider, KairoxHarness, make_plugin

from .tool_helpers import read_tool

pytestmark = pytest.mark.anyio


def exec_tool(tool_id: str = "mem.run") -> FunctionTool:
    return FunctionTool(ToolSpec(tool_id, "runs something", domain="local", capability="execute"), lambda: "ran")


# -- opening and providers ---------------------------------------------------------


async def test_open_loads_config_and_starts_providers(kairox_harness: KairoxHarness) -> None:
    kairox_harness.write_config('[policy]\napproval = "never"\n', where="user")  # a workspace could only narrow
    provider = InMemoryToolProvider("mem", [read_tool()])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        assert rt.workspace == kairox_harness.workspace.resolve()
        assert rt.config.section("policy").approval.value == "never"
        assert provider.starts == 1 and provider.runtime is rt
        assert "mem.echo" in rt.tools and "mem_echo" in rt.tools
        assert [p.state for p in rt.status().providers if p.name == "mem"] == ["ready"]
    assert provider.stops == 1
    assert "mem.echo" not in rt.tools  # closing removes the provider's tools


async def test_start_false_leaves_providers_stopped(kairox_harness: KairoxHarness) -> None:
    provider = InMemoryToolProvider("mem", [read_tool()])
    async with kairox_harness.open(plugins=[provider.plugin()], start=False) as rt:
        assert provider.starts == 0
        assert "mem.echo" not in rt.tools
        assert [p.state for p in rt.status().providers if p.name == "mem"] == ["stopped"]
        await rt.start_providers(["mem"])
        assert "mem.echo" in rt.tools
    assert provider.stops == 1


async def test_providers_start_in_parallel_and_one_failure_never_stops_the_others(
    kairox_harness: KairoxHarness,
) -> None:
    both_started = anyio.Event()
    started: list[str] = []

    class Slow(InMemoryToolProvider):
        async def start(self, runtime: Runtime) -> None:
            started.append(self.name)
            if len(started) == 2:
                both_started.set()
            with anyio.fail_after(5):  # a sequential start would wait forever here
                await both_started.wait()
            await super().start(runtime)

    a = Slow("a", [read_tool("a.t")])
    b = Slow("b", [read_tool("b.t")])
    broken = InMemoryToolProvider("broken", [read_tool("x.t")], start_error=OSError("cannot reach the server"))
    log = EventLog()

    def subscribe(event: object, runtime: Runtime) -> None:
        log.events.append(event)  # type: ignore[arg-type]

    observer = make_plugin("observer", kairox_event=subscribe)
    async with kairox_harness.open(plugins=[a.plugin(), b.plugin(), broken.plugin(), observer]) as rt:
        assert sorted(started) == ["a", "b"]
        assert {s.id for s in rt.tools.specs()} >= {"a.t", "b.t"}
        assert "x.t" not in rt.tools
        states = {p.name: p for p in rt.status().providers}
        assert states["broken"].state == "failed"
        assert states["broken"].error == "OSError: cannot reach the server"
        assert states["broken"].owner == "broken-provider"
        assert not rt.status().ok
    failed = log.of(ProviderFailed)
    assert [(e.provider, e.error) for e in failed] == [("broken", "OSError: cannot reach the server")]
    assert {e.provider for e in log.of(ProviderStarting)} >= {"a", "b", "broken"}
    assert {e.provider for e in log.of(ProviderReady)} >= {"a", "b"}
    assert {e.provider for e in log.of(ProviderStopped)} >= {"a", "b", "broken"}
    assert broken.stops == 1  # a failed start still gets stop() to clean up


async def test_provider_that_fails_to_stop_does_not_block_the_others(kairox_harness: KairoxHarness) -> None:
    class BadStop(InMemoryToolProvider):
        async def stop(self) -> None:
            await super().stop()
            raise RuntimeError("stop failed")

    bad = BadStop("bad", [read_tool("bad.t")])
    good = InMemoryToolProvider("good", [read_tool("good.t")])
    async with kairox_harness.open(plugins=[bad.plugin(), good.plugin()]):
        pass
    assert good.stops == 1 and bad.stops == 1


async def test_status_lists_servers_of_providers(kairox_harness: KairoxHarness) -> None:
    servers = [
        ServerStatus("git", "mcp", ServerState.READY, tools=3),
        ServerStatus("rust", "lsp", ServerState.FAILED, detail="exited with 1"),
    ]
    provider = InMemoryToolProvider("mgr", servers=servers)
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        status = rt.status()
        assert [s for s in status.servers if s.name in ("git", "rust")] == servers
        assert not status.ok


async def test_spawned_task_lives_until_close(kairox_harness: KairoxHarness) -> None:
    finished = anyio.Event()
    cancelled = []

    async def forever() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.append(True)
            finished.set()

    async with kairox_harness.open() as rt:
        rt.spawn(forever)
        await anyio.lowlevel.checkpoint()
        assert cancelled == []
    assert cancelled == [True]
    with pytest.raises(RuntimeError, match="not open"):
        rt.spawn(forever)


async def test_spawned_task_that_crashes_does_not_take_the_runtime_down(
    kairox_harness: KairoxHarness, caplog: pytest.LogCaptureFixture
) -> None:
    async def crash() -> None:
        raise ValueError("background task failed")

    async with kairox_harness.open() as rt:
        rt.spawn(crash, name="crasher")
        await anyio.sleep(0.01)
        assert "mem" not in rt.tools  # still usable
    assert "background task failed" in caplog.text


async def test_body_exception_propagates_unchanged(kairox_harness: KairoxHarness) -> None:
    provider = InMemoryToolProvider("mem")
    with pytest.raises(KeyError, match="from the body"):
        async with kairox_harness.open(plugins=[provider.plugin()]):
            raise KeyError("from the body")
    assert provider.stops == 1


# -- tool calls ---------------------------------------------------------------------


async def test_call_by_canonical_id_and_exported_name(kairox_runtime: Runtime, kairox_tool_provider) -> None:
    kairox_tool_provider.add(read_tool())
    assert (await kairox_runtime.call_tool("mem.echo", {"text": "a"})).text == "echo:a"
    assert (await kairox_runtime.call_tool("mem_echo", {"text": "b"})).text == "echo:b"
    with pytest.raises(ToolNotFound, match=r"did you mean .mem\.echo."):
        await kairox_runtime.call_tool("mem.ech")


async def test_call_events(kairox_runtime: Runtime, kairox_tool_provider) -> None:
    kairox_tool_provider.add(read_tool())
    log = EventLog(kairox_runtime.events)
    await kairox_runtime.call_tool("mem_echo", {"text": "a"})
    [started] = log.of(ToolCallStarted)
    [finished] = log.of(ToolCallFinished)
    assert started.tool == finished.tool == "mem.echo"
    assert started.call_id == finished.call_id
    assert finished.outcome == "ok" and finished.duration_s >= 0


async def test_tool_error_result_is_returned(kairox_runtime: Runtime, kairox_tool_provider) -> None:
    @kairox_tool_provider.tool("mem.fail", capability="read")
    def fail() -> ToolResult:
        return ToolResult.from_text("no such file", is_error=True)

    log = EventLog(kairox_runtime.events)
    result = await kairox_runtime.call_tool("mem.fail")
    assert result.is_error and result.text == "no such file"
    assert log.of(ToolCallFinished)[0].outcome == "error"


async def test_tool_that_raises_becomes_tool_error(kairox_runtime: Runtime, kairox_tool_provider) -> None:
    @kairox_tool_provider.tool("mem.crash", capability="read")
    def crash() -> str:
        raise ValueError("kaput")

    log = EventLog(kairox_runtime.events)
    with pytest.raises(ToolError, match=r"mem\.crash failed: ValueError: kaput"):
        await kairox_runtime.call_tool("mem.crash")
    assert log.of(ToolCallFinished)[0].outcome == "failed"


async def test_tool_raising_its_own_timeout_is_a_failure_not_a_crash(
    kairox_runtime: Runtime, kairox_tool_provider
) -> None:
    @kairox_tool_provider.tool("mem.slowpeer", capability="read")
    def slow_peer() -> str:
        raise TimeoutError("the peer did not answer")

    with pytest.raises(ToolError, match="the peer did not answer"):
        await kairox_runtime.call_tool("mem.slowpeer")


async def test_timeout(kairox_runtime: Runtime, kairox_tool_provider) -> None:
    @kairox_tool_provider.tool("mem.sleep", capability="read")
    async def sleep() -> str:
        await anyio.sleep(10)
        return "woke"

    with pytest.raises(ToolError, match=r"timed out after 0\.05 s"):
        await kairox_runtime.call_tool("mem.sleep", timeout=0.05)


async def test_progress_and_context(kairox_runtime: Runtime, kairox_tool_provider) -> None:
    seen = []

    @kairox_tool_provider.tool("mem.progress", capability="read")
    async def progress(context) -> str:
        await context.report_progress(1, 2, "half")
        return f"{context.call_id}:{context.runtime is kairox_runtime}"

    result = await kairox_runtime.call_tool("mem.progress", progress=lambda p, t, m: seen.append((p, t, m)))
    assert result.text.endswith(":True")
    assert seen == [(1, 2, "half")]


async def test_execute_tool_needs_approval(kairox_harness: KairoxHarness) -> None:
    provider = InMemoryToolProvider("mem", [exec_tool()])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        log = EventLog(rt.events)
        with pytest.raises(PolicyDenied, match="no approver"):
            await rt.call_tool("mem.run")
        assert log.of(ToolCallFinished)[0].outcome == "denied"

        no = Approvals(ApprovalAnswer.DENY)
        with pytest.raises(PolicyDenied, match="declined"):
            await rt.call_tool("mem.run", approver=no)
        assert len(no.requests) == 1 and no.requests[0].tool.id == "mem.run"

        yes = Approvals(ApprovalAnswer.ALLOW_ONCE)
        assert (await rt.call_tool("mem.run", approver=yes)).text == "ran"
        assert (await rt.call_tool("mem.run", approver=yes)).text == "ran"
        assert len(yes.requests) == 2  # once means once


async def test_unknown_approver_answer_is_a_denial(kairox_harness: KairoxHarness) -> None:
    provider = InMemoryToolProvider("mem", [exec_tool()])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        for answer in ("maybe", "yes please", 0, None, False):
            with pytest.raises(PolicyDenied):
                await rt.call_tool("mem.run", approver=lambda request, a=answer: a)


async def test_allow_for_session_is_remembered_per_session(kairox_harness: KairoxHarness) -> None:
    provider = InMemoryToolProvider("mem", [exec_tool()])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        approvals = Approvals(ApprovalAnswer.ALLOW_SESSION)
        async with rt.session(approver=approvals) as s:
            await s.call_tool("mem.run")
            await s.call_tool("mem.run")
        assert len(approvals.requests) == 1
        async with rt.session(approver=approvals) as s2:
            await s2.call_tool("mem.run")
        assert len(approvals.requests) == 2


async def test_async_approver(kairox_harness: KairoxHarness) -> None:
    provider = InMemoryToolProvider("mem", [exec_tool()])

    async def approve(request):
        await anyio.lowlevel.checkpoint()
        return True

    async with kairox_harness.open(plugins=[provider.plugin()], approver=approve) as rt:
        assert (await rt.call_tool("mem.run")).text == "ran"


# -- tool-call hooks ----------------------------------------------------------------


async def test_pre_tool_call_can_block(kairox_harness: KairoxHarness) -> None:
    provider = InMemoryToolProvider("mem", [read_tool()])
    calls: list[str] = []

    @hookimpl
    def kairox_pre_tool_call(call: ToolCall) -> Block | None:
        calls.append(call.tool.id)
        return Block("not on Fridays") if call.arguments.get("text") == "friday" else None

    guard = make_plugin("guard", kairox_pre_tool_call=kairox_pre_tool_call)
    async with kairox_harness.open(plugins=[provider.plugin(), guard]) as rt:
        assert (await rt.call_tool("mem.echo", {"text": "monday"})).text == "echo:monday"
        with pytest.raises(PolicyDenied, match="blocked by a hook: not on Fridays"):
            await rt.call_tool("mem.echo", {"text": "friday"})
    assert calls == ["mem.echo", "mem.echo"]


async def test_pre_tool_call_rewrites_are_chained_and_policy_decides_again(kairox_harness: KairoxHarness) -> None:
    write = FunctionTool(
        ToolSpec("mem.write", domain="local", capability="write", path_arguments=("path",)),
        lambda path: f"wrote {path}",
    )
    provider = InMemoryToolProvider("mem", [write])

    order = []

    def suffix(call: ToolCall) -> dict[str, str]:
        order.append("suffix")
        return {"path": call.arguments["path"] + ".txt"}

    def escape(call: ToolCall) -> dict[str, str] | None:
        order.append("escape")
        if call.arguments["path"] == "escape":
            return {"path": "/etc/escape"}  # outside the workspace: the policy must ask again
        return None

    # pluggy order: the plugin registered last runs first, and each sees the rewrite before it
    plugins = [provider.plugin(), make_plugin("suffix", kairox_pre_tool_call=suffix)]
    plugins.append(make_plugin("escape", kairox_pre_tool_call=escape))
    async with kairox_harness.open(plugins=plugins) as rt:
        assert (await rt.call_tool("mem.write", {"path": "notes"})).text == "wrote notes.txt"
        assert order == ["escape", "suffix"]
        with pytest.raises(PolicyDenied, match="outside"):
            await rt.call_tool("mem.write", {"path": "escape"})
        approvals = Approvals(True)
        assert (await rt.call_tool("mem.write", {"path": "escape"}, approver=approvals)).text == "wrote /etc/escape.txt"
        [request] = approvals.requests
        assert request.arguments == {"path": "/etc/escape.txt"}


async def test_post_tool_call_sees_result_and_failing_hooks_are_reported(kairox_harness: KairoxHarness) -> None:
    provider = InMemoryToolProvider("mem", [read_tool()])
    seen = []

    def post(call: ToolCall, result: ToolResult) -> None:
        seen.append((call.tool.id, call.arguments, result.text))

    def broken_post(call: ToolCall, result: ToolResult) -> None:
        raise RuntimeError("observer bug")

    @kairox.advisory  # else it would block the call
    def broken_pre(call: ToolCall) -> None:
        raise RuntimeError("pre bug")

    plugins = [
        provider.plugin(),
        make_plugin("audit", kairox_post_tool_call=post),
        make_plugin("buggy", kairox_post_tool_call=broken_post, kairox_pre_tool_call=broken_pre),
    ]
    async with kairox_harness.open(plugins=plugins) as rt:
        log = EventLog(rt.events)
        result = await rt.call_tool("mem.echo", {"text": "x"})
        assert result.text == "echo:x"
    assert seen == [("mem.echo", {"text": "x"}, "echo:x")]
    failed = {(e.hook, e.plugin, e.error) for e in log.of(HookFailed)}
    assert failed == {
        ("kairox_pre_tool_call", "buggy", "RuntimeError: pre bug"),
        ("kairox_post_tool_call", "buggy", "RuntimeError: observer bug"),
    }


async def test_async_hooks_are_awaited(kairox_harness: KairoxHarness) -> None:
    provider = InMemoryToolProvider("mem", [read_tool()])

    async def pre(call: ToolCall) -> dict[str, str]:
        await anyio.lowlevel.checkpoint()
        return {"text": "rewritten"}

    async with kairox_harness.open(plugins=[provider.plugin(), make_plugin("a", kairox_pre_tool_call=pre)]) as rt:
        assert (await rt.call_tool("mem.echo", {"text": "orig"})).text == "echo:rewritten"


async def test_runtime_hooks_registry(kairox_runtime: Runtime, kairox_tool_provider) -> None:
    kairox_tool_provider.add(read_tool())
    seen = []
    remove = kairox_runtime.hooks.add("post_tool_call", lambda call, result: seen.append(result.text), source="script")
    await kairox_runtime.call_tool("mem.echo", {"text": "1"})
    remove()
    await kairox_runtime.call_tool("mem.echo", {"text": "2"})
    assert seen == ["echo:1"]
    with pytest.raises(ValueError, match="unknown hook event"):
        kairox_runtime.hooks.add("post_tool", lambda: None, source="x")


# -- sessions ------------------------------------------------------------------------


async def test_session_hooks_fire_once_each(kairox_harness: KairoxHarness) -> None:
    seen: list[tuple[str, str]] = []

    def start(session) -> None:
        session.state["started"] = True
        seen.append(("start", session.id))

    def end(session, reason: str) -> None:
        seen.append((reason, session.id))

    plugin = make_plugin("sessions", kairox_session_start=start, kairox_session_end=end)
    async with kairox_harness.open(plugins=[plugin]) as rt:
        log = EventLog(rt.events)
        async with rt.session() as s:
            assert s.state == {"started": True}
            assert seen == [("start", s.id)]
        assert seen == [("start", s.id), ("closed", s.id)]
        assert s.closed

        with pytest.raises(ZeroDivisionError):
            async with rt.session() as s2:
                1 / 0  # noqa: B018
        assert seen[-1] == ("error", s2.id)

        with anyio.CancelScope() as scope:
            async with rt.session() as s3:
                scope.cancel()
                await anyio.sleep(1)
        assert seen[-1] == ("cancelled", s3.id)
    assert [type(e) for e in log.events if isinstance(e, (SessionStarted, SessionEnded))] == [
        SessionStarted,
        SessionEnded,
    ] * 3
    assert [e.reason for e in log.of(SessionEnded)] == ["closed", "error", "cancelled"]


async def test_pre_turn_context_is_labelled(kairox_harness: KairoxHarness) -> None:
    def text(session, prompt: str) -> str:
        return f"about {prompt}"

    def piece(session, prompt: str) -> ContextPiece:
        return ContextPiece("from a piece", title="T")

    def nothing(session, prompt: str) -> None:
        return None

    plugins = [
        make_plugin("texter", kairox_pre_turn=text),
        make_plugin("piecer", kairox_pre_turn=piece),
        make_plugin("silent", kairox_pre_turn=nothing),
    ]
    async with kairox_harness.open(plugins=plugins) as rt, rt.session() as s:
        outcomes = await rt.dispatch.pre_turn(s, "rust")
        values = {o.source: o.value for o in outcomes}
        assert values["texter"] == "about rust"
        assert values["piecer"] == ContextPiece("from a piece", title="T")
        assert values["silent"] is None
        context = await s.turn_context("rust")
        injected = {(p.source, p.text) for p in context.injected}
        assert injected == {("texter", "about rust"), ("piecer", "from a piece")}


async def test_manifest_formats_are_registered(kairox_harness: KairoxHarness) -> None:
    @attrs.frozen
    class Format:
        name: str
        priority: int

        def probe(self, root):
            return None

    def register(registrar) -> None:
        registrar.add(Format("late", 50))
        registrar.add(Format("early", 10))

    plugin = make_plugin("formats", kairox_register_manifest_formats=register)
    async with kairox_harness.open(plugins=[plugin]) as rt:
        assert [f.priority for f in sorted(rt.manifest_formats, key=lambda f: f.priority)] == [10, 50]
        assert rt.manifest_formats.owner_of("early") == "formats"


async def test_a_plugin_owns_its_hooks_and_others_implement_them(kairox_harness: KairoxHarness) -> None:
    # kairox-mcp owns kairox_register_transports this way: the kernel declares no such hook
    import types

    from kairox import hookspec

    specs = types.ModuleType("pigeon_specs")

    def kairox_register_pigeons(registrar) -> None: ...

    specs.kairox_register_pigeons = hookspec(kairox_register_pigeons)  # type: ignore[attr-defined]

    @attrs.frozen
    class Pigeon:
        name: str

    def addhooks(pluginmanager) -> None:
        pluginmanager.add_hookspecs(specs)

    def register_pigeons(registrar) -> None:
        registrar.add(Pigeon("carrier"))

    def broken(registrar) -> None:
        registrar.add(Pigeon("stray"))
        raise RuntimeError("no pigeon today")

    # the implementer may load before the owner: its hook waits for the spec
    loft = make_plugin("loft", kairox_register_pigeons=register_pigeons)
    owner = make_plugin("owner", kairox_addhooks=addhooks)
    async with kairox_harness.open(plugins=[loft, owner, make_plugin("coop", kairox_register_pigeons=broken)]) as rt:
        pigeons = rt.dispatch.register_owned("kairox_register_pigeons", Registrar("pigeon"))
        assert pigeons.names() == ["carrier"]  # the broken one's half-registration is taken back
        assert pigeons.owner_of("carrier") == "loft"
        [failure] = [f for f in rt.host.failures if f.plugin == "coop"]
        assert failure.stage == "kairox_register_pigeons" and "no pigeon today" in failure.error
        with pytest.raises(KeyError, match="kairox_register_nothing"):
            rt.dispatch.register_owned("kairox_register_nothing", Registrar("x"))


async def test_an_implementation_of_a_hook_no_plugin_declares_does_not_load(kairox_harness: KairoxHarness) -> None:
    orphan = make_plugin("orphan", kairox_register_pigeons=lambda registrar: None)
    async with kairox_harness.open(plugins=[orphan]) as rt:
        [failure] = [f for f in rt.host.failures if f.plugin == "orphan"]
        assert failure.stage == "validate" and "kairox_register_pigeons" in failure.error
        assert "orphan" not in {p.name for p in rt.host.plugins()}


# -- events to kairox_event ------------------------------------------------------------


async def test_kairox_event_sees_every_event_and_a_failing_observer_is_isolated(
    kairox_harness: KairoxHarness,
) -> None:
    seen = []

    def observe(event, runtime) -> None:
        seen.append((event.kind, runtime))

    def broken(event) -> None:
        raise RuntimeError("observer bug")

    async with kairox_harness.open(
        plugins=[make_plugin("broken", kairox_event=broken), make_plugin("observer", kairox_event=observe)]
    ) as rt:
        async with rt.session():
            pass
    kinds = [k for k, _ in seen]
    assert "SessionStarted" in kinds and "SessionEnded" in kinds
    assert all(r is rt for _, r in seen)


async def test_async_kairox_event_is_awaited(kairox_harness: KairoxHarness) -> None:
    seen = []

    async def observe(event) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(event.kind)

    async with kairox_harness.open(plugins=[make_plugin("async-observer", kairox_event=observe)]) as rt:
        async with rt.session():
            pass
        for _ in range(10):
            await anyio.lowlevel.checkpoint()
    assert "SessionEnded" in seen


# -- catalog sources are collected lazily ------------------------------------------------


async def test_catalog_sources_are_collected_on_first_use(kairox_harness: KairoxHarness) -> None:
    calls = []

    @attrs.frozen
    class Source:
        name: str

        async def entries(self, runtime):
            return []

    def register(registrar, runtime) -> None:
        calls.append(runtime)
        registrar.add(Source("builtin-list"))

    async with kairox_harness.open(plugins=[make_plugin("cat", kairox_register_catalog_sources=register)]) as rt:
        assert calls == []
        assert rt.catalog_sources().names() == ["builtin-list"]
        assert rt.catalog_sources().names() == ["builtin-list"]
        assert calls == [rt]


async def test_domain_capability_defaults() -> None:
    spec = ToolSpec("x.y")
    assert (spec.domain, spec.capability) == (Domain.SYSTEM, Capability.EXECUTE)


async def test_status_survives_a_provider_whose_status_raises(
    kairox_harness: KairoxHarness, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(InMemoryToolProvider):
        def status(self) -> list[ServerStatus]:
            raise RuntimeError("status bug")

    good = InMemoryToolProvider("good", servers=[ServerStatus("git", "mcp", ServerState.READY)])
    async with kairox_harness.open(plugins=[Broken("broken").plugin(), good.plugin()]) as rt:
        status = rt.status()
    assert [s.name for s in status.servers] == ["git"]
    assert "status() of provider broken failed" in caplog.text


async def test_an_approver_that_raises_is_a_denial(kairox_harness: KairoxHarness) -> None:
    ran: list[int] = []
    tool = FunctionTool(ToolSpec("mem.run", "runs", domain="local", capability="execute"), lambda: ran.append(1))

    def broken(request: object) -> object:
        raise RuntimeError("the prompt went away")

    async def broken_async(request: object) -> object:
        await anyio.lowlevel.checkpoint()
        raise ApproverGone()

    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        for approver in (broken, broken_async):
            with pytest.raises(PolicyDenied, match="the approver failed"):
                await rt.call_tool("mem.run", approver=approver)
    assert ran == []


class ApproverGone(Exception):
    """Like click.Abort: an ordinary exception from an approver."""
