"""MCP tools as kairox tools: specs, schemas, results.

The pure functions here (:func:`normalize_schema`, :func:`classify`,
:func:`build_spec`, :func:`convert_content`, :func:`convert_result`) read the
SDK's pydantic objects by attribute only, so this module never imports ``mcp``.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs

from kairox import (
    AudioContent,
    Capability,
    Content,
    Domain,
    ImageContent,
    ResourceContent,
    ResourceLink,
    TextContent,
    ToolContext,
    ToolResult,
    ToolSpec,
)

from .config import McpServerConfig

if TYPE_CHECKING:
    from .lifecycle import ServerLifecycle

__all__ = [
    "TOOL_NAME",
    "McpToolAdapter",
    "build_spec",
    "canonical_id",
    "classify",
    "convert_content",
    "convert_result",
    "normalize_schema",
    "tool_problem",
    "withheld_reason",
]

logger = logging.getLogger(__name__)


#: the spec's tool name rule (2025-11-25, SEP-986): 1-128 of A-Z a-z 0-9 _ - .
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def tool_problem(tool: Any) -> str | None:
    """Why one entry of a ``tools/list`` result (the raw JSON object) cannot be a tool, or None.

    Checks what kairox relies on: a ``name`` that follows :data:`TOOL_NAME` (no spaces,
    ``/``, ``..``, control or bidi characters: names end up in tool ids, exported names
    and terminals) and an ``inputSchema`` that is a JSON object of ``"type": "object"``
    (the spec's rule; a scalar schema cannot describe named arguments). The SDK's own
    model is checked after this (``kairox_mcp.client``)."""
    if not isinstance(tool, Mapping):
        return f"not a JSON object ({type(tool).__name__})"
    name = tool.get("name")
    if not isinstance(name, str):
        return "no name" if name is None else f"name is not a string ({type(name).__name__})"
    if not TOOL_NAME.fullmatch(name):
        if not name:
            return "empty name"
        if len(name) > 128:
            return f"name of {len(name)} characters (at most 128 allowed)"
        return "name has characters outside A-Z a-z 0-9 _ - ."
    schema = tool.get("inputSchema")
    if schema is None:
        return "no inputSchema"
    if not isinstance(schema, Mapping):
        return f"inputSchema is not a JSON object ({type(schema).__name__})"
    if "type" not in schema:
        return 'inputSchema has no "type" (must be "object")'
    if schema["type"] != "object":
        return f'inputSchema has "type": {json.dumps(schema["type"])[:40]} (must be "object")'
    return None


def canonical_id(server: str, config: McpServerConfig, tool: str) -> str:
    """``<tool_prefix or server>.<tool>``."""
    return f"{config.tool_prefix or server}.{tool}"


def normalize_schema(schema: Any) -> dict[str, Any]:
    """An input schema model APIs accept: a top-level ``object`` with ``properties``.

    Keeps every other keyword; a missing or non-object schema becomes an empty
    object schema; ``required`` keeps only string names. Idempotent.
    """
    if not isinstance(schema, Mapping):
        return {"type": "object", "properties": {}}
    out = dict(schema)
    kind = out.get("type")
    if kind != "object":
        if kind is None or (isinstance(kind, list) and "object" in kind):
            out["type"] = "object"
        else:  # a scalar schema cannot describe named arguments
            return {"type": "object", "properties": {}}
    if not isinstance(out.get("properties"), Mapping):
        out["properties"] = {}
    else:
        out["properties"] = dict(out["properties"])
    if "required" in out:
        required = out["required"]
        if isinstance(required, list):
            out["required"] = [r for r in required if isinstance(r, str)]
        else:
            del out["required"]
    return out


def _hint(annotations: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = annotations.get(camel, annotations.get(snake))
    return value if isinstance(value, bool) else None


def classify(
    config: McpServerConfig, annotations: Mapping[str, Any] | None
) -> tuple[Domain, Capability, tuple[Literal["domain", "capability"], ...]]:
    """Domain and capability: the server's config; else, only for a server the user marked
    ``trust_annotations = true`` in a config of their own, the tool's MCP annotations
    (``readOnlyHint`` -> read, ``destructiveHint`` -> write, ``openWorldHint`` -> network);
    else the strict default ``system``/``execute``. Third, which of the two neither said,
    so that the default stands in (:attr:`~kairox.ToolSpec.undeclared`).

    The MCP spec: clients MUST treat annotations as untrusted unless the server is trusted;
    a server that calls its tool read-only must not decide that the tool runs unasked.
    """
    ann = (annotations or {}) if config.trust_annotations else {}
    undeclared: list[Literal["domain", "capability"]] = []
    domain = config.domain
    if domain is None:
        if _hint(ann, "openWorldHint", "open_world_hint") is True:
            domain = Domain.NETWORK
        else:
            domain = Domain.SYSTEM
            undeclared.append("domain")
    capability = config.capability
    if capability is None:
        if _hint(ann, "readOnlyHint", "read_only_hint") is True:
            capability = Capability.READ
        elif _hint(ann, "destructiveHint", "destructive_hint") is True:
            capability = Capability.WRITE
        else:
            capability = Capability.EXECUTE
            undeclared.append("capability")
    return domain, capability, tuple(undeclared)


def _plain(value: Any) -> Any:
    """A pydantic object (or a mapping of them) as plain JSON data; ``None`` stays ``None``."""
    if value is None:
        return None
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(by_alias=True, exclude_none=True, mode="json")
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _dict_or_none(value: Any) -> dict[str, Any] | None:
    data = _plain(value)
    return dict(data) if isinstance(data, Mapping) else None


def _annotations_of(tool: Any) -> dict[str, Any]:
    return _dict_or_none(getattr(tool, "annotations", None)) or {}


def _icons_of(value: Any) -> tuple[dict[str, Any], ...]:
    icons = _plain(getattr(value, "icons", None))
    if not isinstance(icons, list):
        return ()
    return tuple(dict(i) for i in icons if isinstance(i, Mapping))


def withheld_reason(tool: Any) -> str | None:
    """Why an MCP tool is not offered to the model, or ``None``: a tool whose
    ``execution.taskSupport`` is ``"required"`` can only run as a task, and kairox calls
    tools directly (the SDK's client has no task API), so offering it would only fail."""
    execution = getattr(tool, "execution", None)
    support = (
        execution.get("taskSupport") if isinstance(execution, Mapping) else getattr(execution, "task_support", None)
    )
    if support == "required":
        return 'it must run as a task (execution.taskSupport is "required"), which kairox does not do'
    return None


def build_spec(server: str, config: McpServerConfig, tool: Any) -> ToolSpec:
    """The :class:`~kairox.ToolSpec` of an MCP ``Tool`` (an SDK object or anything with
    ``name``, ``description``, ``input_schema``, ``output_schema``, ``annotations``, ``title``)."""
    annotations = _annotations_of(tool)
    domain, capability, undeclared = classify(config, annotations)
    output_schema = getattr(tool, "output_schema", None)
    meta = _dict_or_none(getattr(tool, "meta", None)) or {}
    return ToolSpec(
        id=canonical_id(server, config, tool.name),
        description=getattr(tool, "description", None) or "",
        input_schema=normalize_schema(getattr(tool, "input_schema", None)),
        domain=domain,
        capability=capability,
        provider=sys.intern(f"mcp:{server}"),  # one string for all of a server's tools
        title=getattr(tool, "title", None) or annotations.get("title"),
        output_schema=dict(output_schema) if isinstance(output_schema, Mapping) else None,
        annotations=annotations,
        icons=_icons_of(tool),
        meta=meta,
        model_visible=model_visible(meta),
        undeclared=undeclared,
    )


def model_visible(meta: Mapping[str, Any]) -> bool:
    """Whether an MCP tool is for the model: MCP Apps' ``_meta.ui.visibility`` (default
    ``["model", "app"]``) without ``"model"`` keeps it for its app's UI only."""
    ui = meta.get("ui")
    visibility = ui.get("visibility") if isinstance(ui, Mapping) else None
    return not isinstance(visibility, list) or "model" in visibility


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _extras(block: Any) -> dict[str, Any]:
    """A block's ``annotations`` (audience, priority, lastModified) and ``_meta``."""
    return {
        "annotations": _dict_or_none(getattr(block, "annotations", None)),
        "meta": _dict_or_none(getattr(block, "meta", None)),
    }


def convert_content(block: Any) -> Content:
    """One MCP content block as a kairox content block, unchanged in kind, with its
    ``annotations`` and ``_meta``."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return TextContent(block.text, **_extras(block))
    if kind == "image":
        return ImageContent(data=block.data, mime_type=block.mime_type, **_extras(block))
    if kind == "audio":
        return AudioContent(data=block.data, mime_type=block.mime_type, **_extras(block))
    if kind == "resource_link":
        size = getattr(block, "size", None)
        return ResourceLink(
            uri=str(block.uri),
            name=getattr(block, "name", "") or "",
            mime_type=getattr(block, "mime_type", None),
            description=getattr(block, "description", None),
            title=getattr(block, "title", None),
            size=size if isinstance(size, int) and not isinstance(size, bool) else None,
            icons=_icons_of(block) or None,
            **_extras(block),
        )
    if kind == "resource":
        inner = convert_resource_contents(block.resource)
        extras = _extras(block)
        return attrs.evolve(
            inner, annotations=extras["annotations"], meta=extras["meta"] if extras["meta"] is not None else inner.meta
        )
    dump = getattr(block, "model_dump", None)
    rendered = json.dumps(dump(mode="json", by_alias=True), ensure_ascii=False) if dump else repr(block)
    return TextContent(f"[unsupported MCP content {kind!r}] {rendered}")


def convert_resource_contents(contents: Any) -> ResourceContent:
    """``TextResourceContents`` / ``BlobResourceContents`` as a kairox :class:`~kairox.ResourceContent`."""
    return ResourceContent(
        uri=str(contents.uri),
        mime_type=getattr(contents, "mime_type", None),
        text=getattr(contents, "text", None),
        blob=getattr(contents, "blob", None),
        meta=_dict_or_none(getattr(contents, "meta", None)),
    )


def convert_result(result: Any) -> ToolResult:
    """An MCP ``CallToolResult`` as a :class:`~kairox.ToolResult` (content, structured, is_error)."""
    structured = getattr(result, "structured_content", None)
    meta = getattr(result, "meta", None)
    if structured is None and meta is None:
        # the usual answer (text blocks, nothing else): each plain text block made directly,
        # as convert_content makes it (no annotations, no _meta); any other block the long way
        blocks: list[Content] = []
        for block in getattr(result, "content", None) or ():
            if (
                getattr(block, "type", None) == "text"
                and getattr(block, "annotations", None) is None
                and getattr(block, "meta", None) is None
            ):
                blocks.append(TextContent(block.text))
            else:
                blocks.append(convert_content(block))
        return ToolResult(content=tuple(blocks), is_error=bool(getattr(result, "is_error", False)))
    return _convert_result(result, structured, meta)


def _convert_result(result: Any, structured: Any, meta: Any) -> ToolResult:
    """:func:`convert_result`, every field read the general way."""
    if structured is not None and not isinstance(structured, dict):
        structured = {"result": structured}
    return ToolResult(
        content=tuple(convert_content(b) for b in (getattr(result, "content", None) or ())),
        structured=structured,
        is_error=bool(getattr(result, "is_error", False)),
        meta=dict(meta) if isinstance(meta, Mapping) else {},
    )


class McpToolAdapter:
    """One tool of one MCP server, callable through the runtime.

    Calls go to the server's current session; when the server is not ready
    (starting, restarting, failed) the call fails with a :class:`~kairox.ToolError`
    that says so.
    """

    __slots__ = ("_server", "_spec", "tool_name")  # one per tool of every server: no __dict__

    def __init__(self, spec: ToolSpec, server: ServerLifecycle, tool_name: str) -> None:
        self._spec = spec
        self._server = server
        self.tool_name = tool_name

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def server(self) -> str:
        return self._server.name

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        progress = context.report_progress if context.progress is not None else None
        timeout = self._server.config.tool_timeout_s
        result = await self._server.call_tool(self.tool_name, arguments, timeout=timeout, progress=progress)
        return convert_result(result)

    def __repr__(self) -> str:
        return f"<McpToolAdapter {self._spec.id} of {self._server.name}>"
