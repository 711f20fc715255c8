"""``kairox_adapters.pydantic_ai.KairoxToolset``: a real pydantic-ai ``Agent`` runs against a
real kairox runtime with pydantic-ai's offline models (``TestModel`` calls every tool with
arguments it makes from the schemas; ``FunctionModel`` is a scripted model that calls one tool
and answers with what it read). Every call goes through the session: the policy, the
approver and the hooks decide it, and the tools record whether they ran."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from adapters_helpers import MCP_SERVER, PNG_BYTES, approver_decides, hook_blocks
from pydantic_ai import Agent, BinaryContent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from kairox import Runtime
from kairox_adapters.pydantic_ai import KairoxToolset
from kairox_testing import Approvals, InMemoryToolProvider, KairoxHarness

pytestmark = pytest.mark.anyio


def tool_outputs(messages: list[ModelMessage]) -> list[str]:
    """What the model was given back for its tool calls, as it reads them."""
    out = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    out.append(part.model_response_str())
                elif isinstance(part, RetryPromptPart):
                    out.append(part.model_response())
    return out


def calls_then_answers(name: str, args: dict[str, Any], seen: list[AgentInfo] | None = None) -> FunctionModel:
    """A model that calls ``name`` with ``args``, then answers with what the call gave it."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append(info)
        read = tool_outputs(messages)
        if not read:
            return ModelResponse(parts=[ToolCallPart(name, args)])
        return ModelResponse(parts=[TextPart(read[-1])])

    return FunctionModel(model)


async def run(rt: Runtime, model: Any, *, approver: Callable[..., Any] | None = None) -> Any:
    async with rt.session(approver=approver) as session:
        return await Agent(model, toolsets=[KairoxToolset(session)]).run("go")


async def turn(rt: Runtime, name: str, args: dict[str, Any], approver: Callable[..., Any] | None) -> str:
    """:data:`adapters_helpers.Turn` in pydantic-ai."""
    output: str = (await run(rt, calls_then_answers(name, args), approver=approver)).output
    return output


async def test_test_model_calls_every_tool_and_reads_each_result_or_refusal(
    harness: KairoxHarness, kairox_tool_provider: InMemoryToolProvider, calls: list[str]
) -> None:
    async with harness.open(plugins=[kairox_tool_provider.plugin()]) as rt:
        result = await run(rt, TestModel(), approver=Approvals(True))
    # TestModel answers with every tool's return value, keyed by the tool's name
    answer = json.loads(result.output)
    assert answer["notes_add"] == "added a"
    assert answer["notes_publish"] == "published a"  # asked, and approved
    assert answer["weather_now"] == {"city": "a", "celsius": 21.5}  # structured content, as data
    assert answer["notes_delete"] == "notes.delete: denied by a rule in [policy.rules]"
    assert sorted(calls) == ["add a", "draw a", "publish a", "weather a"]  # the denied tool never ran


async def test_the_result_of_a_call_reaches_the_model(
    harness: KairoxHarness, kairox_tool_provider: InMemoryToolProvider, calls: list[str]
) -> None:
    async with harness.open(plugins=[kairox_tool_provider.plugin()]) as rt:
        result = await run(rt, calls_then_answers("notes_add", {"title": "groceries"}))
    assert result.output == "added groceries"
    assert calls == ["add groceries"]


async def test_an_image_reaches_the_model_as_binary_content(
    harness: KairoxHarness, kairox_tool_provider: InMemoryToolProvider, calls: list[str]
) -> None:
    async with harness.open(plugins=[kairox_tool_provider.plugin()]) as rt:
        result = await run(rt, calls_then_answers("chart_draw", {"title": "sales"}))
    [returned] = [
        p.content
        for m in result.all_messages()
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]
    assert returned[0] == "chart sales"
    assert isinstance(returned[1], BinaryContent)
    assert returned[1].data == PNG_BYTES and returned[1].media_type == "image/png"


async def test_a_tool_denied_by_a_policy_rule_never_runs_and_the_model_reads_why(
    harness: KairoxHarness, kairox_tool_provider: InMemoryToolProvider, calls: list[str]
) -> None:
    async with harness.open(plugins=[kairox_tool_provider.plugin()]) as rt:
        result = await run(rt, calls_then_answers("notes_delete", {"title": "groceries"}))
    assert "notes.delete: denied by a rule in [policy.rules]" in result.output
    [part] = [
        p for m in result.all_messages() if isinstance(m, ModelRequest) for p in m.parts if p.part_kind == "tool-return"
    ]
    assert isinstance(part, ToolReturnPart) and part.outcome == "failed"  # a failure, not a result
    assert calls == []


@pytest.mark.parametrize("answer", [False, True])
async def test_the_approver_is_asked_and_its_no_stops_the_call(
    harness: KairoxHarness, kairox_tool_provider: InMemoryToolProvider, calls: list[str], answer: bool
) -> None:
    await approver_decides(turn, harness, kairox_tool_provider, calls, answer)


async def test_a_pre_tool_call_hook_blocks_the_call(
    harness: KairoxHarness, kairox_tool_provider: InMemoryToolProvider, calls: list[str]
) -> None:
    await hook_blocks(turn, harness, kairox_tool_provider, calls)


async def test_tools_are_listed_from_the_session_at_every_step(
    harness: KairoxHarness, kairox_tool_provider: InMemoryToolProvider, calls: list[str]
) -> None:
    """A tool added while the agent runs is offered at its next step; a removed one is gone."""
    provider = kairox_tool_provider

    @provider.tool("notes.tag", domain="local", capability="write")
    def tag(title: str) -> str:
        """Tag a note: adds notes.archive and removes itself."""
        provider.add_function(lambda title: f"archived {title}", "notes.archive", domain="local", capability="write")
        provider.remove("notes.tag")
        return f"tagged {title}"

    seen: list[AgentInfo] = []
    async with harness.open(plugins=[provider.plugin()]) as rt:
        result = await run(rt, calls_then_answers("notes_tag", {"title": "x"}, seen))
    assert result.output == "tagged x"
    first, second = ({t.name for t in info.function_tools} for info in seen)
    assert "notes_tag" in first and "notes_archive" not in first
    assert "notes_archive" in second and "notes_tag" not in second


async def test_an_mcp_servers_tool_is_called_through_the_toolset(kairox_harness: KairoxHarness) -> None:
    kairox_harness.write_config(MCP_SERVER, where="user")
    async with kairox_harness.open(load_entrypoints=True) as rt:
        result = await run(rt, calls_then_answers("wb_echo", {"message": "over stdio"}))
    assert result.output == "over stdio"
