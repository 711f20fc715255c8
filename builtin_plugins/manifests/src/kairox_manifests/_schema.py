"""Structuring manifest documents: unknown fields warn, wrong types fail with a path."""

from __future__ import annotations

import functools
import json
import typing
from pathlib import Path
from typing import Any, TypeVar

import attrs

from kairox.errors import ConfigError
from kairox.ext import describe_value, structure
from kairox.files import Refused, Root, loads_bounded

from .errors import ManifestError, Problem

__all__ = ["MAX_MANIFEST_BYTES", "expect", "join", "parse_document", "read_json", "strip_unknown"]

T = TypeVar("T")

MAX_MANIFEST_BYTES = 4 * 1024 * 1024
#: keys every JSON document may carry without a warning
IGNORED_KEYS = frozenset({"$schema", "$comment"})


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    part = key if key.replace("_", "").replace("-", "").isalnum() else repr(key)
    if part != key:
        return f"{path}[{part}]"
    return f"{path}.{key}" if path else key


def read_json(file: Path, root: Root | None = None) -> Any:
    """Read a JSON file of a bundle inside the bundle's contained ``root`` (without one, inside
    the file's own folder); a missing, refused (a link leading outside, a device), unreadable,
    oversized or invalid file is a :class:`ManifestError` naming it."""
    reader = root if root is not None else Root(file.parent, label=str(file.parent))
    try:
        text = reader.read_text(file, max_bytes=MAX_MANIFEST_BYTES)
    except Refused as exc:
        raise ManifestError(exc.reason, file=str(file)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"cannot read: {exc}", file=str(file)) from None
    try:
        return loads_bounded(text, json.loads)
    except ValueError as exc:
        raise ManifestError(f"invalid JSON: {exc}", file=str(file)) from None


def _attrs_target(tp: Any) -> tuple[str, Any] | None:
    """How to recurse into a field type: ("one"|"list"|"map", attrs class) or None."""
    if attrs.has(tp):
        return ("one", tp)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union:
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _attrs_target(inner[0])
        return None
    if origin in (list, tuple) and args and attrs.has(args[0]):
        return ("list", args[0])
    if origin is dict and len(args) == 2 and attrs.has(args[1]):
        return ("map", args[1])
    return None


@functools.cache
def _hints(cl: Any) -> dict[str, Any]:
    """Resolved field types of an attrs class (``get_type_hints`` compiles every string annotation)."""
    return typing.get_type_hints(cl)


def strip_unknown(value: Any, cl: Any, *, file: str | None, path: str, problems: list[Problem]) -> Any:
    """A copy of ``value`` without the keys ``cl`` does not know; each dropped key is a warning."""
    if not attrs.has(cl) or not isinstance(value, dict):
        return value
    hints = _hints(cl)
    known = {a.name for a in attrs.fields(cl)}
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str) or key not in known:
            if key not in IGNORED_KEYS:
                problems.append(Problem("unknown field (ignored)", file=file, path=join(path, str(key))))
            continue
        target = _attrs_target(hints.get(key))
        if target is None:
            out[key] = item
        elif target[0] == "one":
            out[key] = strip_unknown(item, target[1], file=file, path=join(path, key), problems=problems)
        elif target[0] == "list" and isinstance(item, list):
            out[key] = [
                strip_unknown(v, target[1], file=file, path=join(join(path, key), i), problems=problems)
                for i, v in enumerate(item)
            ]
        elif target[0] == "map" and isinstance(item, dict):
            out[key] = {
                k: strip_unknown(v, target[1], file=file, path=join(join(path, key), str(k)), problems=problems)
                for k, v in item.items()
            }
        else:
            out[key] = item
    return out


def parse_document(
    data: Any, cl: type[T], *, file: str | None, path: str = "", problems: list[Problem] | None = None
) -> T:
    """Structure ``data`` into the attrs class ``cl``: unknown keys become warnings in
    ``problems``, anything else wrong raises :class:`ManifestError` with the field path."""
    if not isinstance(data, dict):
        raise ManifestError(f"expected a JSON object, got {describe_value(data)}", file=file, path=path)
    sink: list[Problem] = [] if problems is None else problems
    cleaned = strip_unknown(data, cl, file=file, path=path, problems=sink)
    try:
        return structure(cleaned, cl, path=path, file=file)
    except ConfigError as exc:
        raise ManifestError.from_config_error(exc) from None
    except RecursionError:
        raise ManifestError("document is nested too deeply", file=file, path=path) from None


def expect(value: Any, kinds: tuple[type, ...], what: str, *, file: str | None, path: str) -> Any:
    """``value`` if it is one of ``kinds`` (``bool`` never counts as a number), else a :class:`ManifestError`."""
    if isinstance(value, bool) and bool not in kinds:
        raise ManifestError(f"expected {what}, got {describe_value(value)}", file=file, path=path)
    if not isinstance(value, kinds):
        raise ManifestError(f"expected {what}, got {describe_value(value)}", file=file, path=path)
    return value
