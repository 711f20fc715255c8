"""Tools and tool results in the shapes model APIs take: pure data, no client library.

A host hands the model the tools of a session in its API's shape, calls what the model asks
for through the session (so every call passes the policy, the hooks and the approver), and
hands the result back as that API's tool-result message::

    tools = kairox.hosts.tools_for(session, "anthropic")
    ...  # the model answers with a tool_use block {id, name, input}
    result = await session.call_tool(kairox.hosts.tool_name(block.name, "anthropic"), block.input,
                                     errors="result")
    messages.append(kairox.hosts.result_message(result, "anthropic", block.id))

Formats: ``"openai-chat"`` (Chat Completions), ``"openai-responses"`` (Responses),
``"anthropic"`` (Messages) and ``"gemini"`` (``generateContent``). The tools offered are the
session's :attr:`~kairox.ToolSpec.model_visible` tools (or those of a
:class:`~kairox.TurnContext`, which a budget chose), under their exported names
(``[A-Za-z0-9_-]{1,64}``, which every one of these APIs accepts; Gemini also wants a
letter or ``_`` first, so a name that starts otherwise is given to it as ``_.name``, and
:func:`tool_name` reads that back). Schemas are JSON Schema objects: ``$schema`` and ``$id``
are left out (not every API takes them); Gemini gets them as ``parametersJsonSchema``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from ._tools import ImageContent, TextContent, ToolResult, ToolSpec

if TYPE_CHECKING:
    from ._context import TurnContext
    from ._session import Session

__all__ = ["FORMATS", "Format", "result_message", "tool_name", "tools_for"]

#: a model API's shape of tools and tool results
Format = Literal["openai-chat", "openai-responses", "anthropic", "gemini"]
#: every :data:`Format`
FORMATS: tuple[Format, ...] = ("openai-chat", "openai-responses", "anthropic", "gemini")
#: what Gemini is given for an exported name that does not start with a letter or ``_``
#: (``.`` is never in an exported name, so the mark cannot be a tool's own name)
_GEMINI_MARK = "_."


def _check(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")


def _model_tools(source: Session | TurnContext | Iterable[ToolSpec | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``{name, description, input_schema}`` of each tool the model may use."""
    tools = getattr(source, "tools", None)
    if isinstance(tools, list):  # a TurnContext: already in model shape, chosen by its budget
        return [dict(t) for t in tools]
    runtime = getattr(source, "runtime", None)
    specs: Iterable[Any] = runtime.tools.specs() if runtime is not None else source  # type: ignore[assignment]
    out = []
    for spec in specs:
        if isinstance(spec, ToolSpec):
            if spec.model_visible:
                out.append(spec.to_model_tool())
        else:
            out.append(dict(spec))
    return out


def _schema(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        return {"type": "object", "properties": {}}
    out = {k: v for k, v in schema.items() if k not in ("$schema", "$id")}
    out.setdefault("type", "object")
    return out


def _gemini_name(name: str) -> str:
    return name if name[:1].isalpha() or name[:1] == "_" else _GEMINI_MARK + name


def tools_for(
    source: Session | TurnContext | Iterable[ToolSpec | Mapping[str, Any]], fmt: Format
) -> list[dict[str, Any]]:
    """The tools ``source`` offers the model, as ``fmt``'s API takes them in a request's
    ``tools`` (for Gemini: one tool holding every ``functionDeclarations`` entry)."""
    _check(fmt)
    tools = _model_tools(source)
    if fmt == "openai-chat":
        return [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t.get("description") or "",
                    "parameters": _schema(t.get("input_schema")),
                },
            }
            for t in tools
        ]
    if fmt == "openai-responses":
        return [
            {
                "type": "function",
                "name": t["name"],
                "description": t.get("description") or "",
                "parameters": _schema(t.get("input_schema")),
                "strict": False,
            }
            for t in tools
        ]
    if fmt == "anthropic":
        return [
            {
                "name": t["name"],
                "description": t.get("description") or "",
                "input_schema": _schema(t.get("input_schema")),
            }
            for t in tools
        ]
    declarations = [
        {
            "name": _gemini_name(t["name"]),
            "description": t.get("description") or "",
            "parametersJsonSchema": _schema(t.get("input_schema")),
        }
        for t in tools
    ]
    return [{"functionDeclarations": declarations}] if declarations else []


def tool_name(name: str, fmt: Format) -> str:
    """The name to call (``session.call_tool(name, ...)``) for the name the model used in ``fmt``."""
    _check(fmt)
    if fmt == "gemini" and name.startswith(_GEMINI_MARK):
        return name[len(_GEMINI_MARK) :]
    return name


def _text(result: ToolResult, *, images: bool) -> str:
    """The result as text; with ``images=False`` an image is a note (the API takes none there)."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, ImageContent) and images:
            continue
        if isinstance(block, TextContent):
            parts.append(block.text)
        else:
            parts.append(ToolResult(content=(block,)).text)
    if not parts and result.structured is not None:
        parts.append(json.dumps(result.structured, ensure_ascii=False))
    return "\n".join(parts)


def _images(result: ToolResult) -> list[ImageContent]:
    return [b for b in result.content if isinstance(b, ImageContent)]


def _blocks(result: ToolResult) -> list[TextContent | ImageContent]:
    """Text and images in order, every other block as its text."""
    out: list[TextContent | ImageContent] = [
        b if isinstance(b, (TextContent, ImageContent)) else TextContent(ToolResult(content=(b,)).text)
        for b in result.content
    ]
    if not out and result.structured is not None:
        out.append(TextContent(json.dumps(result.structured, ensure_ascii=False)))
    return out


def result_message(result: ToolResult, fmt: Format, call_id: str, *, name: str = "") -> dict[str, Any]:
    """The message (for the Responses API: the input item) that gives the model ``result``
    of its call ``call_id``. Text and images; audio and resources as their text; an error
    result is marked as one where the API has the field (Anthropic's ``is_error``, Gemini's
    ``error``) and says ``error:`` first where it has none. Chat Completions' tool messages
    take text only, so an image there is a note saying so. Gemini matches a response to its
    call by ``name`` (the name the model used) as well as ``call_id``."""
    _check(fmt)
    if fmt == "openai-chat":
        text = _text(result, images=False)
        return {"role": "tool", "tool_call_id": call_id, "content": _marked(text, result.is_error)}
    if fmt == "openai-responses":
        images = _images(result)
        text = _marked(_text(result, images=bool(images)), result.is_error)
        if not images:
            return {"type": "function_call_output", "call_id": call_id, "output": text}
        output: list[dict[str, Any]] = [{"type": "input_text", "text": text}] if text else []
        output += [{"type": "input_image", "image_url": f"data:{img.mime_type};base64,{img.data}"} for img in images]
        return {"type": "function_call_output", "call_id": call_id, "output": output}
    if fmt == "anthropic":
        content = [
            {"type": "text", "text": b.text}
            if isinstance(b, TextContent)
            else {"type": "image", "source": {"type": "base64", "media_type": b.mime_type, "data": b.data}}
            for b in _blocks(result)
        ]
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
        if result.is_error:
            block["is_error"] = True
        return {"role": "user", "content": [block]}
    if not name:
        raise ValueError("Gemini matches a function response by name: pass name= (the name the model used)")
    images = _images(result)
    text = _text(result, images=bool(images))
    response: dict[str, Any] = {"error": text} if result.is_error else {"output": text}
    if result.structured is not None and not result.is_error:
        response["structured"] = result.structured
    parts: list[dict[str, Any]] = [{"functionResponse": {"id": call_id, "name": name, "response": response}}]
    parts += [{"inlineData": {"mimeType": img.mime_type, "data": img.data}} for img in images]
    return {"role": "user", "parts": parts}


def _marked(text: str, is_error: bool) -> str:
    return f"error: {text}" if is_error else text
