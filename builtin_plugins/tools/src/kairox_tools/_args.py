"""Checking a tool call's arguments against the (small) JSON schema its tool declares.

Arguments come from a model: anything can arrive. The subset of JSON Schema
the built-in tools use is checked here (``type``, ``enum``, ``minimum``,
``maximum``, ``required``, ``additionalProperties``, ``items``, ``default``)
and every problem is named, so the model can correct its call.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

__all__ = ["ArgumentError", "check_arguments"]

_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "an array",
}


class ArgumentError(ValueError):
    """The arguments do not fit the tool's input schema; ``str()`` says why."""


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check(schema: Mapping[str, Any], value: Any, where: str) -> Any:
    kind = schema.get("type")
    if kind == "string":
        if not isinstance(value, str):
            raise ArgumentError(f"{where}: expected a string, got {_describe(value)}")
    elif kind == "integer":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentError(f"{where}: expected an integer, got {_describe(value)}")
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ArgumentError(f"{where}: expected a number, got {_describe(value)}")
        if value != value or value in (float("inf"), float("-inf")):
            raise ArgumentError(f"{where}: expected a finite number, got {_describe(value)}")
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise ArgumentError(f"{where}: expected true or false, got {_describe(value)}")
    elif kind == "array":
        if not isinstance(value, list):
            raise ArgumentError(f"{where}: expected an array, got {_describe(value)}")
        items = schema.get("items")
        if items:
            value = [_check(items, v, f"{where}[{i}]") for i, v in enumerate(value)]
    elif kind == "object":
        value = _check_object(schema, value, where)
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(repr(c) for c in schema["enum"])
        raise ArgumentError(f"{where}: expected one of {choices}, got {_describe(value)}")
    if "minimum" in schema and value < schema["minimum"]:
        raise ArgumentError(f"{where}: must be at least {schema['minimum']}, got {_describe(value)}")
    if "maximum" in schema and value > schema["maximum"]:
        raise ArgumentError(f"{where}: must be at most {schema['maximum']}, got {_describe(value)}")
    return value


def _check_object(schema: Mapping[str, Any], value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ArgumentError(f"{where or 'arguments'}: expected an object, got {_describe(value)}")
    properties: Mapping[str, Any] = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    required = set(schema.get("required", ()))
    out: dict[str, Any] = {}
    for key, item in value.items():
        path = f"{where}.{key}" if where else str(key)
        if item is None and key in properties and key not in required:
            continue  # models send null for "not given"
        if key in properties:
            out[key] = _check(properties[key], item, path)
        elif isinstance(extra, Mapping):
            out[key] = _check(extra, item, path)
        elif extra is False:
            close = difflib.get_close_matches(str(key), list(properties), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; expected: {', '.join(properties)}"
            raise ArgumentError(f"unknown argument {path!r}{hint}")
        else:
            out[key] = item
    for key in schema.get("required", ()):
        if key not in out:
            raise ArgumentError(f"missing required argument {(f'{where}.{key}' if where else key)!r}")
    for key, prop in properties.items():
        if key not in out and "default" in prop:
            out[key] = prop["default"]
    return out


def check_arguments(schema: Mapping[str, Any], arguments: Any) -> dict[str, Any]:
    """The arguments with defaults filled in; :class:`ArgumentError` naming the first problem."""
    return _check_object(schema, arguments, "")
