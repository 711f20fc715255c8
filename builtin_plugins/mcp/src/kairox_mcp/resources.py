"""Resources and prompts of MCP servers, as plain kairox data (no SDK types leak out)."""

from __future__ import annotations

from typing import Any

import attrs

from kairox import Content, ResourceContent

from .adapter import convert_content, convert_resource_contents

__all__ = [
    "McpPrompt",
    "McpPromptArgument",
    "McpPromptMessage",
    "McpPromptResult",
    "McpResource",
    "McpResourceTemplate",
    "prompt_from_sdk",
    "prompt_result_from_sdk",
    "resource_from_sdk",
    "resource_contents_from_sdk",
    "template_from_sdk",
]


@attrs.frozen
class McpResource:
    server: str
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None


@attrs.frozen
class McpResourceTemplate:
    server: str
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


@attrs.frozen
class McpPromptArgument:
    name: str
    description: str | None = None
    required: bool = False


@attrs.frozen
class McpPrompt:
    server: str
    name: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[McpPromptArgument, ...] = ()


@attrs.frozen
class McpPromptMessage:
    role: str  # "user" | "assistant"
    content: Content


@attrs.frozen
class McpPromptResult:
    server: str
    name: str
    description: str | None = None
    messages: tuple[McpPromptMessage, ...] = ()

    @property
    def text(self) -> str:
        """The messages as ``role: text`` lines (images and resources as placeholders)."""
        from kairox import ToolResult

        return "\n\n".join(f"{m.role}: {ToolResult(content=(m.content,)).text}" for m in self.messages)


def resource_from_sdk(server: str, r: Any) -> McpResource:
    return McpResource(
        server=server,
        uri=str(r.uri),
        name=r.name,
        title=getattr(r, "title", None),
        description=getattr(r, "description", None),
        mime_type=getattr(r, "mime_type", None),
        size=getattr(r, "size", None),
    )


def template_from_sdk(server: str, t: Any) -> McpResourceTemplate:
    return McpResourceTemplate(
        server=server,
        uri_template=str(t.uri_template),
        name=t.name,
        title=getattr(t, "title", None),
        description=getattr(t, "description", None),
        mime_type=getattr(t, "mime_type", None),
    )


def resource_contents_from_sdk(result: Any) -> list[ResourceContent]:
    return [convert_resource_contents(c) for c in result.contents]


def prompt_from_sdk(server: str, p: Any) -> McpPrompt:
    return McpPrompt(
        server=server,
        name=p.name,
        title=getattr(p, "title", None),
        description=getattr(p, "description", None),
        arguments=tuple(
            McpPromptArgument(a.name, getattr(a, "description", None), bool(getattr(a, "required", False)))
            for a in (getattr(p, "arguments", None) or ())
        ),
    )


def prompt_result_from_sdk(server: str, name: str, result: Any) -> McpPromptResult:
    return McpPromptResult(
        server=server,
        name=name,
        description=getattr(result, "description", None),
        messages=tuple(McpPromptMessage(str(m.role), convert_content(m.content)) for m in result.messages),
    )
