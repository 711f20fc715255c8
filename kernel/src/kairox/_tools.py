"""Tools: specs, results, content blocks and the ``Tool`` protocol (the registry is
``_tool_registry``, its search index ``_tool_index``)."""

from __future__ import annotations

import base64
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, Union, runtime_checkable

import attrs

from ._types import Capability, Domain, Permissions

if TYPE_CHECKING:
    from ._runtime import Runtime
    from ._session import Session

logger = logging.getLogger(__name__)

__all__ = [
    "AudioContent",
    "Content",
    "FunctionTool",
    "ImageContent",
    "ResourceContent",
    "ResourceLink",
    "TextContent",
    "Tool",
    "ToolContext",
    "ToolResult",
    "ToolSpec",
    "ToolView",
]

EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


def _freeze_schema(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(value) if value else dict(EMPTY_SCHEMA)


def _icon_tuple(icons: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    return tuple(icons)


def _undeclared_tuple(names: Iterable[Literal["domain", "capability"]]) -> tuple[Literal["domain", "capability"], ...]:
    return tuple(names)


def _respec(spec: ToolSpec, **changes: str) -> ToolSpec:
    """``spec`` with other ``exported_name`` or ``provider`` (fields with no converter): a copy
    sharing the other fields, which were converted once already (``attrs.evolve`` would copy
    the input schema again, for every tool registered and named)."""
    new = object.__new__(ToolSpec)
    for field in _SPEC_FIELDS:
        _set_field(new, field, getattr(spec, field))
    for field, value in changes.items():
        if field not in _PLAIN_FIELDS:
            raise TypeError(f"_respec sets only {', '.join(sorted(_PLAIN_FIELDS))}, not {field!r}")
        _set_field(new, field, value)
    return new


_set_field = object.__setattr__


@attrs.frozen
class ToolSpec:
    """What a tool is: identity, schema and the facts the policy engine needs.

    ``id`` is the canonical id (``fs.read``, ``git.git_status``);
    ``exported_name`` is filled in by the registry. A tool that declares no
    domain/capability is treated as ``system``/``execute``; whoever builds the spec lists
    what was not declared in ``undeclared``, and the policy's reasons say so.
    """

    id: str
    description: str = ""
    input_schema: dict[str, Any] = attrs.field(factory=lambda: dict(EMPTY_SCHEMA), converter=_freeze_schema)
    domain: Domain = attrs.field(default=Domain.SYSTEM, converter=Domain)
    capability: Capability = attrs.field(default=Capability.EXECUTE, converter=Capability)
    provider: str = ""
    title: str | None = None
    output_schema: dict[str, Any] | None = None
    #: what the tool says about itself (MCP ``annotations``): untrusted, it decides nothing
    #: unless the user trusts its server (``trust_annotations``)
    annotations: dict[str, Any] = attrs.field(factory=dict)
    #: icons the tool's server gave it (MCP ``icons``: ``{"src", "mimeType", "sizes", "theme"}``)
    icons: tuple[dict[str, Any], ...] = attrs.field(default=(), converter=_icon_tuple)
    #: the tool's MCP ``_meta``, as sent
    meta: dict[str, Any] = attrs.field(factory=dict)
    #: argument names that hold a filesystem path the tool writes to (policy checks them)
    path_arguments: tuple[str, ...] | None = None
    #: argument name of the working directory for execute tools
    permissions: Permissions | None = None
    exported_name: str = ""
    #: ``False``: the tool is for an app's own UI only (MCP Apps ``visibility: ["app"]``): it is
    #: never among a turn's tools or in ``tools.search`` (hosts and the dashboard still see it)
    model_visible: bool = True
    #: which of ``"domain"`` and ``"capability"`` the tool's source did not declare, so that
    #: kairox's strict default (``system``, ``execute``) stands in for it: a reason the policy
    #: gives then says "declares no domain/capability; treated as system/execute"
    undeclared: tuple[Literal["domain", "capability"], ...] = attrs.field(
        default=(),
        converter=_undeclared_tuple,
        validator=attrs.validators.deep_iterable(attrs.validators.in_(("domain", "capability"))),
    )

    def to_model_tool(self) -> dict[str, Any]:
        """The shape model APIs take: exported name, description, JSON schema."""
        return {
            "name": self.exported_name or self.id,
            "description": self.description,
            "input_schema": self.input_schema,
        }


_SPEC_FIELDS = tuple(field.name for field in attrs.fields(ToolSpec))
_PLAIN_FIELDS = frozenset({"exported_name", "provider"})


#: every content block may carry MCP ``annotations`` (``audience``, ``priority``,
#: ``lastModified``) and ``_meta`` as its server sent them (``None``: none sent)


@attrs.frozen
class TextContent:
    """A text block of a tool result."""

    text: str
    type: Literal["text"] = "text"
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen
class _Media:
    """What an image and an audio block share: base64 data of a MIME type, and the
    server's ``annotations`` and ``_meta``."""

    data: str  # base64
    mime_type: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def raw(self) -> bytes:
        return base64.b64decode(self.data)


@attrs.frozen
class ImageContent(_Media):
    """An image block: base64 ``data`` and a ``mime_type``."""

    type: Literal["image"] = "image"


@attrs.frozen
class AudioContent(_Media):
    """An audio block: base64 ``data`` and a ``mime_type``."""

    type: Literal["audio"] = "audio"


@attrs.frozen
class ResourceContent:
    """An embedded resource: text or base64 blob."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None
    type: Literal["resource"] = "resource"
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen
class ResourceLink:
    """A link to a resource the model may read."""

    uri: str
    name: str = ""
    mime_type: str | None = None
    description: str | None = None
    type: Literal["resource_link"] = "resource_link"
    title: str | None = None
    #: the resource's size in bytes, as the server states it
    size: int | None = None
    icons: tuple[dict[str, Any], ...] | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


#: fields of content blocks left out of :meth:`ToolResult.to_dict` when unset
_OPTIONAL_BLOCK_FIELDS = frozenset({"annotations", "meta", "title", "size", "icons"})


def _block_dict(block: Content) -> dict[str, Any]:
    data = attrs.asdict(block, filter=lambda a, v: not (a.name in _OPTIONAL_BLOCK_FIELDS and v is None))
    if "meta" in data:
        data["_meta"] = data.pop("meta")
    return data


#: any content block of a tool result
Content = Union[TextContent, ImageContent, AudioContent, ResourceContent, ResourceLink]


def _content_tuple(blocks: Iterable[Content]) -> tuple[Content, ...]:
    return tuple(blocks)


def _b64_size(data: str) -> int:
    """Decoded size of base64 text, without decoding it."""
    data = data.rstrip()
    return len(data) * 3 // 4 - data[-2:].count("=")


@attrs.frozen
class ToolResult:
    """What a tool returns. Content blocks are kept as they came (images stay images)."""

    content: tuple[Content, ...] = attrs.field(default=(), converter=_content_tuple)
    structured: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] = attrs.field(factory=dict)

    @classmethod
    def from_text(cls, text: str, *, is_error: bool = False, structured: dict[str, Any] | None = None) -> ToolResult:
        return cls(content=(TextContent(text),), is_error=is_error, structured=structured)

    @property
    def text(self) -> str:
        """A text rendering of every block (the fallback for text-only callers)."""
        parts: list[str] = []
        for block in self.content:
            if isinstance(block, TextContent):
                parts.append(block.text)
            elif isinstance(block, ImageContent):
                parts.append(f"[image {block.mime_type}, {_b64_size(block.data)} bytes]")
            elif isinstance(block, AudioContent):
                parts.append(f"[audio {block.mime_type}, {_b64_size(block.data)} bytes]")
            elif isinstance(block, ResourceContent):
                if block.text is not None:
                    parts.append(block.text)
                else:
                    parts.append(f"[resource {block.uri} {block.mime_type or ''}]".replace(" ]", "]"))
            else:
                parts.append(f"[resource link {block.uri}]")
        if not parts and self.structured is not None:
            parts.append(json.dumps(self.structured, ensure_ascii=False))
        return "\n".join(parts)

    def limited(self, *, max_text: int = 200_000, max_binary: int = 20_000_000) -> ToolResult:
        """A copy within size limits: long text blocks are cut with a marker, binary
        blocks (images, audio, blobs) over ``max_binary`` bytes become a text note.
        Returns ``self`` when nothing is over."""
        blocks: list[Content] = []
        changed = False
        for block in self.content:
            if isinstance(block, TextContent) and len(block.text) > max_text:
                cut = len(block.text) - max_text
                blocks.append(
                    attrs.evolve(block, text=block.text[:max_text] + f"\n[... truncated: {cut} more characters ...]")
                )
                changed = True
            elif isinstance(block, (ImageContent, AudioContent)) and _b64_size(block.data) > max_binary:
                blocks.append(
                    TextContent(
                        f"[{block.type} {block.mime_type} of {_b64_size(block.data)} bytes omitted: over the size limit]"
                    )
                )
                changed = True
            elif isinstance(block, ResourceContent) and block.blob is not None and _b64_size(block.blob) > max_binary:
                blocks.append(
                    TextContent(f"[resource {block.uri} of {_b64_size(block.blob)} bytes omitted: over the size limit]")
                )
                changed = True
            elif isinstance(block, ResourceContent) and block.text is not None and len(block.text) > max_text:
                cut = len(block.text) - max_text
                blocks.append(
                    attrs.evolve(block, text=block.text[:max_text] + f"\n[... truncated: {cut} more characters ...]")
                )
                changed = True
            else:
                blocks.append(block)
        return attrs.evolve(self, content=tuple(blocks)) if changed else self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: content blocks (their ``annotations`` and ``_meta`` when sent),
        ``structured``, ``is_error``, and the result's ``_meta`` when it has one."""
        data: dict[str, Any] = {
            "content": [_block_dict(c) for c in self.content],
            "structured": self.structured,
            "is_error": self.is_error,
        }
        if self.meta:
            data["_meta"] = dict(self.meta)
        return data


ProgressCallback = Callable[[float, Union[float, None], Union[str, None]], Union[None, Awaitable[None]]]


@attrs.define
class ToolContext:
    """Handed to :meth:`Tool.call`: who is calling and how to report progress."""

    runtime: Runtime | None = None
    session: Session | None = None
    call_id: str = ""
    progress: ProgressCallback | None = None
    timeout: float | None = None
    #: the roots a write must land inside: set when the policy allowed this call only
    #: because its targets resolved inside them (a tool that resolves its path again must
    #: check it, so a link changed since the decision cannot take the write outside);
    #: ``None`` when where it lands did not decide it (the user approved, or the policy
    #: decides the same anywhere)
    confined_to: tuple[Path, ...] | None = None

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self.progress is None:
            return
        result = self.progress(progress, total, message)
        if inspect.isawaitable(result):
            await result


@runtime_checkable
class Tool(Protocol):
    """Anything the agent can call."""

    @property
    def spec(self) -> ToolSpec: ...

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult: ...


ToolFunction = Callable[..., Any]


class FunctionTool:
    """A tool backed by a plain (sync or async) function.

    The function receives the arguments as keyword arguments, plus ``context``
    when it declares that parameter. It may return a :class:`ToolResult`, a
    string, or any JSON-serialisable value (returned as structured content).
    """

    def __init__(self, spec: ToolSpec, fn: ToolFunction) -> None:
        self._spec = spec
        self._fn = fn
        self._wants_context = "context" in inspect.signature(fn).parameters

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def with_spec(self, spec: ToolSpec) -> FunctionTool:
        return FunctionTool(spec, self._fn)

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        kwargs = dict(arguments)
        if self._wants_context:
            kwargs["context"] = context
        value = self._fn(**kwargs)
        if inspect.isawaitable(value):
            value = await value
        return as_result(value)


def as_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult.from_text(value)
    if value is None:
        return ToolResult()
    structured = value if isinstance(value, dict) else {"result": value}
    return ToolResult(content=(TextContent(json.dumps(value, ensure_ascii=False, default=str)),), structured=structured)


class ToolView:
    """``tool`` seen with another ``spec`` (its calls go to ``tool``): the registry hands out
    tools with their exported names filled in this way, and a bundle's tools carry its
    narrowed permissions. ``inner`` is the tool itself."""

    def __init__(self, tool: Tool, spec: ToolSpec) -> None:
        self._tool = tool
        self._spec = spec

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def inner(self) -> Tool:
        return self._tool

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await self._tool.call(arguments, context)
