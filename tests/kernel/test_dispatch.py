"""The one dispatcher: a typed method per hookspec, pluggy's call order for every hook,
each implementation isolated and traced, wrappers refused when a plugin registers."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import click
import pluggy
import pytest

from kairox import Block, ToolCall, ToolResult, hookimpl, hookspecs
from kairox._dispatch import Dispatcher, HookOutcome
from kairox._host import PluginHost, build_plugin_host
from kairox.ext import HookRegistry, Registrar
from kairox_testing import InMemoryToolProvider, KairoxHarness, make_plugin

from .tool_helpers import read_tool

pytestmark = pytest.mark.anyio

#: the hooks the dispatcher calls (``kairox_addhooks`` is the host's: pluggy calls it as each
#: plugin registers, a historic hook)
SPECS: dict[str, Callable[..., Any]] = {
    name: fn
    for name, fn in vars(hookspecs).items()
    if callable(fn) and getattr(fn, "kairox_spec", None) is not None and name != "kairox_addhooks"
}
REGISTRATION = sorted(name for name in SPECS if name.startswith("kairox_register_"))
LIFECYCLE = ["kairox_session_start", "kairox_session_end", "kairox_pre_turn", "kairox_pre_tool_call"]
LIFECYCLE += ["kairox_post_tool_call"]
#: awaited, as the lifecycle hooks are (no hook can be added at run time for it)
ASYNC = [*LIFECYCLE, "kairox_instructions"]


def method_of(hook: str) -> str:
    return hook.removeprefix("kairox_")


def argnames(hook: str) -> tuple[str, ...]:
    return tuple(inspect.signature(SPECS[hook]).parameters)


class Call:
    """Stands in for a ToolCall: the dispatcher only touches ``arguments``."""

    def __init__(self) -> None:
        self.arguments: dict[str, Any] = {"text": "x"}


def arguments(hook: str) -> dict[str, Any]:
    values = {"registrar": Registrar("thing"), "cli": click.Group("kairox"), "call": Call(), "reason": "closed"}
    return {name: values.get(name, f"<{name}>") for name in argnames(hook)}


async def dispatch(dispatcher: Dispatcher, hook: str, kwargs: dict[str, Any]) -> Any:
    """Call ``hook`` through its typed method (the one place a test maps a name to it)."""
    result = getattr(dispatcher, method_of(hook))(**kwargs)
    return await result if inspect.isawaitable(result) else result


def plugin(name: str, log: list[str], *, fail: bool = False, tryfirst: bool = False, trylast: bool = False) -> object:
    """A plugin implementing every hook; each logs its name (and raises when ``fail``)."""

    class Plugin:
        pass

    instance = Plugin()
    instance.__name__ = name  # type: ignore[attr-defined]

    def make(hook: str) -> Callable[[], None]:
        def impl() -> None:
            log.append(name)
            if fail:
                raise RuntimeError(f"{name} broke in {hook}")

        return impl

    for hook in SPECS:
        setattr(instance, hook, hookimpl(tryfirst=tryfirst, trylast=trylast)(make(hook)))
    return instance


def four(log: list[str]) -> list[object]:
    """Registered in this order; pluggy calls them first, b, a, last."""
    return [
        plugin("first", log, tryfirst=True),
        plugin("a", log),
        plugin("b", log),
        plugin("last", log, trylast=True),
    ]


def host_with(*plugins: object, env: dict[str, str] | None = None) -> PluginHost:
    return build_plugin_host(plugins=plugins, load_entrypoints=False, env=env or {})


# -- one typed method per hookspec -------------------------------------------------------


def test_every_hookspec_has_a_typed_method_and_every_method_a_hookspec() -> None:
    methods = {n for n, v in vars(Dispatcher).items() if callable(v) and not n.startswith("_")} - {
        "bind",
        "implemented",
        "register_owned",
    }
    assert methods == {method_of(hook) for hook in SPECS}


@pytest.mark.parametrize("hook", sorted(SPECS))
def test_a_typed_method_takes_exactly_the_spec_arguments(hook: str) -> None:
    method = getattr(Dispatcher, method_of(hook))
    assert tuple(inspect.signature(method).parameters)[1:] == argnames(hook)
    assert inspect.iscoroutinefunction(method) == (hook in ASYNC)


def test_no_hookspec_needs_pluggy_call_semantics_the_dispatcher_lacks() -> None:
    pm = pluggy.PluginManager("kairox")
    pm.add_hookspecs(hookspecs)
    for hook in SPECS:
        opts = getattr(pm.hook, hook).spec.opts
        assert not opts["firstresult"] and not opts["historic"], f"{hook}: the dispatcher calls every implementation"
    assert pm.hook.kairox_addhooks.spec.opts["historic"]  # the host's, called as each plugin registers


# -- one call order, pluggy's -------------------------------------------------------------


@pytest.mark.parametrize("hook", sorted(SPECS))
async def test_every_hook_runs_in_pluggys_own_call_order(hook: str) -> None:
    log: list[str] = []
    host = host_with(*four(log))
    getattr(host.pm.hook, hook)(**arguments(hook))  # what pluggy itself would do
    pluggy_order, log[:] = list(log), []
    await dispatch(host.dispatch, hook, arguments(hook))
    assert log == pluggy_order == ["first", "b", "a", "last"]
    assert host.failures == []


@pytest.mark.parametrize("hook", LIFECYCLE)
async def test_runtime_hooks_run_after_every_hookimpl_in_the_order_added(hook: str) -> None:
    log: list[str] = []
    hooks = HookRegistry()
    for source in ("script-1", "script-2"):
        hooks.add(method_of(hook), lambda source=source, **kwargs: log.append(source), source=source)
    dispatcher = host_with(*four(log)).dispatch.bind(hooks=hooks)
    outcomes = await dispatch(dispatcher, hook, arguments(hook))
    assert log == ["first", "b", "a", "last", "script-1", "script-2"]
    if hook == "kairox_pre_tool_call":  # a guard answers with the block, if any
        assert outcomes is None
    else:
        assert [o.source for o in outcomes] == log
        assert {o.hook for o in outcomes} == {hook}


def test_the_kernel_claims_its_names_before_any_plugin() -> None:
    """The kernel's registration hooks are tryfirst: a plugin cannot take ``[policy]``."""
    from kairox import ConfigSection

    thief = type("Thief", (), {"__name__": "thief"})()
    thief.kairox_register_config_sections = hookimpl(lambda registrar: registrar.add(ConfigSection("policy", dict)))
    host = host_with(thief)
    sections = host.dispatch.register_config_sections(Registrar("config section"))
    assert sections.owner_of("policy") == "kairox" and "files" in sections
    assert [(f.plugin, f.stage) for f in host.failures] == [("thief", "kairox_register_config_sections")]


# -- isolation: one failing implementation never stops the others ----------------------------


@pytest.mark.parametrize("hook", sorted(SPECS))
async def test_a_failing_implementation_is_reported_and_the_others_run(
    hook: str, caplog: pytest.LogCaptureFixture
) -> None:
    log: list[str] = []
    host = host_with(plugin("a", log), plugin("broken", log, fail=True), plugin("b", log))
    reported: list[HookOutcome] = []
    dispatcher = host.dispatch.bind(report=reported.append)
    with caplog.at_level(logging.ERROR, logger="kairox._dispatch"):
        outcomes = await dispatch(dispatcher, hook, arguments(hook))
    assert log == ["b", "broken", "a"]
    if hook in REGISTRATION:
        [failure] = host.failures
        assert (failure.plugin, failure.stage) == ("broken", hook)
        assert f"RuntimeError: broken broke in {hook}" in failure.error and "Traceback" in failure.traceback
    elif hook == "kairox_event":
        assert [o.source for o in outcomes if o.error] == ["broken"]
        assert f"{hook} hook of broken failed" in caplog.text
        assert reported == [] and host.failures == []  # a report would itself be an event
    else:
        assert [(o.source, o.hook, str(o.error)) for o in reported] == [("broken", hook, f"broken broke in {hook}")]
        if hook == "kairox_pre_tool_call":  # a guard that fails blocks the call, naming it
            assert outcomes == Block(f"the guard of broken failed (RuntimeError: broken broke in {hook})")
        else:
            assert [o.source for o in outcomes] == ["b", "broken", "a"]
        assert host.failures == []


def test_a_failing_registration_takes_back_all_of_its_plugins_registrations() -> None:
    def half(registrar: Registrar[Any]) -> None:
        registrar.add(type("T", (), {"name": "half-done"})())
        raise RuntimeError("second one failed")

    broken = type("Half", (), {"__name__": "half", "kairox_register_manifest_formats": staticmethod(hookimpl(half))})()
    host = host_with(broken)
    transports = host.dispatch.register_manifest_formats(Registrar("transport"))
    assert "half-done" not in transports and transports.owner == "<code>"
    assert [f.plugin for f in host.failures] == ["half"]


def test_strict_mode_reraises_a_failing_implementation() -> None:
    log: list[str] = []
    host = host_with(plugin("broken", log, fail=True), env={"KAIROX_STRICT_PLUGINS": "1"})
    registrar: Registrar[Any] = Registrar("transport")
    with pytest.raises(RuntimeError, match="broken broke"):
        host.dispatch.register_manifest_formats(registrar)
    assert registrar.owner == "<code>"


def test_an_async_registration_hook_is_a_failure_not_a_coroutine_never_awaited() -> None:
    async def kairox_register_manifest_formats(registrar: Registrar[Any]) -> None:
        raise AssertionError("never runs")

    plugin = type("Async", (), {"__name__": "async-reg"})()
    plugin.kairox_register_manifest_formats = hookimpl(kairox_register_manifest_formats)
    host = host_with(plugin)
    host.dispatch.register_manifest_formats(Registrar("transport"))
    [failure] = host.failures
    assert failure.plugin == "async-reg" and "synchronous" in failure.error


async def test_lifecycle_implementations_are_awaited_and_an_async_failure_is_reported() -> None:
    async def good(session: object) -> str:
        return "awaited"

    async def bad(session: object) -> None:
        raise ValueError("async boom")

    first = type("Good", (), {"__name__": "good", "kairox_session_start": staticmethod(hookimpl(good))})()
    second = type("Bad", (), {"__name__": "bad", "kairox_session_start": staticmethod(hookimpl(bad))})()
    reported: list[HookOutcome] = []
    dispatcher = host_with(first, second).dispatch.bind(report=reported.append)
    outcomes = await dispatcher.session_start("<session>")  # type: ignore[arg-type]
    assert [(o.source, o.value) for o in outcomes if o.error is None] == [("good", "awaited")]
    assert [(o.source, type(o.error)) for o in reported] == [("bad", ValueError)]


async def test_pre_tool_call_threads_rewrites_and_returns_the_block() -> None:
    seen: list[dict[str, Any]] = []

    def rewrite(call: Call) -> dict[str, Any]:
        return {"text": call.arguments["text"] + "+rewritten"}

    def block(call: Call) -> Block:
        seen.append(dict(call.arguments))
        return Block("no")

    first = type("R", (), {"__name__": "rewrite", "kairox_pre_tool_call": staticmethod(hookimpl(rewrite))})()
    second = type("B", (), {"__name__": "block", "kairox_pre_tool_call": staticmethod(hookimpl(block))})()
    call = Call()
    block = await host_with(second, first).dispatch.pre_tool_call(call)  # type: ignore[arg-type]
    assert seen == [{"text": "x+rewritten"}] and call.arguments == {"text": "x+rewritten"}
    assert block == Block("no")


# -- wrappers are a load failure ------------------------------------------------------------


def wrapper_plugin(kind: str) -> object:
    class Wrapping:
        __name__ = "wrapping"

        @hookimpl(wrapper=kind == "wrapper", hookwrapper=kind == "hookwrapper")
        def kairox_session_start(self, session: object) -> Any:
            return (yield)

        @hookimpl
        def kairox_session_end(self, session: object, reason: str) -> None:
            pass

    return Wrapping()


@pytest.mark.parametrize("kind", ["wrapper", "hookwrapper"])
def test_a_wrapper_is_refused_when_the_plugin_registers(kind: str) -> None:
    host = host_with(wrapper_plugin(kind))
    [failure] = host.failures
    assert (failure.plugin, failure.stage) == ("wrapping", "validate")
    assert "kairox_session_start" in failure.error and "wrapper" in failure.error
    assert host.pm.get_plugin("wrapping") is None
    assert host.pm.hook.kairox_session_end.get_hookimpls() == []  # the whole plugin, not half of it


def test_a_wrapper_registered_later_is_refused_too_and_strict_mode_raises() -> None:
    host = host_with()
    assert host.register(wrapper_plugin("wrapper"), name="late") is None
    assert [(f.plugin, f.stage) for f in host.failures] == [("late", "validate")]
    with pytest.raises(pluggy.PluginValidationError, match="kairox_session_start"):
        host_with(wrapper_plugin("wrapper"), env={"KAIROX_STRICT_PLUGINS": "1"})


# -- tracing, in one place ----------------------------------------------------------------


@pytest.mark.parametrize("hook", sorted(SPECS))
async def test_every_hook_call_is_traced(hook: str, capsys: pytest.CaptureFixture[str]) -> None:
    log: list[str] = []
    host = host_with(plugin("traced", log), env={"KAIROX_TRACE_PLUGINS": "1"})
    capsys.readouterr()
    await dispatch(host.dispatch, hook, arguments(hook))
    assert f"kairox-trace: {hook} -> traced()" in capsys.readouterr().err


# -- through a runtime's tool call: the arguments each hook names, tracing turned on later --


async def test_hooks_get_the_arguments_they_name_in_any_order(kairox_harness: KairoxHarness) -> None:
    got: list[tuple[str, Any]] = []

    def only_result(result: ToolResult) -> None:
        got.append(("only_result", result.text))

    def reversed_order(result: ToolResult, call: ToolCall) -> None:
        got.append(("reversed", (call.arguments["text"], result.text)))

    def both(call: ToolCall, result: ToolResult) -> None:
        got.append(("both", (call.tool.id, result.text)))

    provider = InMemoryToolProvider("mem", [read_tool()])
    plugins = [
        provider.plugin(),
        make_plugin("p1", kairox_post_tool_call=only_result),
        make_plugin("p2", kairox_post_tool_call=reversed_order),
        make_plugin("p3", kairox_post_tool_call=both),
    ]
    async with kairox_harness.open(plugins=plugins) as rt:
        await rt.call_tool("mem.echo", {"text": "x"})
    assert sorted(got) == [
        ("both", ("mem.echo", "echo:x")),
        ("only_result", "echo:x"),
        ("reversed", ("x", "echo:x")),
    ]


async def test_tracing_turned_on_after_calls_traces_the_next_ones(kairox_harness: KairoxHarness) -> None:
    """Trace lines are skipped while nobody traces, and written from the moment someone does."""

    def guard(call: ToolCall) -> None:
        return None

    provider = InMemoryToolProvider("mem", [read_tool()])
    async with kairox_harness.open(plugins=[provider.plugin(), make_plugin("guard", kairox_pre_tool_call=guard)]) as rt:
        await rt.call_tool("mem.echo", {"text": "1"})  # nobody traces
        lines: list[str] = []
        rt.host.pm.trace.root.setwriter(lines.append)
        try:
            await rt.call_tool("mem.echo", {"text": "2"})
        finally:
            rt.host.pm.trace.root.setwriter(None)
        await rt.call_tool("mem.echo", {"text": "3"})
    assert [line.strip() for line in lines] == ["kairox_pre_tool_call -> guard(call) [hook]"]
