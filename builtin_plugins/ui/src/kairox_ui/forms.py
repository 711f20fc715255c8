"""Request bodies of the dashboard's API: JSON objects from the page, checked field by field.

Every parser takes outside input and either returns typed values or raises
:class:`FormError` naming the field; nothing else escapes (the property tests in
``tests/ui/test_forms.py`` say so).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import attrs

from kairox.files import loads_bounded
from kairox_catalog.install import InstallOptions

__all__ = [
    "MAX_BODY",
    "FormError",
    "InstallRequest",
    "SessionSkillRequest",
    "coerce_arguments",
    "parse_answer",
    "parse_install",
    "parse_json_object",
    "parse_path_override",
    "parse_plugin_config",
    "parse_plugin_toggle",
    "parse_server_action",
    "parse_session_skill",
    "parse_skill_arguments",
    "parse_skill_toggle",
    "parse_tool_call",
    "parse_uninstall",
]

#: bytes a request body may have
MAX_BODY = 1_000_000
SCOPES = ("user", "workspace")
ANSWERS = ("allow_once", "allow_session", "deny")
SERVER_KINDS = ("mcp", "lsp", "dap")


class FormError(ValueError):
    """A request body the API cannot use: ``field`` names the part that is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


def parse_json_object(body: bytes, *, limit: int = MAX_BODY) -> dict[str, Any]:
    """The body as a JSON object."""
    if len(body) > limit:
        raise FormError("", f"the request body is over {limit} bytes")
    if not body.strip():
        return {}
    try:
        data = loads_bounded(body.decode("utf-8"), json.loads)
    except (UnicodeDecodeError, ValueError) as exc:
        raise FormError("", f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise FormError("", f"expected a JSON object, got {type(data).__name__}")
    return data


def _str(data: Mapping[str, Any], field: str, *, default: str | None = None, max_len: int = 4096) -> str:
    value = data.get(field, default)
    if value is None:
        raise FormError(field, "is required")
    if not isinstance(value, str):
        raise FormError(field, f"expected a string, got {type(value).__name__}")
    if len(value) > max_len:
        raise FormError(field, f"is longer than {max_len} characters")
    if "\x00" in value:
        raise FormError(field, "contains a NUL character")
    return value


def _bool(data: Mapping[str, Any], field: str, default: bool | None = None) -> bool:
    value = data.get(field, default)
    if not isinstance(value, bool):
        raise FormError(field, "expected true or false" if value is not None else "is required")
    return value


def _scope(data: Mapping[str, Any], default: str | None = "workspace", *, optional: bool = False) -> str | None:
    value = data.get("scope", default)
    if value is None and optional:
        return None
    if value not in SCOPES:
        raise FormError("scope", f"expected one of {', '.join(SCOPES)}, got {value!r}")
    return str(value)


def _string_map(data: Mapping[str, Any], field: str) -> dict[str, str]:
    value = data.get(field, {})
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FormError(field, f"expected an object of names to strings, got {type(value).__name__}")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(item, str):
            raise FormError(f"{field}.{key}", f"expected a string, got {type(item).__name__}")
        if "\x00" in item or "\x00" in key:
            raise FormError(f"{field}.{key}", "contains a NUL character")
        if not key:
            raise FormError(field, "a name is empty")
        out[key] = item
    return out


def parse_skill_toggle(data: Mapping[str, Any]) -> tuple[str, bool]:
    """``{"scope": "user"|"workspace", "enabled": bool}``."""
    scope = _scope(data)
    assert scope is not None
    return scope, _bool(data, "enabled")


def parse_plugin_toggle(data: Mapping[str, Any]) -> tuple[str, bool, str | None]:
    """``{"scope", "enabled", "contribution"?: "kind/name"}`` (plugins default to the user scope)."""
    scope = _scope(data, "user")
    assert scope is not None
    enabled = _bool(data, "enabled")
    contribution = data.get("contribution")
    if contribution is None or contribution == "":
        return scope, enabled, None
    text = _str(data, "contribution", max_len=512)
    kind, sep, name = text.partition("/")
    if not sep or not kind or not name:
        raise FormError("contribution", f"expected KIND/NAME, got {text!r}")
    return scope, enabled, text


def parse_path_override(data: Mapping[str, Any]) -> tuple[str, str | None]:
    """``{"scope", "path": str | null}``: an absolute directory, or null/"" to remove the override."""
    scope = _scope(data, "user")
    assert scope is not None
    value = data.get("path")
    if value is None or value == "":
        return scope, None
    path = _str(data, "path")
    if not path.startswith("/") and not (len(path) > 2 and path[1] == ":" and path[2] in "\\/"):
        raise FormError("path", f"expected an absolute path, got {path!r}")
    return scope, path


def parse_plugin_config(data: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``{"values": {KEY: string | number | boolean | [string]}, "unset": [KEY]}`` of a plugin's
    ``userConfig`` form (each value is checked against its option when it is stored)."""
    values = data.get("values", {})
    if not isinstance(values, dict):
        raise FormError("values", f"expected an object of option keys to values, got {type(values).__name__}")
    out: dict[str, Any] = {}
    for key, value in values.items():
        field = f"values.{key}"
        if isinstance(value, list):
            if not all(isinstance(v, str) for v in value):
                raise FormError(field, "expected a list of strings")
        elif not isinstance(value, (str, int, float, bool)):
            raise FormError(field, f"expected a string, a number or true/false, got {type(value).__name__}")
        if isinstance(value, str) and ("\x00" in value or len(value) > 65536):
            raise FormError(field, "contains a NUL character or is longer than 65536 characters")
        out[key] = value
    unset = data.get("unset", [])
    if not isinstance(unset, list) or not all(isinstance(k, str) for k in unset):
        raise FormError("unset", "expected a list of option keys")
    return out, list(unset)


@attrs.frozen
class InstallRequest:
    """An install the Marketplace page asks for: the entry ``name`` and how to install it."""

    name: str
    options: InstallOptions = attrs.field(factory=InstallOptions)


def parse_install(data: Mapping[str, Any]) -> InstallRequest:
    """``{"name": "source:name" | "name", "scope", "inputs": {NAME: value}, "force", "prepare", "verify",
    "ignore_requirements"}``."""
    name = _str(data, "name", max_len=512).strip()
    if not name:
        raise FormError("name", "is empty")
    scope = _scope(data)
    assert scope is not None
    options = InstallOptions(
        scope=scope,  # type: ignore[arg-type]  # one of SCOPES
        values=_string_map(data, "inputs"),
        force=_bool(data, "force", False),
        prepare=_bool(data, "prepare", True),
        verify=_bool(data, "verify", True),
        ignore_requirements=_bool(data, "ignore_requirements", False),
        verify_before_writing=True,  # "installed" in the page means it runs: a failed start writes nothing
    )
    return InstallRequest(name=name, options=options)


def parse_uninstall(data: Mapping[str, Any]) -> tuple[str, str | None]:
    """``{"name", "scope"?}`` (no scope: both)."""
    name = _str(data, "name", max_len=512).strip()
    if not name:
        raise FormError("name", "is empty")
    return name, _scope(data, None, optional=True)


def parse_answer(data: Mapping[str, Any]) -> str:
    """``{"answer": "allow_once" | "allow_session" | "deny"}``."""
    value = data.get("answer")
    if value not in ANSWERS:
        raise FormError("answer", f"expected one of {', '.join(ANSWERS)}, got {value!r}")
    return str(value)


#: a session skill's name: letters, digits, ``-``, ``_`` and ``.`` (no ``:``, which names plugin skills)
SKILL_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62}[A-Za-z0-9])?")


@attrs.frozen
class SessionSkillRequest:
    name: str
    description: str
    body: str


def parse_session_skill(data: Mapping[str, Any]) -> SessionSkillRequest:
    """``{"name", "description", "body"?}`` of a skill to add to the dashboard's session."""
    name = _str(data, "name", max_len=64).strip()
    if not SKILL_NAME.fullmatch(name):
        raise FormError("name", f"expected 1-64 letters, digits, '-', '_' or '.' (not at either end), got {name!r}")
    description = _str(data, "description", max_len=1024).strip()
    if not description:
        raise FormError("description", "is empty")
    body = _str(data, "body", default="", max_len=100_000)
    return SessionSkillRequest(name, description, body)


def parse_server_action(data: Mapping[str, Any]) -> str | None:
    """``{"kind": "mcp" | "lsp" | "dap"}`` of a server's restart/stop (optional: the first server
    of that name)."""
    value = data.get("kind")
    if value is None:
        return None
    if value not in SERVER_KINDS:
        raise FormError("kind", f"expected one of {', '.join(SERVER_KINDS)}, got {value!r}")
    return str(value)


def parse_skill_arguments(data: Mapping[str, Any]) -> dict[str, str]:
    """``{"arguments": {NAME: value}}`` of the skill form (strings; the skill checks the types)."""
    return _string_map(data, "arguments")


def parse_tool_call(data: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``{"arguments": {...}}`` (an object) or ``{"form": {NAME: text}}`` coerced by the tool's schema."""
    if "form" in data:
        return coerce_arguments(schema or {}, _string_map(data, "form"))
    value = data.get("arguments", {})
    if not isinstance(value, dict):
        raise FormError("arguments", f"expected a JSON object, got {type(value).__name__}")
    return value


def _type_of(prop: Any) -> str:
    if not isinstance(prop, dict):
        return "string"
    kind = prop.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return kind if isinstance(kind, str) else "string"


def coerce_arguments(schema: Mapping[str, Any], form: Mapping[str, str]) -> dict[str, Any]:
    """Form text -> arguments, by the schema's property types. An empty field is left out;
    ``integer``/``number``/``boolean`` are parsed; ``array``/``object`` fields hold JSON."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, dict):
        props = {}
    out: dict[str, Any] = {}
    for name, text in form.items():
        if text == "":
            continue
        kind = _type_of(props.get(name))
        field = f"form.{name}"
        if kind == "integer":
            try:
                out[name] = int(text.strip())
            except ValueError:
                raise FormError(field, f"expected an integer, got {text[:40]!r}") from None
        elif kind == "number":
            try:
                number = float(text.strip())
            except ValueError:
                raise FormError(field, f"expected a number, got {text[:40]!r}") from None
            if not math.isfinite(number):
                raise FormError(field, "expected a finite number")
            out[name] = int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
        elif kind == "boolean":
            lowered = text.strip().lower()
            if lowered not in ("true", "false", "on", "off", "1", "0"):
                raise FormError(field, f"expected true or false, got {text[:40]!r}")
            out[name] = lowered in ("true", "on", "1")
        elif kind in ("array", "object"):
            try:
                value = loads_bounded(text, json.loads)
            except ValueError:
                raise FormError(field, f"expected JSON ({kind})") from None
            expected = list if kind == "array" else dict
            if not isinstance(value, expected):
                raise FormError(field, f"expected a JSON {kind}, got {type(value).__name__}")
            out[name] = value
        else:
            out[name] = text
    return out
