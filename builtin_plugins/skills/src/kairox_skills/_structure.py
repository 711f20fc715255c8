"""Structuring parsed frontmatter into a SkillFrontmatter, leniently, and back.

Leniency follows what real skills need: an over-long description, a name
that does not match its folder, odd field types load with a
:class:`~kairox.ext.SkillWarning`; a missing or unusable description is a
:class:`~kairox.ext.SkillError` naming the file, line and field.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from collections.abc import Callable
from typing import Any

from kairox.ext import ARGUMENT_TYPES, SkillArgument, SkillError, SkillFrontmatter, SkillScope, SkillWarning

__all__ = [
    "COMPATIBILITY_LIMIT",
    "DESCRIPTION_LIMIT",
    "KNOWN_KEYS",
    "frontmatter_from_mapping",
    "frontmatter_to_mapping",
    "quick_from_mapping",
]

DESCRIPTION_LIMIT = 1024
COMPATIBILITY_LIMIT = 500
KNOWN_KEYS = (
    "name",
    "description",
    "scope",
    "keywords",
    "tools",
    "model",
    "arguments",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
    "disable-model-invocation",
)
_KNOWN = frozenset(KNOWN_KEYS)
ARGUMENT_KEYS = ("type", "description", "required", "default", "choices")
_ARGUMENT_KEYS = frozenset((*ARGUMENT_KEYS, "enum"))
_PROBES = {kind: SkillArgument(name="probe", type=kind) for kind in ARGUMENT_TYPES}
_SCOPES = {s.value: s for s in (SkillScope.USER, SkillScope.WORKSPACE, SkillScope.SESSION)}

_AGENT_CHARS = re.compile(r"[a-z0-9-]+")
_ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_BAD_NAME_CHARS = re.compile(r"[:/\\\x00-\x1f\x7f]")
_NAME_ITEM = re.compile(r"[^\s,()]+(?:\([^)]*\))?|\([^)]*\)")


def _plain_data(value: Any) -> Any:
    """A JSON-compatible copy (dates as ISO strings, sets as lists, bytes as base64)."""
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _plain_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_data(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain_data(v) for v in value), key=repr)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."


def _top(field: str) -> str:
    return re.split(r"[.\[]", field, maxsplit=1)[0]


def _split_names(value: str) -> list[str]:
    """``"Bash(git log:*) Read, Write"`` -> ``["Bash(git log:*)", "Read", "Write"]``."""
    return _NAME_ITEM.findall(value)


class _Builder:
    def __init__(self, file: str | None, line_of: Callable[[str], int | None]) -> None:
        self.file = file
        self.line_of = line_of
        self.warnings: list[SkillWarning] = []

    def warn(self, field: str, message: str) -> None:
        self.warnings.append(SkillWarning(message, file=self.file, line=self.line_of(_top(field)), field=field))

    def error(self, field: str, message: str) -> SkillError:
        return SkillError(message, file=self.file, line=self.line_of(_top(field)) or 1, field=field)

    def text(self, field: str, value: Any) -> str | None:
        if value is None or type(value) is str:
            return value
        if isinstance(value, str):
            return str(value)
        if isinstance(value, (bool, int, float, dt.date)):
            self.warn(field, f"expected a string, got {_describe(value)}; read as text")
            return str(_plain_data(value))
        self.warn(field, f"expected a string, got {_describe(value)}; ignored")
        return None

    def flag(self, field: str, value: Any) -> bool:
        """A boolean field (``true`` / ``false``, or those words as a string); anything else warns."""
        if value is None or isinstance(value, bool):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        self.warn(field, f"expected true or false, got {_describe(value)}; read as false")
        return False

    def strings(self, field: str, value: Any, *, names: bool) -> tuple[str, ...]:
        if value is None:
            return ()
        if type(value) is list:
            for v in value:  # the common case: clean, distinct strings
                if type(v) is not str or not v or v.strip() != v:
                    break
            else:
                return tuple(value) if len(set(value)) == len(value) else tuple(dict.fromkeys(value))
        if isinstance(value, str):
            items = _split_names(value) if names else value.split(",")
        elif isinstance(value, list):
            items = []
            for i, item in enumerate(value):
                if isinstance(item, (dict, list)) or item is None:
                    self.warn(f"{field}[{i}]", f"expected a string, got {_describe(item)}; ignored")
                else:
                    items.append(item if isinstance(item, str) else str(_plain_data(item)))
        else:
            self.warn(field, f"expected a list of strings, got {_describe(value)}; ignored")
            return ()
        return tuple(dict.fromkeys(s.strip() for s in items if s.strip()))

    def argument(self, name: str, spec: Any) -> SkillArgument | None:
        field = f"arguments.{name}"
        if not _ARG_NAME.fullmatch(name):
            self.warn(field, "an argument name is letters, digits, '_' and '-' (usable as {{ name }}); ignored")
            return None
        if spec is None:
            spec = {}
        elif isinstance(spec, str):
            spec = {"description": spec}
        elif not isinstance(spec, dict):
            self.warn(field, f"expected a mapping or a description, got {_describe(spec)}; read as a string argument")
            spec = {}
        for key in spec.keys() - _ARGUMENT_KEYS:
            self.warn(f"{field}.{key}", f"unknown key; valid keys: {', '.join(ARGUMENT_KEYS)}")
        kind = spec.get("type", "string")
        if kind not in ARGUMENT_TYPES:
            self.warn(f"{field}.type", f"unknown type {_describe(kind)}; expected one of {', '.join(ARGUMENT_TYPES)}")
            kind = "string"
        required = spec.get("required", False)
        if not isinstance(required, bool):
            self.warn(f"{field}.required", f"expected true or false, got {_describe(required)}; read as false")
            required = False
        probe = _PROBES[kind]
        choices: list[Any] = []
        raw_choices = spec.get("choices", spec.get("enum"))
        if raw_choices is not None and not isinstance(raw_choices, list):
            self.warn(f"{field}.choices", f"expected a list, got {_describe(raw_choices)}; ignored")
        for i, choice in enumerate(raw_choices if isinstance(raw_choices, list) else []):
            try:
                choices.append(probe.coerce(choice))
            except SkillError:
                self.warn(f"{field}.choices[{i}]", f"{_describe(choice)} is not {kind}; ignored")
        default = spec.get("default")
        if default is not None and not (kind == "string" and type(default) is str and not choices):
            try:
                default = _coerce_default(probe, default, tuple(choices))
            except SkillError:
                self.warn(f"{field}.default", f"{_describe(default)} is not a valid {kind}; ignored")
                default = None
        return SkillArgument(
            name=name,
            type=kind,
            description=self.text(f"{field}.description", spec.get("description")) or "",
            required=required,
            default=default,
            choices=tuple(dict.fromkeys(choices)) if choices else (),
        )

    def arguments(self, value: Any) -> tuple[SkillArgument, ...]:
        if value is None:
            return ()
        specs: list[tuple[str, Any]] = []
        if isinstance(value, dict):
            specs = [(str(k), v) for k, v in value.items()]
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict) and isinstance(item.get("name"), str):
                    specs.append((item["name"], {k: v for k, v in item.items() if k != "name"}))
                elif isinstance(item, str):
                    specs.append((item, None))
                else:
                    self.warn(f"arguments[{i}]", "expected a mapping with a name; ignored")
        else:
            self.warn("arguments", f"expected a mapping of argument names, got {_describe(value)}; ignored")
        out: dict[str, SkillArgument] = {}
        for name, spec in specs:
            arg = self.argument(name, spec)
            if arg is not None:
                out[arg.name] = arg
        return tuple(out.values())


def _coerce_default(arg: SkillArgument, value: Any, choices: tuple[Any, ...]) -> Any:
    """Coerce a default: the type must match and, with choices, be one of them."""
    out = arg.coerce(value)
    if choices and out not in choices:
        raise SkillError("not one of the choices")
    return out


_QUICK_KEYS = frozenset({"name", "description", "scope", "keywords", "tools", "model", "license", "metadata"})
_PLAIN_SCALARS = (str, int, bool, type(None))


def _clean_strings(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return ()
    if type(value) is not list:
        return None
    for v in value:
        if type(v) is not str or not v or v.strip() != v:
            return None
    return tuple(value) if len(set(value)) == len(value) else None


def quick_from_mapping(data: Any, folder: str | None) -> SkillFrontmatter | None:
    """The common case, with nothing to warn about, built directly (``None``: take the full path)."""
    if type(data) is not dict or not data.keys() <= _QUICK_KEYS:
        return None
    name = data.get("name")
    description = data.get("description")
    if type(name) is not str or type(description) is not str:
        return None
    if not name or name.strip() != name or len(name) > 64 or not _AGENT_CHARS.fullmatch(name):
        return None
    if "--" in name or name[0] == "-" or name[-1] == "-" or (folder is not None and name != folder):
        return None
    description = description.strip()
    if not description or len(description) > DESCRIPTION_LIMIT:
        return None
    keywords = _clean_strings(data.get("keywords"))
    tools = _clean_strings(data.get("tools"))
    model = data.get("model")
    license_ = data.get("license")
    scope = data.get("scope")
    if keywords is None or tools is None or (model is not None and type(model) is not str):
        return None
    if (license_ is not None and type(license_) is not str) or (scope is not None and scope not in _SCOPES):
        return None
    metadata = data.get("metadata")
    if metadata is not None:
        if type(metadata) is not dict:
            return None
        for key, value in metadata.items():
            if type(key) is not str or type(value) not in _PLAIN_SCALARS:
                return None
    return SkillFrontmatter(
        name,
        description,
        _SCOPES[scope] if scope is not None else None,
        keywords,
        tools,
        model,
        (),
        license_,
        None,
        metadata or {},
    )


def frontmatter_from_mapping(
    data: Any,
    *,
    file: str | None = None,
    folder: str | None = None,
    fallback_name: str | None = None,
    line_of: Callable[[str], int | None] | None = None,
    quick: bool = True,
) -> tuple[SkillFrontmatter, list[SkillWarning]]:
    """Structure parsed frontmatter leniently.

    ``folder`` is the folder name of an Agent Skills ``SKILL.md`` (the name
    should match it); ``fallback_name`` is used when ``name`` is missing.
    Raises :class:`SkillError` when the description is missing or unusable.
    Plain frontmatter takes a fast path first (:func:`quick_from_mapping`); the result is
    the same either way, and ``quick=False`` skips it (the tests compare the two).
    """
    fast = quick_from_mapping(data, folder) if quick else None
    if fast is not None:
        return fast, []
    b = _Builder(file, line_of or (lambda _key: None))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SkillError(f"the frontmatter must be a mapping of fields, got {_describe(data)}", file=file, line=2)
    raw_desc = data.get("description")
    if raw_desc is None or (isinstance(raw_desc, str) and not raw_desc.strip()):
        what = "is empty" if isinstance(raw_desc, str) or "description" in data else "is missing"
        raise b.error("description", f"the required field {what} (one line saying when to use the skill)")
    if isinstance(raw_desc, (dict, list)):
        raise b.error("description", f"expected a string, got {_describe(raw_desc)}")
    description = (b.text("description", raw_desc) or "").strip()
    if len(description) > DESCRIPTION_LIMIT:
        b.warn("description", f"is {len(description)} characters; the Agent Skills limit is {DESCRIPTION_LIMIT}")

    name = data.get("name")
    if isinstance(name, (dict, list)):
        b.warn("name", f"expected a string, got {_describe(name)}")
        name = None
    elif name is not None:
        name = (b.text("name", name) or "").strip()
    if not name:
        if not fallback_name:
            raise b.error("name", "the required field is missing")
        b.warn("name", f"missing; using {fallback_name!r}")
        name = fallback_name
    if _BAD_NAME_CHARS.search(name):
        why = f"{name!r} must not contain ':', '/', '\\' or control characters (':' is for plugins)"
        if not fallback_name or _BAD_NAME_CHARS.search(fallback_name):
            raise b.error("name", why)
        # Claude Code names a skill after its folder and a command after its file
        # (``name: vendor:deploy`` in commands/deploy.md is /deploy): so does kairox
        b.warn("name", f"{why}; using {fallback_name!r}, the name its {'folder' if folder else 'file'} gives")
        name = fallback_name
    if len(name) > 64 or not _AGENT_CHARS.fullmatch(name) or "--" in name or name[0] == "-" or name[-1] == "-":
        b.warn("name", f"{name!r} should be 1-64 lowercase letters, digits and single hyphens")
    if folder is not None and name != folder:
        b.warn("name", f"{name!r} does not match its folder {folder!r}")

    scope: SkillScope | None = None
    raw_scope = data.get("scope")
    if raw_scope is not None:
        scope = _SCOPES.get(raw_scope) if type(raw_scope) is str else None
        if scope is None:
            b.warn("scope", f"{_describe(raw_scope)} is not user, workspace or session; ignored")

    compatibility = b.text("compatibility", data.get("compatibility"))
    if compatibility is not None and len(compatibility) > COMPATIBILITY_LIMIT:
        b.warn("compatibility", f"is {len(compatibility)} characters; the Agent Skills limit is {COMPATIBILITY_LIMIT}")
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        b.warn("metadata", f"expected a mapping, got {_describe(metadata)}; ignored")
        metadata = None
    fm = SkillFrontmatter(
        disable_model_invocation=b.flag("disable-model-invocation", data.get("disable-model-invocation")),
        name=name,
        description=description,
        scope=scope,
        keywords=b.strings("keywords", data.get("keywords"), names=False),
        tools=b.strings("tools", data.get("tools"), names=True),
        model=b.text("model", data.get("model")),
        arguments=b.arguments(data.get("arguments")),
        license=b.text("license", data.get("license")),
        compatibility=compatibility,
        metadata=_plain_data(metadata) if metadata else {},
        allowed_tools=b.strings("allowed-tools", data.get("allowed-tools"), names=True),
        extra={(k if type(k) is str else str(k)): _plain_data(v) for k, v in data.items() if k not in _KNOWN},
    )
    return fm, b.warnings


def frontmatter_to_mapping(fm: SkillFrontmatter) -> dict[str, Any]:
    """The canonical mapping of ``fm`` (what :func:`dump_skill` writes and the cache stores)."""
    out: dict[str, Any] = {"name": fm.name, "description": fm.description}
    if fm.scope is not None:
        out["scope"] = fm.scope.value
    if fm.keywords:
        out["keywords"] = list(fm.keywords)
    if fm.tools:
        out["tools"] = list(fm.tools)
    if fm.model is not None:
        out["model"] = fm.model
    if fm.arguments:
        out["arguments"] = {a.name: _argument_mapping(a) for a in fm.arguments}
    if fm.license is not None:
        out["license"] = fm.license
    if fm.compatibility is not None:
        out["compatibility"] = fm.compatibility
    if fm.metadata:
        out["metadata"] = dict(fm.metadata)
    if fm.allowed_tools:
        out["allowed-tools"] = list(fm.allowed_tools)
    if fm.disable_model_invocation:
        out["disable-model-invocation"] = True
    out.update(fm.extra)
    return out


def _argument_mapping(arg: SkillArgument) -> dict[str, Any]:
    out: dict[str, Any] = {"type": arg.type}
    if arg.description:
        out["description"] = arg.description
    if arg.required:
        out["required"] = True
    if arg.default is not None:
        out["default"] = arg.default
    if arg.choices:
        out["choices"] = list(arg.choices)
    return out
