"""Tools from plain functions: :class:`ToolSet` (public as ``kairox.declare.ToolSet``).

The input schema comes from the function's signature (:func:`schema_from_signature`), the
descriptions from its docstring (:func:`read_docstring`); the kernel's call pipeline checks
the arguments against that schema before the function runs, so the function gets what its
annotations say. The docstring is read by ``docstring_parser`` (a small, pure-Python library).
"""

from __future__ import annotations

import collections.abc
import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union

import attrs

from ._tools import ToolContext, ToolResult, ToolSpec, as_result
from ._types import Capability, Domain

if TYPE_CHECKING:
    from ._runtime import Runtime
    from ._types import ServerStatus

__all__ = ["ToolSet", "ToolSetProvider", "ToolSetTool", "read_docstring", "schema_from_signature"]

F = TypeVar("F", bound=Callable[..., Any])

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
_LISTS = (list, collections.abc.Sequence)
_DICTS = (dict, collections.abc.Mapping)
_UNIONS: tuple[Any, ...] = (Union, getattr(types, "UnionType", Union))
_SUPPORTED = "str, int, float, bool, list[...], dict[str, ...], Optional, Literal, an Enum or Any"


# -- the docstring ------------------------------------------------------------------------------
def read_docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """``(description, {argument: description})`` from ``fn``'s docstring (Google, NumPy,
    reST or Epydoc style, read by ``docstring_parser``): the text before its sections, and
    the entries of its arguments section."""
    import docstring_parser  # with the first ToolSet tool built (an import of kairox stays cheap)

    parsed = docstring_parser.parse(inspect.getdoc(fn) or "")
    description = "\n\n".join(p for p in (parsed.short_description, parsed.long_description) if p).strip()
    # an argument's description is one line in the schema, however the docstring wraps it
    arguments = {p.arg_name.lstrip("*"): " ".join(p.description.split()) for p in parsed.params if p.description}
    return description, arguments


# -- the schema ---------------------------------------------------------------------------------
def _json_value(value: Any, where: str) -> Any:
    if isinstance(value, enum.Enum):
        value = value.value
    if value is not None and not isinstance(value, (str, int, float, bool)):
        raise TypeError(f"{where}: {value!r} is not a JSON value (str, int, float, bool or None)")
    return value


def _enum(values: list[Any]) -> dict[str, Any]:
    kinds = {_SCALARS[type(v)] for v in values}
    return {"type": kinds.pop(), "enum": values} if len(kinds) == 1 else {"enum": values}


def _schema_of(hint: Any, where: str) -> dict[str, Any]:
    """The JSON schema of the annotation ``hint``; a :class:`TypeError` naming ``where`` for
    an annotation no JSON value matches."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is inspect.Parameter.empty:
        return {}
    if origin is typing.Annotated:
        schema = _schema_of(args[0], where)
        text = next((a for a in args[1:] if isinstance(a, str)), None)
        return {**schema, "description": text} if text else schema
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum([_json_value(member, where) for member in hint])
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if origin is Literal:
        return _enum([_json_value(a, where) for a in args])
    if origin in _UNIONS:
        schemas = [_schema_of(a, where) for a in args]
        if all(list(s) == ["type"] for s in schemas):
            return {"type": [s["type"] for s in schemas]}
        return {"anyOf": schemas}
    if hint in _LISTS or origin in _LISTS:
        return {"type": "array", "items": _schema_of(args[0], where)} if args else {"type": "array"}
    if hint in _DICTS or origin in _DICTS:
        if args and args[0] is not str:
            raise TypeError(f"{where}: the keys of a JSON object are strings, not {args[0]!r}")
        return {"type": "object", "additionalProperties": _schema_of(args[1], where)} if args else {"type": "object"}
    raise TypeError(f"{where}: no JSON schema for {hint!r}; annotate it with {_SUPPORTED}")


def _converter(hint: Any, where: str) -> Callable[[Any], Any] | None:
    """What turns a JSON value of ``hint`` into what the function expects (an Enum member for
    its value), or ``None`` when they are the same."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return _converter(args[0], where)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint
    if origin in _UNIONS:
        converters = [c for a in args if a is not type(None) and (c := _converter(a, where))]
        if not converters:
            return None
        if len(args) != 2 or type(None) not in args:
            raise TypeError(f"{where}: an Enum in a Union is supported as Optional[...] only")
        convert = converters[0]
        return lambda value: None if value is None else convert(value)
    if args and (hint in _LISTS or origin in _LISTS):
        item = _converter(args[0], where)
        return (lambda value: [item(v) for v in value]) if item else None
    if len(args) == 2 and (hint in _DICTS or origin in _DICTS):
        entry = _converter(args[1], where)
        return (lambda value: {k: entry(v) for k, v in value.items()}) if entry else None
    return None


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # a name the annotations use is not importable where fn lives
        raise TypeError(f"{_name(fn)}: cannot resolve its annotations: {type(exc).__name__}: {exc}") from exc


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _parameters(fn: Callable[..., Any]) -> Iterator[inspect.Parameter]:
    """The parameters a call passes by name (``context`` is the tool's context, not one)."""
    for param in inspect.signature(fn).parameters.values():
        if param.name == "context":
            continue
        if param.kind in (param.POSITIONAL_ONLY, param.VAR_POSITIONAL):
            raise TypeError(f"{_name(fn)}: parameter {param.name!r} cannot be passed by name (a tool's arguments are)")
        yield param


def schema_from_signature(fn: Callable[..., Any], *, descriptions: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The JSON schema of ``fn``'s arguments: a property per parameter (``context`` left out),
    typed from its annotation (:data:`_SUPPORTED`; ``Annotated[str, "text"]`` adds a
    description), with its default; parameters without a default are required. No other
    argument is accepted unless ``fn`` takes ``**kwargs``. ``descriptions`` (by parameter)
    default to the docstring's ``Args:`` section. An annotation no JSON value matches is a
    :class:`TypeError` naming the function and the parameter."""
    hints = _hints(fn)
    if descriptions is None:
        descriptions = read_docstring(fn)[1]
    properties: dict[str, Any] = {}
    required: list[str] = []
    extra: Any = False
    for param in _parameters(fn):
        where = f"{_name(fn)}: parameter {param.name!r}"
        schema = _schema_of(hints.get(param.name, param.empty), where)
        if param.kind is param.VAR_KEYWORD:
            extra = schema or True
            continue
        if param.name in descriptions and "description" not in schema:
            schema["description"] = descriptions[param.name]
        if param.default is param.empty:
            required.append(param.name)
        else:
            schema["default"] = _json_value(param.default, where)
        properties[param.name] = schema
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    result["additionalProperties"] = extra
    return result


def _runner(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as a :class:`ToolSetTool` calls it: enum values made members, the context passed
    when ``fn`` takes one, and a plain ``def`` run in a worker thread (a slow read or a
    subprocess there does not hold up the other tools and servers)."""
    hints = _hints(fn)
    converters = {
        p.name: c for p in _parameters(fn) if (c := _converter(hints.get(p.name), f"{_name(fn)}: {p.name!r}"))
    }
    wants_context = "context" in inspect.signature(fn).parameters
    is_async = inspect.iscoroutinefunction(fn)

    async def run(context: ToolContext, **arguments: Any) -> Any:
        for name, convert in converters.items():
            if name in arguments:
                arguments[name] = convert(arguments[name])
        if wants_context:
            arguments["context"] = context
        if is_async:
            return await fn(**arguments)
        import anyio.to_thread

        return await anyio.to_thread.run_sync(functools.partial(fn, **arguments))

    return run


# -- one tool -----------------------------------------------------------------------------------
class ToolSetTool:
    """One tool of a :class:`ToolSet`: ``fn`` called with the arguments by name.

    Its signature is checked when it is declared (an annotation no JSON value matches is a
    :class:`TypeError` there, naming the function and the parameter); its docstring is read
    the first time :attr:`spec` is (when its provider starts, or a caller asks), since
    reading one imports ``docstring_parser`` and its first parse compiles the patterns of
    every style. ``kairox plugins`` runs the registration hooks (importing the module that
    declares the tools) and starts no provider: with the contrib example installed, it took
    8-18% less time (paired medians of 30 fresh runs each, December 2026, load 8-13; the
    command of ``benchmarks/bench_cli_startup.py``). ``Runtime.open`` gains nothing: it
    starts the provider, whose registration reads every spec.
    """

    def __init__(
        self, fn: Callable[..., Any], declared: ToolSpec, *, read_description: bool, read_schema: bool
    ) -> None:
        """``declared``: the spec the decorator's keywords give; ``read_description``: the
        description is the docstring's; ``read_schema``: the input schema is the signature's."""
        self.fn = fn
        self._declared = declared
        self._read_description = read_description
        self._read_schema = read_schema
        if read_schema:
            schema_from_signature(fn, descriptions={})  # the check, without the docstring
        self._run = _runner(fn)

    @functools.cached_property
    def spec(self) -> ToolSpec:
        """The declared spec with the docstring's descriptions, built once."""
        if not (self._read_description or self._read_schema):
            return self._declared
        text, arguments = read_docstring(self.fn)
        changes: dict[str, Any] = {}
        if self._read_description:
            changes["description"] = text
        if self._read_schema:
            changes["input_schema"] = schema_from_signature(self.fn, descriptions=arguments)
        return attrs.evolve(self._declared, **changes)

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return as_result(await self._run(context, **arguments))

    def __repr__(self) -> str:
        return f"ToolSetTool({self._declared.id!r})"


# -- the set ------------------------------------------------------------------------------------
class ToolSet:
    """Tools from functions, ids ``<prefix>.<function name>``, registered by one line in a
    plugin's hooks (:func:`kairox.declare.tools`)::

        tools = ToolSet("notes")

        @tools.tool(domain="local", capability="read")
        def count(text: str, unique: bool = False) -> int:
            \"\"\"Count the words of a text.

            Args:
                text: the text to count.
                unique: count each word once.
            \"\"\"

    The description is the docstring's text before its sections, each argument's is its
    ``Args:`` entry, the input schema is :func:`schema_from_signature`'s. The function is
    returned as it was (call it in your tests); the tool gets the call's arguments by name,
    the :class:`~kairox.ToolContext` as ``context`` when it takes one, and may return a
    string, a JSON value or a :class:`~kairox.ToolResult`. ``provider`` names the tool
    provider (default ``prefix``).
    """

    def __init__(self, prefix: str, *, provider: str | None = None) -> None:
        if not prefix or "." in prefix:
            raise ValueError(f"a tool set's prefix is one word, not {prefix!r}")
        self.prefix = prefix
        self.provider_name = provider or prefix
        self._tools: dict[str, ToolSetTool] = {}

    def tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        domain: Domain | str = Domain.SYSTEM,
        capability: Capability | str = Capability.EXECUTE,
        **spec: Any,
    ) -> Callable[[F], F]:
        """Decorator: ``fn`` becomes the tool ``<prefix>.<name>`` (``name`` defaults to the
        function's). ``domain`` and ``capability`` are what the policy decides on: a tool
        that declares neither is treated as ``system``/``execute``, the strictest. Other
        keywords go to :class:`~kairox.ToolSpec` (``title``, ``path_arguments``, ...)."""

        def decorate(fn: F) -> F:
            tool_id = f"{self.prefix}.{name or fn.__name__}"
            if tool_id in self._tools:
                raise ValueError(f"tool set {self.prefix!r} has a tool {tool_id!r} already")
            self._tools[tool_id] = ToolSetTool(
                fn,
                ToolSpec(
                    tool_id,
                    description or "",
                    domain=domain,
                    capability=capability,
                    provider=self.provider_name,
                    **spec,
                ),
                read_description=description is None,
                read_schema="input_schema" not in spec,
            )
            return fn

        return decorate

    def __iter__(self) -> Iterator[ToolSetTool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def provider(self) -> ToolSetProvider:
        """A fresh tool provider of these tools (one per runtime)."""
        return ToolSetProvider(self.provider_name, list(self._tools.values()))

    def __repr__(self) -> str:
        return f"ToolSet({self.prefix!r}, {sorted(self._tools)})"


class ToolSetProvider:
    """The tool provider of a :class:`ToolSet` in one runtime: its tools while it runs."""

    def __init__(self, name: str, tools: Sequence[ToolSetTool]) -> None:
        self.name = name
        self._tools = list(tools)
        self._runtime: Runtime | None = None

    async def start(self, runtime: Runtime) -> None:
        runtime.tools.replace_provider(self.name, self._tools)
        self._runtime = runtime

    async def stop(self) -> None:
        if self._runtime is not None:
            self._runtime.tools.remove_provider(self.name)
            self._runtime = None

    def status(self) -> Sequence[ServerStatus]:
        return ()  # runs no server process
