"""``kairox.hosts``: a session's tools and tool results in each model API's shape, checked
against the API's own SDK types (openai, anthropic, google-genai: their request types,
validated with pydantic), and ``Session.call_tool(errors="result")``."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from anthropic.types import MessageParam, ToolParam
from google.genai import types as gemini
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionToolMessageParam
from openai.types.responses import FunctionToolParam, ResponseInputItemParam
from pydantic import TypeAdapter

from kairox import ImageContent, Runtime, TextContent, ToolResult
from kairox.errors import PolicyDenied, ToolNotFound
from kairox.hosts import FORMATS, result_message, tool_name, tools_for
from kairox_testing import InMemoryToolProvider, KairoxHarness

pytestmark = pytest.mark.anyio

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()
#: each format's SDK type of one tool, and of the message that carries a tool's result
TOOL_TYPE: dict[str, Any] = {
    "openai-chat": ChatCompletionFunctionToolParam,
    "openai-responses": FunctionToolParam,
    "anthropic": ToolParam,
}
MESSAGE_TYPE: dict[str, Any] = {
    "openai-chat": ChatCompletionToolMessageParam,
    "openai-responses": ResponseInputItemParam,
    "anthropic": MessageParam,
}


def strict(kind: Any, value: Any) -> None:
    """``value`` is a ``kind`` (a TypedDict of the SDK): every key known, every type right."""
    TypeAdapter(kind).validate_python(value, strict=True)
    extra = set(value) - set(getattr(kind, "__annotations__", value))
    assert not extra, f"keys the SDK type does not have: {extra}"


@pytest.fixture
def tools(kairox_tool_provider: InMemoryToolProvider) -> InMemoryToolProvider:
    @kairox_tool_provider.tool("notes.add", domain="local", capability="write")
    def add(title: str, body: str = "", tags: list[str] | None = None) -> str:
        """Add a note."""
        return f"added {title}"

    @kairox_tool_provider.tool("1pass.lookup", domain="local", capability="read")
    def lookup(item: str) -> ToolResult:
        """Look up an item (its name starts with a digit)."""
        return ToolResult(content=(TextContent(f"found {item}"), ImageContent(data=PNG, mime_type="image/png")))

    @kairox_tool_provider.tool("app.refresh", domain="local", capability="read", model_visible=False)
    def refresh() -> str:
        """For an app's UI only."""
        return "refreshed"

    @kairox_tool_provider.tool("fail.always", domain="local", capability="read")
    def fail() -> str:
        """Always fails."""
        raise RuntimeError("the disk is on fire")

    return kairox_tool_provider


@pytest.mark.parametrize("fmt", FORMATS)
async def test_tools_come_in_each_apis_shape(kairox_runtime: Runtime, tools: InMemoryToolProvider, fmt: str) -> None:
    async with kairox_runtime.session() as session:
        offered = tools_for(session, fmt)  # type: ignore[arg-type]
    if fmt == "gemini":
        [tool] = offered
        parsed = gemini.Tool.model_validate(tool)
        names = [d.name for d in parsed.function_declarations or []]
        schemas = [d.parameters_json_schema for d in parsed.function_declarations or []]
    else:
        for tool in offered:
            strict(TOOL_TYPE[fmt], tool)
        names = [t["function"]["name"] if fmt == "openai-chat" else t["name"] for t in offered]
        schemas = [
            t["function"]["parameters"] if fmt == "openai-chat" else t.get("parameters", t.get("input_schema"))
            for t in offered
        ]
    assert "app_refresh" not in names  # for its app alone
    assert "notes_add" in names
    expected = "_.1pass_lookup" if fmt == "gemini" else "1pass_lookup"  # Gemini: a letter or _ first
    assert expected in names and tool_name(expected, fmt) == "1pass_lookup"  # type: ignore[arg-type]
    for schema in schemas:
        assert isinstance(schema, dict) and schema["type"] == "object" and "$schema" not in schema
    add = schemas[names.index("notes_add")]
    assert add["required"] == ["title"] and set(add["properties"]) == {"title", "body", "tags"}


async def test_a_turn_contexts_tools_are_the_ones_its_budget_chose(
    kairox_runtime: Runtime, tools: InMemoryToolProvider
) -> None:
    async with kairox_runtime.session() as session:
        context = await session.turn_context("add a note", tool_budget=1)
        offered = tools_for(context, "anthropic")
    assert [t["name"] for t in offered] == [t["name"] for t in context.tools]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_result_with_text_and_an_image_is_the_apis_tool_result_message(
    kairox_runtime: Runtime, tools: InMemoryToolProvider, fmt: str
) -> None:
    called = "_.1pass_lookup" if fmt == "gemini" else "1pass_lookup"  # the name the model used
    async with kairox_runtime.session() as session:
        result = await session.call_tool(tool_name(called, fmt), {"item": "vpn"})  # type: ignore[arg-type]
    message = result_message(result, fmt, "call_1", name=called)  # type: ignore[arg-type]
    if fmt == "gemini":
        content = gemini.Content.model_validate(message)
        response = content.parts[0].function_response  # type: ignore[index]
        assert response is not None and response.id == "call_1" and response.response == {"output": "found vpn"}
        assert content.parts[1].inline_data.mime_type == "image/png"  # type: ignore[index, union-attr]
        return
    TypeAdapter(MESSAGE_TYPE[fmt]).validate_python(message, strict=True)
    if fmt == "openai-chat":  # tool messages take text only: the image is a note
        assert message["content"].startswith("found vpn\n[image image/png")
    elif fmt == "openai-responses":
        assert message["output"][0] == {"type": "input_text", "text": "found vpn"}
        assert message["output"][1]["image_url"] == f"data:image/png;base64,{PNG}"
    else:
        [block] = message["content"]
        assert block["tool_use_id"] == "call_1" and "is_error" not in block
        assert block["content"][1]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}


async def test_with_errors_as_results_the_model_reads_why_a_call_failed(
    kairox_harness: KairoxHarness, tools: InMemoryToolProvider
) -> None:
    kairox_harness.write_config('[policy.rules]\n"notes.add" = "deny"\n', where="user")
    async with kairox_harness.open(plugins=[tools.plugin()]) as rt, rt.session() as session:
        unknown = await session.call_tool("no_such_tool", {}, errors="result")
        failed = await session.call_tool("fail_always", {}, errors="result")
        denied = await session.call_tool("notes_add", {"title": "t"}, errors="result")
        with pytest.raises(ToolNotFound):
            await session.call_tool("no_such_tool", {})
        with pytest.raises(PolicyDenied):
            await session.call_tool("notes_add", {"title": "t"})
    assert unknown.is_error and "no tool named 'no_such_tool'" in unknown.text
    assert failed.is_error and "the disk is on fire" in failed.text
    assert denied.is_error and denied.text == "notes.add: denied by a rule in [policy.rules]"
    for fmt in FORMATS:
        assert "the disk is on fire" in str(result_message(failed, fmt, "c", name="fail_always"))
    assert result_message(failed, "anthropic", "c")["content"][0]["is_error"] is True
    assert result_message(failed, "openai-chat", "c")["content"].startswith("error: ")
    gemini_response = result_message(failed, "gemini", "c", name="fail_always")["parts"][0]["functionResponse"]
    assert set(gemini_response["response"]) == {"error"}
