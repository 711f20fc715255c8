"""``kairox_adapters.openai_agents.tools``: a real openai-agents ``Agent`` run by the SDK's
``Runner`` against a real kairox runtime, offline: the model is the SDK's own
``agents.testing.ScriptedModel`` (it calls one tool, then answers with the output the runner
gave it back), tracing is off. Every call goes through the session: the policy, the approver
and the hooks decide it, and the tools record whether they ran."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from adapters_helpers import MCP_SERVER, PNG, approver_decides, hook_blocks
from agents import Agent, FunctionTool, RunConfig, Runner
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

from kairox import Runtime
from kairox_adapters.openai_agents import tools
from kairox_testing import InMemoryToolProvider, KairoxHarness

pytestmark = pytest.mark.anyio


def returned(call: ModelCall) -> Any:
    """The output of the last tool call, as the runner sent it to the model."""
    [*_, last] = [i for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return last["output"]


def calls_then_answers(name: str, args: dict[str, Any]) -> ScriptedModel:
    """A model that calls ``name`` with ``args``, then answers with the call's output."""

    def answer(call: ModelCall) -> Any:
        output = returned(call)
        return [assistant_message(output if isinstance(output, str) else repr(output))]

    return ScriptedModel([[function_call(name, args, call_id="call_1")], ModelStep.respond(answer)])


async def run(rt: Runtime, model: ScriptedModel, *, approver: Callable[..., Any] | None = None) -> Any:
    async with rt.session(approver=approver) as session:
        agent = Agent(name="helper", model=model, tools=list(tools(session)))
        result = await Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True))
    model.assert_complete()
    return result.final_output


async def turn(rt: Runtime, name: str, args: dict[str, Any], approver: Callable[..., Any] | None) -> str:
    """:data:`adapters_helpers.Turn` in openai-agents."""
    output: str = await run(rt, calls_then_answers(name, args), approver=approver)
    return output


async def test_the_tools_are_the_sessions_model_visible_tools(
    kairox_harness: KairoxHarness, kairox_tool_provider: InMemoryToolProvider, calls: list[str]
) -> None:
    kairox_tool_provider.add_function(lambda: "refreshed", "app.refresh", model_visible=False, description="For an app")
    async with kairox_harness.open(plugins=[kairox_tool_provider.plugin()]) as rt, rt.session() as session:
        offered = {t.name: t for t in tools(session)}
    assert {"notes_add", "weather_now", "chart_draw"} <= set(offered)
    assert "app_refresh" not in offered
    add = offered["notes_add"]
    assert isinstance(add, FunctionTool) and add.strict_json_schema is False
    assert add.description == "Add a note."
    assert add.params_json_schema["required"] == ["title"]


@pytest.mark.parametrize(
    ("tool", "reads", "ran"),
    [
        pytest.param("notes_add", "added groceries", ["add groceries"], id="the-result-of-a-call"),
        # a tool denied by a policy rule never runs, and the model reads why
        pytest.param(
            "notes_delete", "error: notes.delete: denied by a rule in [policy.rules]", [], id="a-denied-tool-never-runs"
        ),
    ],
)
async def test_the_model_reads_what_the_call_gave(
    harness: KairoxHarness,
    kairox_tool_provider: InMemoryToolProvider,
    calls: list[str],
    tool: str,
    reads: str,
    ran: list[str],
) -> None:
    async with harness.open(plugins=[kairox_tool_provider.plugin()]) as rt:
        output = await run(rt, calls_then_answers(tool, {"title": "groceries"}))
    assert output == reads
    assert calls == ran


async def test_an_image_reaches_the_model_as_an_input_image(
    harness: KairoxHarness, kairox_tool_provider: InMemoryToolProvider, calls: list[str]
) -> None:
    model = calls_then_answers("chart_draw", {"title": "sales"})
    async with harness.open(plugins=[kairox_tool_provider.plugin()]) as rt:
        await run(rt, model)
    assert model.last_call is not None
    assert returned(model.last_call) == [
        {"type": "input_text", "text": "chart sales"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
    ]


@pytest.mark.parametrize("answer", [False, True])
async def test_the_approver_is_asked_and_its_no_stops_the_call(
    harness: KairoxHarness, kairox_tool_provider: InMemoryToolProvider, calls: list[str], answer: bool
) -> None:
    output = await approver_decides(turn, harness, kairox_tool_provider, calls, answer)
    assert answer or output.startswith("error: notes.publish: the user declined"), output


async def test_a_pre_tool_call_hook_blocks_the_call(
    harness: KairoxHarness, kairox_tool_provider: InMemoryToolProvider, calls: list[str]
) -> None:
    output = await hook_blocks(turn, harness, kairox_tool_provider, calls)
    assert output.startswith("error:"), output


@pytest.mark.parametrize(("arguments", "says"), [("{not json", "are not JSON"), ('["groceries"]', "JSON object")])
async def test_arguments_that_are_not_a_json_object_are_an_error_for_the_model(
    harness: KairoxHarness, kairox_tool_provider: InMemoryToolProvider, calls: list[str], arguments: str, says: str
) -> None:
    """Invoked as the runner invokes a function tool: a ToolContext and the raw argument text."""
    async with harness.open(plugins=[kairox_tool_provider.plugin()]) as rt, rt.session() as session:
        [add] = [t for t in tools(session) if t.name == "notes_add"]
        context = ToolContext(context=None, tool_name="notes_add", tool_call_id="call_1", tool_arguments=arguments)
        output = await add.on_invoke_tool(context, arguments)
    assert output.startswith("error: the arguments of notes_add") and says in output, output
    assert calls == []


async def test_an_mcp_servers_tool_is_called_through_the_tools(kairox_harness: KairoxHarness) -> None:
    kairox_harness.write_config(MCP_SERVER, where="user")
    async with kairox_harness.open(load_entrypoints=True) as rt:
        output = await run(rt, calls_then_answers("wb_echo", {"message": "over stdio"}))
    assert output == "over stdio"
