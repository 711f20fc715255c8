"""The validate step: every call's arguments against its tool's input schema, before anything runs.

A plugin author's own test found that in-process tools were never checked; each test
here calls a tool with arguments its schema refuses and checks that the tool did not
run and the error result names the field.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairox import Block, FunctionTool, PolicyDenied, ToolCall, ToolCallFinished, ToolSpec
from kairox._call import ArgumentCheck
from kairox_testing import InMemoryToolProvider, KairoxHarness, make_plugin

pytestmark = pytest.mark.anyio

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "lines": {"type": "integer", "minimum": 1},
        "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def recording_tool(schema: dict[str, Any] = SCHEMA, name: str = "read") -> tuple[FunctionTool, list[dict[str, Any]]]:
    ran: list[dict[str, Any]] = []

    def fn(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "ran"

    return FunctionTool(ToolSpec(f"mem.{name}", input_schema=schema, domain="local", capability="read"), fn), ran


@pytest.mark.parametrize(
    ("arguments", "field", "message"),
    [
        ({"path": 3}, "path", "3 is not of type 'string'"),
        ({}, "", "'path' is a required property"),
        ({"path": "a", "lines": 0}, "lines", "0 is less than the minimum of 1"),
        ({"path": "a", "extra": 1}, "", "Additional properties are not allowed ('extra' was unexpected)"),
        ({"path": "a", "items": [{"name": 5}]}, "items[0].name", "5 is not of type 'string'"),
    ],
)
async def test_invalid_arguments_are_an_error_result_naming_the_field_and_the_tool_never_runs(
    kairox_harness: KairoxHarness, arguments: dict[str, Any], field: str, message: str
) -> None:
    tool, ran = recording_tool()
    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        finished: list[ToolCallFinished] = []
        rt.events.subscribe(finished.append, ToolCallFinished)
        result = await rt.call_tool("mem.read", arguments)
    assert result.is_error and ran == []
    where = f"{field}: " if field else ""
    assert result.text == f"invalid arguments for mem.read: {where}{message}"
    assert [(f.outcome, f.detail) for f in finished] == [("error", result.text)]


async def test_valid_arguments_reach_the_tool(kairox_harness: KairoxHarness) -> None:
    tool, ran = recording_tool()
    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        result = await rt.call_tool("mem.read", {"path": "a", "items": [{"name": "x"}]})
    assert result.text == "ran" and ran == [{"path": "a", "items": [{"name": "x"}]}]


NULLABLE = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "lines": {"type": "integer"}, "note": {"type": ["string", "null"]}},
    "required": ["path"],
}


@pytest.mark.parametrize(
    ("arguments", "reaches"),
    [
        # an optional argument given as null is one not given (MCP SEP-2243; OpenAI strict mode)
        ({"path": "a", "lines": None}, {"path": "a"}),
        # a null the schema accepts is kept as given
        ({"path": "a", "note": None}, {"path": "a", "note": None}),
        ({"path": "a", "lines": None, "note": None}, {"path": "a", "note": None}),
    ],
)
async def test_an_optional_null_is_an_argument_not_given(
    kairox_harness: KairoxHarness, arguments: dict[str, Any], reaches: dict[str, Any]
) -> None:
    tool, ran = recording_tool(NULLABLE)
    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        result = await rt.call_tool("mem.read", arguments)
    assert result.text == "ran" and ran == [reaches]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        # a required argument given as null is still refused
        ({"path": None}, "path: None is not of type 'string'"),
        # so is a null for a name the schema does not list, where it allows none
        ({"path": "a", "extra": None}, "Additional properties are not allowed ('extra' was unexpected)"),
    ],
)
async def test_a_null_that_is_required_or_unknown_is_still_refused(
    kairox_harness: KairoxHarness, arguments: dict[str, Any], message: str
) -> None:
    tool, ran = recording_tool()
    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        result = await rt.call_tool("mem.read", arguments)
    assert result.is_error and ran == []
    assert result.text == f"invalid arguments for mem.read: {message}"


async def test_a_tool_whose_schema_is_not_json_schema_is_refused_not_run(kairox_harness: KairoxHarness) -> None:
    tool, ran = recording_tool({"type": "object", "properties": {"path": {"type": "strung"}}})
    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        result = await rt.call_tool("mem.read", {"path": "a"})
    assert result.is_error and ran == []
    assert "its input schema is not valid JSON Schema" in result.text and "strung" in result.text


async def test_a_remote_ref_in_a_schema_is_never_fetched_and_refuses_the_call(kairox_harness: KairoxHarness) -> None:
    schema = {"type": "object", "properties": {"path": {"$ref": "http://127.0.0.1:9/never.json"}}}
    tool, ran = recording_tool(schema)
    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        result = await rt.call_tool("mem.read", {"path": "a"})
    assert result.is_error and ran == []
    assert "cannot check these arguments" in result.text


async def test_a_hook_that_rewrites_arguments_into_invalid_ones_is_refused(kairox_harness: KairoxHarness) -> None:
    tool, ran = recording_tool()

    def rewrite(call: ToolCall) -> dict[str, Any] | Block:
        return {"path": ["not", "a", "string"]}

    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin(), make_plugin("rw", kairox_pre_tool_call=rewrite)]) as rt:
        with pytest.raises(PolicyDenied, match=r"a hook rewrote the arguments: invalid arguments for mem.read: path:"):
            await rt.call_tool("mem.read", {"path": "a"})
    assert ran == []


async def test_a_schema_of_another_draft_is_read_as_its_draft(kairox_harness: KairoxHarness) -> None:
    # draft-04's boolean exclusiveMinimum: 0 is refused under draft-04, where 2020-12 would error on the schema
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}},
    }
    tool, ran = recording_tool(schema)
    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        assert (await rt.call_tool("mem.read", {"n": 1})).text == "ran"
        result = await rt.call_tool("mem.read", {"n": 0})
    assert result.is_error and "n: 0 is less than or equal to the minimum of 0" in result.text
    assert ran == [{"n": 1}]


# -- the schema's regular expressions cost one pass over the arguments -------------------------

#: Python's ``re`` tries every way to split 30 ``a`` among the groups of ``^(a+)+$`` before it
#: sees the ``!`` (2**30 steps: minutes, holding the event loop and the GIL); RE2 reads it once
CATASTROPHIC = "^(a+)+$"
ATTACK = "a" * 30 + "!"


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("schema", "arguments", "message"),
    [
        (
            {"type": "object", "properties": {"s": {"type": "string", "pattern": CATASTROPHIC}}},
            {"s": ATTACK},
            f"s: {ATTACK!r} does not match {CATASTROPHIC!r}",
        ),
        (
            {"type": "object", "patternProperties": {CATASTROPHIC: {"type": "integer"}}},
            {ATTACK: "x", "aaa": 1},
            "",  # the key does not match: nothing to check
        ),
        (
            {"type": "object", "patternProperties": {CATASTROPHIC: {}}, "additionalProperties": False},
            {ATTACK: 1},
            f"{ATTACK!r} does not match any of the regexes: {CATASTROPHIC!r}",
        ),
        (
            {"type": "object", "propertyNames": {"pattern": CATASTROPHIC}},
            {ATTACK: 1},
            f"{ATTACK!r} does not match {CATASTROPHIC!r}",
        ),
    ],
    ids=["pattern", "patternProperties", "additionalProperties", "propertyNames"],
)
async def test_a_backtracking_pattern_is_checked_in_one_pass_over_the_arguments(
    kairox_harness: KairoxHarness, schema: dict[str, Any], arguments: dict[str, Any], message: str
) -> None:
    tool, ran = recording_tool(schema)
    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        result = await rt.call_tool("mem.read", arguments)
    if message:
        assert result.is_error and ran == [], result.text
        assert result.text == f"invalid arguments for mem.read: {message}"
    else:
        assert result.text == "ran" and ran == [arguments]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(?!fs\\.read$).*"}}},
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "(a)\\1"}}},
        {"type": "object", "patternProperties": {"(?<=x)y": {}}},
        # draft-04's meta-schema does not check patternProperties keys: found when the call is checked
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "patternProperties": {"(?=a)": {}}},
    ],
    ids=["lookahead", "backreference", "lookbehind-key", "draft-04-key"],
)
async def test_a_pattern_re2_cannot_run_refuses_every_call_of_the_tool(
    kairox_harness: KairoxHarness, schema: dict[str, Any]
) -> None:
    tool, ran = recording_tool(schema)
    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        result = await rt.call_tool("mem.read", {"s": "x", "ay": 1})
    assert result.is_error and ran == [], result.text
    assert result.text.startswith("mem.read: its input schema has a pattern RE2 cannot run (")
    assert "no look-around or backreferences" in result.text and result.text.endswith("the call is refused")


@pytest.mark.timeout(10)
async def test_unevaluated_properties_beside_pattern_properties_refuses_the_call(kairox_harness: KairoxHarness) -> None:
    # jsonschema finds the keys patternProperties evaluated with Python's re, with no way to swap it
    schema = {"type": "object", "patternProperties": {CATASTROPHIC: {}}, "unevaluatedProperties": False}
    tool, ran = recording_tool(schema)
    provider = InMemoryToolProvider("mem", [tool])
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        result = await rt.call_tool("mem.read", {ATTACK: 1})
    assert result.is_error and ran == []
    assert "unevaluatedProperties beside patternProperties, which cannot be checked in bounded time" in result.text


_ATOM = st.sampled_from(["a", "b", ".", r"\.", "[ab]", "[^a]", r"\d", "(a|b)", "(?:ab|a)"])
_PIECE = st.tuples(_ATOM, st.sampled_from(["", "*", "+", "?", "{1,2}"])).map("".join)
_PATTERN = st.tuples(
    st.sampled_from(["", "^"]), st.lists(_PIECE, min_size=1, max_size=4).map("".join), st.sampled_from(["", "$"])
).map("".join)


@settings(max_examples=300, deadline=None)
@given(_PATTERN, st.text(st.sampled_from("ab1._"), max_size=10), st.text(st.sampled_from("ab1._"), max_size=6))
def test_ordinary_patterns_decide_as_jsonschemas_own_check(pattern: str, value: str, key: str) -> None:
    from jsonschema.validators import Draft202012Validator

    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": pattern}},
        "patternProperties": {pattern: {"type": "integer"}},
        "additionalProperties": {"type": "boolean"},
    }
    arguments = {"s": value, key: 1}
    spec = ToolSpec("mem.read", input_schema=schema, domain="local", capability="read")
    expected = Draft202012Validator(schema).is_valid(arguments)
    assert (ArgumentCheck().problem(spec, arguments) is None) == expected
