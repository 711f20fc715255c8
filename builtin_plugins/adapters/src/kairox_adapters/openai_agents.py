"""A session's tools as openai-agents function tools.

::

    from agents import Agent, Runner
    from kairox_adapters.openai_agents import tools

    async with runtime.session() as session:
        agent = Agent(name="helper", tools=tools(session))
        result = await Runner.run(agent, "what changed in the last commit?")

:func:`tools` lists the session's model-visible tools when it is called: call it again for a
run that should see tools added since (a tool removed since answers that it is unknown).
Every call is ``session.call_tool(name, args, errors="result")``: the policy, the hooks and the
approver decide it, and a refusal or failure is returned to the model as text starting
``error:`` (the SDK sends a string a tool returns to the model; an exception would end the run).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agents import FunctionTool, ToolOutputImage, ToolOutputText

from kairox import ImageContent, TextContent, ToolResult
from kairox.hosts import tools_for

if TYPE_CHECKING:
    from agents.tool_context import ToolContext

    from kairox import Session

__all__ = ["to_output", "tools"]


def tools(session: Session) -> list[FunctionTool]:
    """One :class:`agents.FunctionTool` for each tool the model may use in ``session``, under
    its exported name. The schemas are the tools' own, so not strict (``strict_json_schema=False``):
    kairox validates the arguments against them before anything runs."""
    return [
        _function_tool(session, entry["function"]["name"], entry["function"])
        for entry in tools_for(session, "openai-chat")
    ]


def _function_tool(session: Session, name: str, function: dict[str, Any]) -> FunctionTool:
    async def invoke(ctx: ToolContext[Any], arguments: str) -> Any:
        try:
            args = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            return f"error: the arguments of {name} are not JSON: {exc}"
        if not isinstance(args, dict):
            return f"error: the arguments of {name} must be a JSON object, not {type(args).__name__}"
        return to_output(await session.call_tool(name, args, errors="result"))

    return FunctionTool(
        name=name,
        description=function["description"],
        params_json_schema=function["parameters"],
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


def to_output(result: ToolResult) -> str | list[ToolOutputText | ToolOutputImage]:
    """What a function tool returns for ``result``: its text (``error: `` first for an error
    result; structured content as JSON when there is no other), or, when it has images, text
    and images in order (:class:`agents.ToolOutputText`, :class:`agents.ToolOutputImage` as a
    data URL). Audio, resources and links are their text or a note naming them."""
    if not any(isinstance(b, ImageContent) for b in result.content):
        return f"error: {result.text}" if result.is_error else result.text
    out: list[ToolOutputText | ToolOutputImage] = [ToolOutputText(text="error:")] if result.is_error else []
    for block in result.content:
        if isinstance(block, ImageContent):
            out.append(ToolOutputImage(image_url=f"data:{block.mime_type};base64,{block.data}"))
        elif isinstance(block, TextContent):
            out.append(ToolOutputText(text=block.text))
        else:
            out.append(ToolOutputText(text=ToolResult(content=(block,)).text))
    return out
