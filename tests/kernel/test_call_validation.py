"""The validate step: every call's arguments against its tool's input schema, before anything runs.

A plugin author's own test found that in-process tools were never checked; each test
here calls a tool with arguments its schema refuses and checks that the tool did not
run and the error result names the field.
"""

from __future__ import annotations

from typing import Any

import pytest

from kairox import Block, FunctionTool, PolicyDenied, ToolCall, ToolCallFinished, ToolSpec
from kairox.testing import InMemoryToolProvider, KairoxHarness, make_plugin

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
