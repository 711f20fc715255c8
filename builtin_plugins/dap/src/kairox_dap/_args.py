"""Checking a ``dap.*`` tool's arguments (light: the provider imports it with the plugin;
the tools, the client and the session load with the first adapter)."""

from __future__ import annotations

from typing import Any

from kairox_peer import ToolInputError

__all__ = ["bool_arg", "int_arg", "number_arg", "str_arg"]


def str_arg(args: dict[str, Any], name: str, *, required: bool = False) -> str | None:
    value = args.get(name)
    if value is None:
        if required:
            raise ToolInputError(f"`{name}` is required")
        return None
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError(f"`{name}` must be a non-empty string")
    return value


def int_arg(args: dict[str, Any], name: str, default: int | None, minimum: int = 0) -> int | None:
    value = args.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ToolInputError(f"`{name}` must be an integer >= {minimum}, got {value!r}")
    return value


def number_arg(args: dict[str, Any], name: str, default: float) -> float:
    value = args.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ToolInputError(f"`{name}` must be a positive number, got {value!r}")
    return float(value)


def bool_arg(args: dict[str, Any], name: str, default: bool) -> bool:
    value = args.get(name, default)
    if not isinstance(value, bool):
        raise ToolInputError(f"`{name}` must be true or false")
    return value
