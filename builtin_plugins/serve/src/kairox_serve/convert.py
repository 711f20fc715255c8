"""Kairox's tools, results and skills in MCP's terms (the SDK's ``mcp_types`` models)."""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import mcp_types as types

from kairox import (
    AudioContent,
    Capability,
    Domain,
    ImageContent,
    ResourceContent,
    ResourceLink,
    TextContent,
    ToolResult,
    ToolSpec,
)
from kairox.files import Refused, Root, is_inside

if TYPE_CHECKING:
    from kairox.ext import SkillDef

__all__ = [
    "SKILL_SCHEME",
    "MAX_RESOURCE_BYTES",
    "BadSkillUri",
    "annotations_for",
    "call_result",
    "content_block",
    "error_result",
    "mcp_tool",
    "parse_skill_uri",
    "prompt_for",
    "skill_files",
    "skill_uri",
]

#: resources of skills: ``skill://<quoted skill name>/<path inside the skill>``
SKILL_SCHEME = "skill://"
#: a skill file larger than this is not served (``resources/read`` says so)
MAX_RESOURCE_BYTES = 4 * 1024 * 1024
#: the ``_meta`` key of a listed tool: its canonical id, domain and capability
META_KEY = "io.kairox/tool"


def annotations_for(spec: ToolSpec) -> types.ToolAnnotations:
    """Hints derived from the tool's domain and capability, the facts kairox's policy
    decides on. A backend server's own annotations are never passed on: a server that
    calls its tool read-only must not make a client treat it as one."""
    capability = spec.capability
    read = capability is Capability.READ
    return types.ToolAnnotations(
        title=spec.title,
        read_only_hint=read,
        destructive_hint=not read,
        idempotent_hint=read,
        # local: the workspace only; network and system tools reach beyond it
        open_world_hint=spec.domain is not Domain.LOCAL,
    )


def mcp_tool(spec: ToolSpec) -> types.Tool:
    """The MCP ``Tool`` of a registered tool, under its exported name; its ``_meta`` is the
    backend's as sent (an MCP App's ``ui.resourceUri`` included) with the gateway's own key
    beside it (a backend cannot set that one)."""
    return types.Tool(
        name=spec.exported_name or spec.id,
        title=spec.title,
        description=spec.description or None,
        input_schema=dict(spec.input_schema),
        output_schema=dict(spec.output_schema) if spec.output_schema else None,
        annotations=annotations_for(spec),
        _meta={
            **spec.meta,
            META_KEY: {"id": spec.id, "domain": str(spec.domain), "capability": str(spec.capability)},
        },
    )


#: ``_meta`` keys of a result the SDK manages itself (a backend's serverInfo is not the gateway's)
_RESERVED_META = "io.modelcontextprotocol/"


def _extras(block: Any) -> dict[str, Any]:
    """A block's ``annotations`` and ``_meta``, as the backend sent them (when it did)."""
    extras: dict[str, Any] = {}
    if block.annotations:
        extras["annotations"] = block.annotations
    if block.meta:
        extras["_meta"] = block.meta
    return extras


def _block(block: Any, full: bool) -> types.ContentBlock:
    """The MCP block; ``full``: with the backend's annotations, ``_meta`` and a link's
    title, size and icons."""
    extras = _extras(block) if full else {}
    if isinstance(block, TextContent):
        return types.TextContent(text=block.text, **extras)
    if isinstance(block, ImageContent):
        return types.ImageContent(data=block.data, mime_type=block.mime_type, **extras)
    if isinstance(block, AudioContent):
        return types.AudioContent(data=block.data, mime_type=block.mime_type, **extras)
    if isinstance(block, ResourceLink):
        if full:
            extras.update(title=block.title, size=block.size, icons=list(block.icons) if block.icons else None)
        return types.ResourceLink(
            uri=block.uri,
            name=block.name or block.uri,
            mime_type=block.mime_type,
            description=block.description,
            **extras,
        )
    if isinstance(block, ResourceContent):
        resource: types.TextResourceContents | types.BlobResourceContents
        inner = {"_meta": block.meta} if full and block.meta else {}
        if block.text is not None or block.blob is None:
            resource = types.TextResourceContents(
                uri=block.uri, mime_type=block.mime_type, text=block.text or "", **inner
            )
        else:
            resource = types.BlobResourceContents(uri=block.uri, mime_type=block.mime_type, blob=block.blob, **inner)
        return types.EmbeddedResource(resource=resource, **extras)
    return types.TextContent(text=str(block))


def content_block(block: Any) -> types.ContentBlock:
    """A kairox content block as the MCP block of the same kind, with what the backend
    gave it besides (annotations, ``_meta``; a link's title, size, icons). Extras that are
    not valid MCP are dropped rather than failing the call."""
    try:
        return _block(block, True)
    except ValueError:  # pydantic's ValidationError: an extra is not valid MCP
        return _block(block, False)


def call_result(result: ToolResult) -> types.CallToolResult:
    """A kairox :class:`~kairox.ToolResult` as an MCP ``CallToolResult`` (blocks kept in
    kind, with their annotations and ``_meta``; the result's ``_meta`` without the keys the
    SDK reserves)."""
    meta = {k: v for k, v in result.meta.items() if not k.startswith(_RESERVED_META)} if result.meta else None
    return types.CallToolResult(
        content=[content_block(b) for b in result.content],
        structured_content=result.structured,
        is_error=result.is_error,
        _meta=meta or None,
    )


def error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


# -- skills ---------------------------------------------------------------------------


def prompt_for(skill: SkillDef) -> types.Prompt:
    """A skill as an MCP prompt: its name, description and declared arguments."""
    return types.Prompt(
        name=skill.name,
        description=skill.description or None,
        arguments=[
            types.PromptArgument(name=a.name, description=a.description or None, required=a.required)
            for a in skill.arguments
        ]
        or None,
    )


def skill_uri(skill_name: str, relative: str) -> str:
    return f"{SKILL_SCHEME}{quote(skill_name, safe='')}/{quote(relative, safe='/')}"


class BadSkillUri(ValueError):
    """A ``resources/read`` URI that names no skill file; ``str()`` says why."""


def parse_skill_uri(uri: str) -> tuple[str, str]:
    """``(skill name, relative path)`` of a ``skill://`` URI. The path is checked for
    shape only (no ``..``, not absolute, no empty or NUL parts); whether it exists inside
    the skill's folder is decided when it is read."""
    if not isinstance(uri, str) or not uri.startswith(SKILL_SCHEME):
        raise BadSkillUri(f"not a skill resource (expected {SKILL_SCHEME}<skill>/<file>)")
    rest = uri[len(SKILL_SCHEME) :]
    quoted_name, sep, quoted_path = rest.partition("/")
    name = unquote(quoted_name)
    relative = unquote(quoted_path)
    if not name or not sep or not relative:
        raise BadSkillUri(f"expected {SKILL_SCHEME}<skill>/<file>")
    parts = relative.split("/")
    if relative.startswith("/") or "\\" in relative or "\x00" in relative or "\x00" in name:
        raise BadSkillUri("the file must be a relative path inside the skill")
    if any(part in ("", ".", "..") for part in parts):
        raise BadSkillUri("the file must be a relative path inside the skill (no empty, '.' or '..' parts)")
    return name, relative


def skill_files(skill: SkillDef) -> list[tuple[str, Path]]:
    """Every file of a skill as ``(relative path, absolute path)``: its own file
    (``SKILL.md``, or the skill file) and, for a folder skill, the files beside it."""
    path = skill.path
    if path is None:
        return []
    out: list[tuple[str, Path]] = [(path.name, path)]
    root = skill.root
    if root is not None:
        real_root = root.resolve()
        for group in skill.resources().values():
            # a symlink out of the skill is neither listed (its size would tell about its
            # target) nor read
            out.extend((rel, root / rel) for rel in group if is_inside((root / rel).resolve(), real_root))
    return out


def read_contents(uri: str, path: Path, root: Root) -> types.TextResourceContents | types.BlobResourceContents:
    """A file as resource contents (text when it is UTF-8, else a base64 blob), read inside
    ``root`` (the skill's contained root: a link out of it, a device, a file over the limit
    is refused)."""
    try:
        data = root.read_bytes(path, max_bytes=MAX_RESOURCE_BYTES)
    except Refused as exc:
        raise BadSkillUri(exc.reason) from None
    mime = mimetypes.guess_type(path.name)[0]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return types.BlobResourceContents(
            uri=uri, mime_type=mime or "application/octet-stream", blob=base64.b64encode(data).decode()
        )
    if mime is None and path.suffix.lower() == ".md":
        mime = "text/markdown"
    return types.TextResourceContents(uri=uri, mime_type=mime or "text/plain", text=text)
