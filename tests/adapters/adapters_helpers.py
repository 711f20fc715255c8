"""What the framework adapters' tests share: in-memory tools that record their calls, a
workspace config, and the MCP server fixture they call through a framework."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kairox import Block, ImageContent, TextContent, ToolCall, ToolResult
from kairox_testing import InMemoryToolProvider, make_plugin

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
