"""Tools over a peer (``lsp.*``, ``dap.*``): one tool class and one error mapping.

An operation takes the call's arguments and returns its text (or a whole
:class:`~kairox.ToolResult`). A failure the caller can act on (bad arguments,
the server gone, a timeout, the server's own error) becomes an error result
whose text says what happened; anything else is a bug and propagates (the
runtime reports it as a tool failure).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Union

import attrs

from kairox import Capability, Domain, ToolContext, ToolResult, ToolSpec

from ._errors import ToolInputError

__all__ = ["PeerErrors", "PeerTool", "ToolInputError", "object_schema", "peer_error_text"]


#: the failures a peer tool reports as error results: ``(exception types, text)``, the
#: first match wins; ``{}`` in the text stands for the exception's message
PeerErrors = Sequence[tuple[Union[type[BaseException], tuple[type[BaseException], ...]], str]]

Operation = Callable[[dict[str, Any]], Awaitable[Union[ToolResult, str]]]


def peer_error_text(exc: BaseException, errors: PeerErrors) -> str | None:
    """The error text for ``exc`` (:class:`ToolInputError` first, then ``errors``); ``None``: not one of them."""
    if isinstance(exc, ToolInputError):
        return str(exc)
    for types, text in errors:
        if isinstance(exc, types):
            return text.format(exc)
    return None


def object_schema(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    """A tool's input schema: an object of ``properties`` and no others, ``required`` ones first."""
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


@attrs.frozen
class PeerTool:
    """One tool: ``operation(arguments)``; the failures in ``errors`` (and :class:`ToolInputError`)
    become error results, see :func:`peer_error_text`."""

    spec: ToolSpec
    operation: Operation
    errors: PeerErrors

    @classmethod
    def local(
        cls,
        spec_id: str,
        summary: tuple[str, dict[str, Any], Capability],
        provider: str,
        operation: Operation,
        errors: PeerErrors,
        **annotations: Any,
    ) -> PeerTool:
        """A tool of the local domain whose arguments the policy does not read as paths
        (the peer reads files itself, inside its workspace). ``summary`` is
        (description, input schema, capability); ``annotations`` are MCP-style hints."""
        description, schema, capability = summary
        spec = ToolSpec(
            id=spec_id,
            description=description,
            input_schema=schema,
            domain=Domain.LOCAL,
            capability=capability,
            provider=provider,
            annotations=annotations,
            path_arguments=(),
        )
        return cls(spec, operation, errors)

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        try:
            result = await self.operation(dict(arguments))
        except Exception as exc:
            text = peer_error_text(exc, self.errors)
            if text is None:
                raise
            return ToolResult.from_text(text, is_error=True)
        return result if isinstance(result, ToolResult) else ToolResult.from_text(result)
