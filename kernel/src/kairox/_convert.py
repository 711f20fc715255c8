"""The cattrs converter for outside input, with errors that name the field path.

Stricter than cattrs' defaults: a string is never made from a number, a list
never from a string, a table must be a table. Every failure becomes one or
more :class:`~kairox.errors.ConfigError` carrying the dotted path of the bad
value (``mcp_servers.git.args[1]``) and what was expected.

cattrs is imported with the first value structured: a runtime whose config sets no
section (``kairox plugins`` in a bare workspace) builds every section's default
without it.
"""

from __future__ import annotations

import difflib
import enum
import functools
import typing
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import attrs

from ._secrets import SECRET_TABLES, is_secret
from .errors import ConfigError

if TYPE_CHECKING:
    import cattrs
    from cattrs.errors import ClassValidationError

__all__ = ["ValidatorRefused", "ValueMismatch", "describe_value", "errors_from", "make_converter", "structure"]

T = TypeVar("T")


class ValueMismatch(TypeError):
    """A value of the wrong type or out of range; ``str()`` is the message."""

    def __init__(self, message: str, expected: str = "") -> None:
        super().__init__(message)
        self.expected = expected


def describe_value(value: Any, limit: int = 40) -> str:
    """A short, safe rendering of a bad value for an error message."""
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _mismatch(expected: str, value: Any) -> ValueMismatch:
    return ValueMismatch(f"expected {expected}, got {describe_value(value)}", expected)


def _structure_str(value: Any, _t: Any) -> str:
    if not isinstance(value, str):
        raise _mismatch("a string", value)
    return value


def _structure_int(value: Any, _t: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _mismatch("an integer", value)
    return value


def _structure_float(value: Any, _t: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _mismatch("a number", value)
    return float(value)


def _structure_bool(value: Any, _t: Any) -> bool:
    if not isinstance(value, bool):
        raise _mismatch("a boolean (true or false)", value)
    return value


def _structure_enum(value: Any, cl: Any) -> Any:
    try:
        return cl(value)
    except (ValueError, TypeError):
        choices = ", ".join(repr(m.value) for m in cl)
        raise _mismatch(f"one of {choices}", value) from None


def _enum_aware(hook: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    # str- and int-based enums reach the str/int hooks through singledispatch
    def structure(value: Any, t: Any) -> Any:
        if isinstance(t, type) and issubclass(t, enum.Enum):
            return _structure_enum(value, t)
        return hook(value, t)

    return structure


def _is_literal(t: Any) -> bool:
    origin: Any = typing.get_origin(t)
    return origin is Literal


def make_converter() -> cattrs.Converter:
    import cattrs
    from cattrs.cols import is_mapping, is_sequence, list_structure_factory, mapping_structure_factory
    from cattrs.errors import ClassValidationError
    from cattrs.gen import make_dict_structure_fn

    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for prim, hook in (
        (str, _structure_str),
        (int, _structure_int),
        (float, _structure_float),
        (bool, _structure_bool),
    ):
        conv.register_structure_hook(prim, _enum_aware(hook))
    conv.register_structure_hook(enum.Enum, _structure_enum)

    def literal_factory(t: Any) -> Callable[[Any, Any], Any]:
        choices = typing.get_args(t)
        words = ", ".join(repr(c) for c in choices)

        def hook(value: Any, _t: Any) -> Any:
            if value not in choices or isinstance(value, bool) != any(isinstance(c, bool) for c in choices):
                raise _mismatch(f"one of {words}", value)
            return value

        return hook

    conv.register_structure_hook_factory(_is_literal, literal_factory)

    def attrs_factory(cl: type[Any]) -> Callable[[Any, Any], Any]:
        base = make_dict_structure_fn(cl, conv, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True)

        def hook(value: Any, t: Any) -> Any:
            if not isinstance(value, dict):
                raise _mismatch("a table", value)
            try:
                return base(value, t)
            except ClassValidationError as exc:
                raise _located(conv, exc, cl, value) from None

        return hook

    conv.register_structure_hook_factory(attrs.has, attrs_factory)

    def seq_factory(t: Any) -> Callable[[Any, Any], Any]:
        base = list_structure_factory(t, conv)
        origin = typing.get_origin(t)

        def hook(value: Any, tt: Any) -> Any:
            if not isinstance(value, (list, tuple)):
                raise _mismatch("a list", value)
            result = base(value, tt)
            return tuple(result) if origin is tuple else result

        return hook

    def is_plain_sequence(t: Any) -> bool:
        if typing.get_origin(t) is tuple:
            args = typing.get_args(t)
            return len(args) == 2 and args[1] is Ellipsis
        return is_sequence(t) and typing.get_origin(t) is not tuple

    conv.register_structure_hook_factory(is_plain_sequence, seq_factory)

    def map_factory(t: Any) -> Callable[[Any, Any], Any]:
        base = mapping_structure_factory(t, conv)

        def hook(value: Any, tt: Any) -> Any:
            if not isinstance(value, dict):
                raise _mismatch("a table", value)
            return base(value, tt)

        return hook

    conv.register_structure_hook_factory(is_mapping, map_factory)
    return conv


class ValidatorRefused(ValueMismatch):
    """An attrs validator refused a field's value: ``str()`` is its message, ``value`` the value."""

    def __init__(self, message: str, value: Any) -> None:
        super().__init__(message)
        self.value = value


def _located(conv: cattrs.Converter, exc: ClassValidationError, cl: type[Any], value: dict[str, Any]) -> Exception:
    """``exc`` with each failure of an attrs validator (raised by ``cl.__init__``, so cattrs
    cannot say which field) tied to its field: each validated field's value is structured
    and its validator run again, and the one that raises the same message is the culprit."""
    from cattrs.errors import AttributeValidationNote, ClassValidationError

    with_notes, without = exc.group_exceptions()
    if not without:
        return exc
    located: list[Exception] = [sub for sub, _ in with_notes]
    left = list(without)
    for field in attrs.fields(cl):
        key = field.alias or field.name
        if field.validator is None or key not in value or not left:
            continue
        try:
            structured = conv.structure(value[key], field.type)
            field.validator(None, field, structured)
        except ConfigError:
            continue  # a validator that names its own field and value already
        except Exception as err:
            same = next((e for e in left if type(e) is type(err) and str(e) == str(err)), None)
            if same is None:
                continue
            left.remove(same)
            refused = ValidatorRefused(str(err), structured)
            note = AttributeValidationNote(f"Structuring class {cl.__qualname__} @ attribute {key}", key, field.type)
            refused.__notes__ = [note]  # type: ignore[attr-defined]
            located.append(refused)
    for sub, note in with_notes:  # keep cattrs' own notes
        sub.__notes__ = [note]  # type: ignore[attr-defined]
    return ClassValidationError(exc.message, [*located, *left], cl)


@functools.cache
def converter() -> cattrs.Converter:
    """The one converter, built (and cattrs imported) on first use."""
    return make_converter()


def _join(path: str, part: str) -> str:
    if part.startswith("["):
        return f"{path}{part}"
    return f"{path}.{part}" if path else part


def _key_part(key: Any) -> str:
    if isinstance(key, int):
        return f"[{key}]"
    if isinstance(key, str) and key.replace("_", "").replace("-", "").isalnum():
        return key
    return f"[{key!r}]"


def _walk(exc: BaseException, path: str, file: str | None) -> Iterator[ConfigError]:
    from cattrs.errors import (
        AttributeValidationNote,
        ClassValidationError,
        ForbiddenExtraKeysError,
        IterableValidationError,
    )

    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        with_notes, without = exc.group_exceptions()
        for sub, note in with_notes:
            # a class's failures carry the attribute's name, an iterable's the index or key
            part = note.name if isinstance(note, AttributeValidationNote) else _key_part(note.index)
            yield from _walk(sub, _join(path, part), file)
        for sub in without:
            yield from _walk(sub, path, file)
    elif isinstance(exc, ForbiddenExtraKeysError):
        fields = [a.name for a in attrs.fields(exc.cl)] if attrs.has(exc.cl) else []
        for key in sorted(exc.extra_fields):
            close = difflib.get_close_matches(key, fields, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; valid keys: {', '.join(fields)}"
            yield ConfigError(f"unknown key{hint}", file=file, path=_join(path, _key_part(key)))
    elif isinstance(exc, KeyError):
        yield ConfigError("required key is missing", file=file, path=path)
    elif isinstance(exc, ConfigError):
        yield ConfigError(exc.message, file=exc.file or file, path=_join(path, exc.path) if exc.path else path)
    elif isinstance(exc, ValidatorRefused):
        shown = "not shown: secret" if _secret_path(path) else f"got {describe_value(exc.value)}"
        yield ConfigError(f"{exc} ({shown})", file=file, path=path)
    elif isinstance(exc, ValueMismatch) and exc.expected and _secret_path(path):
        yield ConfigError(
            f"expected {exc.expected}, got a value of another type (not shown: secret)", file=file, path=path
        )
    else:
        yield ConfigError(str(exc) or type(exc).__name__, file=file, path=path)


def _secret_path(path: str) -> bool:
    parts = [p for p in path.replace("[", ".[").split(".") if p and not p.startswith("[")]
    key = parts[-1] if parts else ""
    parent = parts[-2] if len(parts) > 1 else ""
    return is_secret(key, parent) or parent in SECRET_TABLES


def errors_from(exc: BaseException, *, path: str = "", file: str | None = None) -> list[ConfigError]:
    """Flatten a structuring failure into errors with dotted paths."""
    return list(_walk(exc, path, file))


def structure(value: Any, cl: type[T] | Any, *, path: str = "", file: str | None = None) -> T:
    """Structure ``value`` into ``cl``; raise :class:`ConfigError`: the first problem, with
    every one in its :attr:`~kairox.errors.ConfigError.errors`."""
    try:
        return typing.cast(T, converter().structure(value, cl))
    except Exception as exc:
        errors = errors_from(exc, path=path, file=file)  # never empty: each leaf yields one
        first = errors[0]
        first.errors = errors
        raise first from exc
