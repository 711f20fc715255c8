"""What the framework adapters' tests share: in-memory tools that record their calls, a
workspace config, and the MCP server fixture they call through a framework."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kairox import Block, ImageContent, Runtime, TextContent, ToolCall, ToolResult
from kairox_testing import Approvals, InMemoryToolProvider, KairoxHarness, make_plugin

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers"
PNG_BYTES = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
PNG = base64.b64encode(PNG_BYTES).decode()

#: the user config of every test: the policy refuses one tool, asks for another
POLICY = """
[policy.rules]
"notes.delete" = "deny"
"notes.publish" = "ask"
"""

#: an MCP server (raw JSON lines, tests/fixtures/mcp_servers/well_behaved.py); its echo allowed
MCP_SERVER = f"""
[mcp_servers.wb]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(FIXTURES / "well_behaved.py"))}]
startup_timeout = 20

[policy.rules]
"wb.echo" = "allow"
"""


def add_tools(provider: InMemoryToolProvider) -> list[str]:
    """Tools on ``provider``; each call a tool runs is appended to the list returned."""
    calls: list[str] = []

    def note_tool(verb: str, done: str) -> Callable[[str], str]:
        def note(title: str) -> str:
            calls.append(f"{verb} {title}")
            return f"{done} {title}"

        return note

    # notes.add, notes.delete, notes.publish: the same tool but for the verb ("Add a note.", ...)
    for verb, done in (("add", "added"), ("delete", "deleted"), ("publish", "published")):
        provider.add_function(
            note_tool(verb, done),
            f"notes.{verb}",
            description=f"{verb.capitalize()} a note.",
            domain="local",
            capability="write",
        )

    @provider.tool("weather.now", domain="local", capability="read")
    def weather(city: str) -> ToolResult:
        """The weather in a city, as data."""
        calls.append(f"weather {city}")
        data = {"city": city, "celsius": 21.5}
        return ToolResult(content=(TextContent(json.dumps(data)),), structured=data)

    @provider.tool("chart.draw", domain="local", capability="read")
    def draw(title: str) -> ToolResult:
        """Draw a chart."""
        calls.append(f"draw {title}")
        return ToolResult(content=(TextContent(f"chart {title}"), ImageContent(data=PNG, mime_type="image/png")))

    return calls


def read_only_notes() -> Any:
    """A plugin whose ``pre_tool_call`` hook blocks notes.add: "notes are read-only today"."""

    def guard(call: ToolCall) -> Block | None:
        return Block("notes are read-only today") if call.tool.id == "notes.add" else None

    return make_plugin("guard", kairox_pre_tool_call=guard)


#: one turn of a framework's agent over a session of ``rt`` (``approver``: the session's): its
#: model calls the tool named (as exported) with the arguments, then answers with what the call
#: gave it; what the agent answered
Turn = Callable[[Runtime, str, dict[str, Any], Callable[..., Any] | None], Awaitable[str]]


async def approver_decides(
    turn: Turn, harness: KairoxHarness, provider: InMemoryToolProvider, calls: list[str], answer: bool
) -> str:
    """``notes.publish`` (the policy asks) called in ``turn`` with an approver that answers
    ``answer``: the approver is asked once, its yes runs the tool and its no does not and the
    model reads why; the agent's answer."""
    approvals = Approvals(answer)
    async with harness.open(plugins=[provider.plugin()]) as rt:
        output = await turn(rt, "notes_publish", {"title": "draft"}, approvals)
    assert [r.tool.id for r in approvals.requests] == ["notes.publish"]
    if answer:
        assert output == "published draft" and calls == ["publish draft"]
    else:
        assert "notes.publish: the user declined" in output, output
        assert calls == []
    return output


async def hook_blocks(turn: Turn, harness: KairoxHarness, provider: InMemoryToolProvider, calls: list[str]) -> str:
    """``notes.add`` called in ``turn`` with :func:`read_only_notes` loaded: the tool never runs
    and the model reads the hook's reason; the agent's answer."""
    async with harness.open(plugins=[provider.plugin(), read_only_notes()]) as rt:
        output = await turn(rt, "notes_add", {"title": "groceries"}, None)
    assert "notes are read-only today" in output, output
    assert calls == []
    return output
