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


def _optional(sdk_object: Any, *names: str) -> dict[str, Any]:
    """The optional fields ``names`` of an SDK object (``None`` where it lacks one: older SDKs)."""
    return {name: getattr(sdk_object, name, None) for name in names}


def resource_from_sdk(server: str, r: Any) -> McpResource:
    return McpResource(server, str(r.uri), r.name, **_optional(r, "title", "description", "mime_type", "size"))


def template_from_sdk(server: str, t: Any) -> McpResourceTemplate:
    return McpResourceTemplate(server, str(t.uri_template), t.name, **_optional(t, "title", "description", "mime_type"))


def resource_contents_from_sdk(result: Any) -> list[ResourceContent]:
    return [convert_resource_contents(c) for c in result.contents]


def prompt_from_sdk(server: str, p: Any) -> McpPrompt:
    return McpPrompt(
        server,
        p.name,
        **_optional(p, "title", "description"),
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
