"""Tools shared by the kernel's runtime and call-path tests."""

from __future__ import annotations

from kairox import FunctionTool, ToolSpec


def read_tool(tool_id: str = "mem.echo") -> FunctionTool:
    """A local read tool that echoes ``text`` back as ``echo:<text>``."""
    return FunctionTool(
        ToolSpec(tool_id, "echo the text", domain="local", capability="read"), lambda text="": f"echo:{text}"
    )
