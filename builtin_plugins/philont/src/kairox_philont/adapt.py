"""Between Philont's plain-dict world and kairox's: tool specs, results, hook payloads."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kairox import (
    AudioContent,
    Block,
    Capability,
    Content,
    Domain,
    ImageContent,
    ResourceContent,
    ResourceLink,
    TextContent,
    Tool,
    ToolContext,
    ToolResult,
    ToolSpec,
)
from kairox.ext import DEFAULT_PATH_ARGUMENTS
from kairox_manifests import Activation, ActivationContext

from .context import HOOK_EVENTS, schema_of

__all__ = [
    "PluginTool",
    "absolute_paths",
    "bounded_stack",
    "activation_of",
    "hook_answer",
    "hook_payload",
    "result_from",
    "result_to_wire",
    "content_block",
    "tool_spec",
]


def tool_spec(plugin_id: str, described: dict[str, Any], defaults: Mapping[str, Any] | None = None) -> ToolSpec:
    """``<plugin id>.<name>``; a tool's own domain/capability, else the plugin's (``defaults``:
    plugin.json ``domain``/``capability``), else kairox's safe default (system/execute), which
    the spec's ``undeclared`` names (the policy's reasons say that it was not declared)."""
    kwargs: dict[str, Any] = {}
    for field, kind in (("domain", Domain), ("capability", Capability)):
        value = described.get(field) or (defaults or {}).get(field)
        if value:
            kwargs[field] = kind(value)
    return ToolSpec(
        id=f"{plugin_id}.{described['name']}",
        description=str(described.get("description") or ""),
        input_schema=schema_of(described.get("parameters")),
        provider=f"plugin:{plugin_id}",
        undeclared=tuple(field for field in ("domain", "capability") if field not in kwargs),
        **kwargs,
    )


class PluginTool:
    """What a Philont plugin's tools share (in this process or in a host): the spec, and the
    call's arguments as the policy checked them (:func:`absolute_paths`)."""

    def __init__(self, spec: ToolSpec) -> None:
        self._spec = spec

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @staticmethod
    def checked_arguments(arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        workspace = context.runtime.workspace if context.runtime is not None else None
        return absolute_paths(dict(arguments), workspace)


def activation_of(
    context: ActivationContext,
    plugin_id: str,
    tools: Iterable[tuple[dict[str, Any], Callable[[ToolSpec], Tool]]],
    hooks: Iterable[tuple[str, Callable[[str], Callable[..., Any]]]],
    **fields: Any,
) -> Activation:
    """What a plugin's ``register(ctx)`` registered, as an :class:`Activation`: each tool
    (``(described, make the tool for its spec)``) and hook (``(Philont event, make the hook
    for the kairox event)``) the settings leave enabled, keyed ``tool/<name>`` and
    ``hook/<event>`` (``hook/<event>-2`` for an event's second hook); the others are
    ``skipped``. ``fields`` are the activation's other fields (``close``, ``status``)."""
    activation = Activation(**fields)
    for described, make_tool in tools:
        key = f"tool/{described['name']}"
        if not context.is_enabled(key):
            activation.skipped.append(key)
            continue
        spec = tool_spec(plugin_id, described, context.manifest.metadata)
        activation.tools.append(make_tool(spec))
        activation.tool_keys[spec.id] = key
    counts: dict[str, int] = {}
    for philont_event, make_hook in hooks:
        counts[philont_event] = counts.get(philont_event, 0) + 1
        n = counts[philont_event]
        key = f"hook/{philont_event}" if n == 1 else f"hook/{philont_event}-{n}"
        if not context.is_enabled(key):
            activation.skipped.append(key)
            continue
        event = HOOK_EVENTS[philont_event]
        activation.hooks.append((event, make_hook(event), key))
    return activation


def absolute_paths(arguments: dict[str, Any], workspace: Path | None) -> dict[str, Any]:
    """``arguments`` with every relative path argument (the names the policy checks:
    ``path``, ``file``, ``target``, ...) made absolute under ``workspace``.

    A Philont handler gets the arguments alone and runs in a process whose working
    directory is not the workspace; the policy decided on ``<workspace>/<path>``, so
    that is the path the handler must be given."""
    if workspace is None:
        return arguments

    def fix(value: Any, depth: int) -> Any:
        if depth > 32:
            return value
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if isinstance(key, str) and key.lower() in DEFAULT_PATH_ARGUMENTS:
                    if isinstance(item, str):
                        out[key] = _under(item, workspace)
                        continue
                    if isinstance(item, list) and all(isinstance(v, str) for v in item):
                        out[key] = [_under(v, workspace) for v in item]
                        continue
                out[key] = fix(item, depth + 1)
            return out
        if isinstance(value, list):
            return [fix(item, depth + 1) for item in value]
        return value

    fixed: dict[str, Any] = fix(arguments, 0)
    return fixed


def _under(value: str, workspace: Path) -> str:
    if not value or value.startswith(("~", "file:")) or os.path.isabs(value):
        return value
    return str(workspace / value)


def result_to_wire(value: Any) -> dict[str, Any]:
    """A handler's return value as JSON (what crosses the worker pipe)."""
    if isinstance(value, ToolResult):
        return {"text": value.text, "structured": value.structured, "is_error": value.is_error}
    if value is None:
        return {}
    if isinstance(value, str):
        return {"text": value}
    if isinstance(value, dict) and isinstance(value.get("content"), list):  # MCP-style
        wire: dict[str, Any] = {"content": value["content"], "is_error": bool(value.get("isError"))}
        if isinstance(value.get("structuredContent"), dict):
            wire["structured"] = value["structuredContent"]
        return wire
    try:
        return {"json": json.loads(json.dumps(value, default=str))}
    except (TypeError, ValueError):
        return {"text": str(value)}


def result_from(wire: dict[str, Any]) -> ToolResult:
    """A result as it crossed the pipe (or came from a direct handler) as a :class:`ToolResult`:
    ``error`` (+ ``stack``, the plugin's, bounded), ``json``, MCP-style ``content`` blocks
    (text, image, audio, resource, resource_link) or ``text``."""
    if "error" in wire:
        stack = bounded_stack(wire.get("stack"))
        error = str(wire["error"])
        text = stack if stack.startswith(error) else f"{error}\n{stack}" if stack else error
        return ToolResult.from_text(text, is_error=True)
    if "json" in wire:
        value = wire["json"]
        as_object = value if isinstance(value, dict) else {"result": value}
        return ToolResult(content=(TextContent(json.dumps(value, ensure_ascii=False)),), structured=as_object)
    raw = wire.get("structured")
    structured = raw if isinstance(raw, dict) else None
    blocks = wire.get("content")
    if isinstance(blocks, list):
        content = tuple(block for block in (content_block(b) for b in blocks) if block is not None)
    else:
        plain = wire.get("text")
        content = (TextContent(plain),) if isinstance(plain, str) else ()
    return ToolResult(content=content, structured=structured, is_error=bool(wire.get("is_error")))


def content_block(block: Any) -> Content | None:
    """One MCP-style content block (``{"type": "image", "data", "mimeType"}``, ...); an unknown
    or malformed one becomes its JSON text, never an error."""
    if isinstance(block, str):
        return TextContent(block)
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    mime = block.get("mimeType") or block.get("mime_type")
    if kind == "text" and isinstance(block.get("text"), str):
        return TextContent(block["text"])
    if kind in ("image", "audio") and isinstance(block.get("data"), str) and isinstance(mime, str):
        return (ImageContent if kind == "image" else AudioContent)(block["data"], mime)
    if kind == "resource" and isinstance(block.get("resource"), dict) and isinstance(block["resource"].get("uri"), str):
        res = block["resource"]
        text, blob = res.get("text"), res.get("blob")
        return ResourceContent(
            res["uri"],
            res.get("mimeType") if isinstance(res.get("mimeType"), str) else None,
            text if isinstance(text, str) else None,
            blob if isinstance(blob, str) else None,
        )
    if kind == "resource_link" and isinstance(block.get("uri"), str):
        return ResourceLink(block["uri"], str(block.get("name") or ""), mime if isinstance(mime, str) else None)
    return TextContent(json.dumps(block, ensure_ascii=False, default=str))


def hook_payload(event: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The JSON-able dict a Philont hook receives for a kairox lifecycle call."""
    call = kwargs.get("call")
    session = kwargs.get("session") or (call.session if call is not None else None)
    payload: dict[str, Any] = {"event": event, "session_id": session.id if session is not None else None}
    if call is not None:
        payload["tool"] = call.tool.id
        payload["arguments"] = json.loads(json.dumps(call.arguments, default=str))
    result = kwargs.get("result")
    if result is not None:
        payload["result"] = {"text": result.text, "is_error": result.is_error, "structured": result.structured}
    if "reason" in kwargs:
        payload["reason"] = kwargs["reason"]
    return payload


def hook_answer(event: str, value: Any) -> Any:
    """What a Philont hook returned, as kairox's hook return value.

    ``pre_tool_call``: ``{"block": true, "reason": ...}`` (or ``{"decision": "block"}``)
    refuses the call; ``{"arguments": {...}}`` rewrites it. Anything else is ignored.
    """
    if event != "pre_tool_call" or not isinstance(value, dict):
        return None
    if value.get("block") is True or value.get("decision") in ("block", "deny"):
        reason = value.get("reason")
        return Block(reason if isinstance(reason, str) and reason else "blocked by a Philont plugin hook")
    arguments = value.get("arguments")
    if isinstance(arguments, dict):
        return dict(arguments)
    return None


def bounded_stack(stack: Any, max_lines: int = 30, max_chars: int = 4000) -> str:
    """A plugin's stack (a JavaScript ``err.stack`` or a Python traceback), cut to size."""
    if not isinstance(stack, str) or not stack.strip():
        return ""
    lines = stack.strip().splitlines()
    if len(lines) > max_lines:
        lines = [*lines[: max_lines - 1], f"[... {len(lines) - max_lines + 1} more lines]"]
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[: max_chars - 6] + " [...]"
