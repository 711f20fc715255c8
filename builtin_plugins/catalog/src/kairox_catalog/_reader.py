"""Defensive reading of outside JSON: typed getters that name the bad field."""

from __future__ import annotations

import re
from typing import Any

from kairox.ext import describe_value

__all__ = ["EntryProblem", "Obj", "safe_name"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


class EntryProblem(ValueError):
    """One entry of a document cannot be used; ``where`` is the field path."""

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"{where}: {reason}")


def safe_name(value: str) -> str:
    """A name usable as a TOML key, a tool prefix and a directory: ``[A-Za-z0-9_-]``,
    starting with a letter or digit (so it is a valid entry name, see :mod:`kairox_catalog._paths`)."""
    return _UNSAFE.sub("-", value).lstrip("_-").rstrip("-")[:64]


class Obj:
    """A JSON object read field by field; every getter accepts alias keys
    (``registryType`` / ``registry_type``) and raises :class:`EntryProblem`
    naming the field when a value has the wrong type."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise EntryProblem(where, f"expected an object, got {describe_value(data)}")
        self.data: dict[str, Any] = data
        self.where = where

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def _get(self, keys: tuple[str, ...]) -> tuple[str, Any]:
        for key in keys:
            if key in self.data and self.data[key] is not None:
                return key, self.data[key]
        return keys[0], None

    def has(self, *keys: str) -> bool:
        return self._get(keys)[1] is not None

    def text(self, *keys: str, required: bool = False, default: str = "") -> str:
        key, value = self._get(keys)
        if value is None:
            if required:
                raise EntryProblem(self.path(key), "required field is missing")
            return default
        if not isinstance(value, str):
            raise EntryProblem(self.path(key), f"expected a string, got {describe_value(value)}")
        if required and not value.strip():
            raise EntryProblem(self.path(key), "must not be empty")
        return value

    def opt_text(self, *keys: str) -> str | None:
        key, value = self._get(keys)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise EntryProblem(self.path(key), f"expected a string, got {describe_value(value)}")
        return value if isinstance(value, str) else str(value)

    def flag(self, *keys: str, default: bool = False) -> bool:
        key, value = self._get(keys)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise EntryProblem(self.path(key), f"expected true or false, got {describe_value(value)}")
        return value

    def items(self, *keys: str) -> list[Any]:
        key, value = self._get(keys)
        if value is None:
            return []
        if not isinstance(value, list):
            raise EntryProblem(self.path(key), f"expected a list, got {describe_value(value)}")
        return value

    def strings(self, *keys: str) -> tuple[str, ...]:
        key = self._get(keys)[0]
        items = self.items(*keys)
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise EntryProblem(f"{self.path(key)}[{i}]", f"expected a string, got {describe_value(item)}")
        return tuple(items)

    def objects(self, *keys: str) -> list[Obj]:
        key = self._get(keys)[0]
        return [Obj(item, f"{self.path(key)}[{i}]") for i, item in enumerate(self.items(*keys))]

    def obj(self, *keys: str) -> Obj | None:
        key, value = self._get(keys)
        if value is None:
            return None
        return Obj(value, self.path(key))

    def link(self, *keys: str) -> str:
        """A URL given as a string or as ``{"url": ...}`` (``repository`` in server.json)."""
        key, value = self._get(keys)
        if isinstance(value, dict):
            return Obj(value, self.path(key)).text("url")
        return self.text(*keys)
