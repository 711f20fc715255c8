"""The per-call path's shortcuts (issue 17, items 3 and 5) keep what the long way did: hook
targets follow every change of the implementations (not only their number), a hook still
gets exactly the arguments it names, trace lines appear as soon as someone traces, a hook
registered while a tool runs sees that call's result, and the example guard's one-pattern
test refuses exactly what matching glob by glob refuses."""

from __future__ import annotations

import fnmatch
from pathlib import PurePosixPath
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairox import Block, FunctionTool, PolicyDenied, Runtime, ToolCall, ToolResult, ToolSpec
from kairox.testing import InMemoryToolProvider, KairoxHarness, make_plugin

from .tool_helpers import read_tool

pytestmark = pytest.mark.anyio


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


# -- the example guard ----------------------------------------------------------------------


def _slow_check(arguments: dict[str, Any], globs: list[str]) -> str | None:
    """The guard as it was: every word against every glob, as a path and by its file name."""

    def words(value: Any) -> list[str]:
        if isinstance(value, str):
            return value.split()
        if isinstance(value, list):
            return [w for item in value for w in words(item)]
        return []

    for key, value in arguments.items():
        for word in words(value):
            bare = word.strip("'\"")
            name = PurePosixPath(bare).name
            for glob in globs:
                if fnmatch.fnmatchcase(bare, glob) or fnmatch.fnmatchcase(name, glob):
                    return f"argument {key!r} names {word!r}, protected by {glob!r} ([example].protected)"
    return None


class _Config:
    def __init__(self, globs: list[str]) -> None:
        from kairox_example.config import ExampleConfig

        self.example = ExampleConfig(protected=globs)

    def section(self, name: str) -> Any:
        assert name == "example"
        return self.example


class _Runtime:
    def __init__(self, globs: list[str]) -> None:
        self.config = _Config(globs)


_PIECES = st.sampled_from(
    [".env", ".env.local", "id_rsa", "id_rsa.pub", "key.pem", "a", "b.txt", "secrets", "/", ".", "..", "'", '"', "*"]
)
_WORDS = st.lists(_PIECES, min_size=0, max_size=4).map("".join)
_GLOBS = st.lists(
    st.sampled_from([".env", ".env.*", "*.pem", "*.key", "id_rsa*", "secrets/*", "[ab]*", "?", "*", "a/b", ""]),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(_WORDS, max_size=4),
    listed=st.lists(st.lists(_WORDS, max_size=3), max_size=2),
    globs=_GLOBS,
)
def test_the_guard_refuses_what_matching_glob_by_glob_refuses(
    words: list[str], listed: list[list[str]], globs: list[str]
) -> None:
    from kairox_example.guard import check_call

    arguments: dict[str, Any] = {"command": " ".join(words), "paths": [" ".join(x) for x in listed], "n": 3}
    call = ToolCall(ToolSpec("t.x", domain="local", capability="read"), arguments, _Runtime(globs))  # type: ignore[arg-type]
    block = check_call(call)
    assert (block.reason if block is not None else None) == _slow_check(arguments, globs)


# -- pre_tool_call as the runtime runs it ----------------------------------------------------


#: what one pre_tool_call implementation does: return nothing, a Block, a dict, change the
#: arguments in place, raise, something else; ``a...``: the same from ``async def``; ``noarg``:
#: an implementation that names no argument (a Block); ``runtime``: a run-time hook (None)
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


# -- absent config sections --------------------------------------------------------------------


def test_an_absent_section_s_default_is_built_once_per_registered_section() -> None:
    import attrs

    from kairox._config import Config, ConfigSection

    built: list[int] = []

    @attrs.frozen
    class Schema:
        n: int = 0

    def default() -> Schema:
        built.append(1)
        return Schema(len(built))

    config = Config(
        sections={"s": ConfigSection("s", Schema, default=default), "e": ConfigSection("e", Schema, entries=True)}
    )
    first = config.section("s")
    assert config.section("s") is first and first == Schema(1) and built == [1]
    assert config.section("e") == {} and config.section("e") is not config.section("e")  # entries: a new dict
    config.sections["s"] = ConfigSection("s", Schema, default=default)  # registered again: built again
    assert config.section("s") == Schema(2)
    config.values["s"] = Schema(9)  # present: its value, as ever
    assert config.section("s") == Schema(9)
    with pytest.raises(KeyError):
        config.section("nope")
