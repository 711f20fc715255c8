"""A session's tools as a pydantic-ai toolset.

::

    from pydantic_ai import Agent
    from kairox_adapters.pydantic_ai import KairoxToolset

    async with runtime.session() as session:
        agent = Agent(model, toolsets=[KairoxToolset(session)])
        result = await agent.run("what changed in the last commit?")

The tools are listed from the session at every step of a run (:meth:`get_tools`), so a
server that starts, stops or changes its tools mid-run is seen. Every call is
``session.call_tool(name, args, errors="result")``: the policy, the hooks and the approver
decide it, and a refusal or failure reaches the model as a failed tool result
(:class:`pydantic_ai.ToolFailed`: the model adapts rather than retrying the same call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic_ai import BinaryContent, RunContext, ToolDefinition, ToolFailed
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from kairox import AudioContent, ImageContent, TextContent, ToolResult
from kairox.hosts import tools_for

if TYPE_CHECKING:
    from kairox import Session

__all__ = ["KairoxToolset", "to_return_value"]

#: the arguments are any JSON object: kairox validates them against the tool's schema, so a
#: bad argument comes back from the call pipeline naming the field, as for every host
_ANY_OBJECT = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))


class KairoxToolset(AbstractToolset[Any]):
    """The model-visible tools of ``session``, each call going through ``session.call_tool``.

    ``id`` names the toolset among an agent's (pydantic-ai wants one for durable execution);
    ``max_retries`` is how often the model may resend a call whose arguments are not a JSON
    object (``None``: the run's default).
    """

    def __init__(self, session: Session, *, id: str | None = None, max_retries: int | None = None) -> None:
        self.session = session
        self._id = id
        self.max_retries = max_retries

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        tools: dict[str, ToolsetTool[Any]] = {}
        for entry in tools_for(self.session, "openai-chat"):
            function = entry["function"]
            tools[function["name"]] = ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=function["name"],
                    description=function["description"],
                    parameters_json_schema=function["parameters"],
                ),
                max_retries=self.max_retries if self.max_retries is not None else ctx.max_retries,
                args_validator=_ANY_OBJECT,
            )
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        result = await self.session.call_tool(name, tool_args, errors="result")
        if result.is_error:
            raise ToolFailed(result.text)
        return to_return_value(result)


def to_return_value(result: ToolResult) -> Any:
    """What a pydantic-ai tool returns for ``result``: its structured content (a dict, sent to
    the model as JSON) when every block is text, as pydantic-ai's own MCP toolset does (by the
    MCP convention such text is the same JSON); otherwise text, and images and audio as
    :class:`~pydantic_ai.BinaryContent`, one value or a list of them."""
    if result.structured is not None and all(isinstance(b, TextContent) for b in result.content):
        return result.structured
    values: list[Any] = []
    for block in result.content:
        if isinstance(block, TextContent):
            values.append(block.text)
        elif isinstance(block, (ImageContent, AudioContent)):
            values.append(BinaryContent(data=block.raw(), media_type=block.mime_type))
        else:  # resources and links: their text, or a note naming them
            values.append(ToolResult(content=(block,)).text)
    if not values:
        return ""
    return values[0] if len(values) == 1 else values
