"""Registration hooks in one line each, lazy by default.

Most of a plugin's ``hooks`` module is the same three moves: add an object to a
registrar, add a config section, add a CLI command, each importing its module
only when kairox calls the hook (so ``import your_plugin.hooks`` stays cheap).
These helpers write that hook for you; what they return is an ordinary pluggy
implementation, so give it the hook's name:

    from kairox.declare import adds, command, config_section

    kairox_register_config_sections = config_section(
        "dap_servers", "kairox_dap._config:DapServerConfig", entries=True, needs_trust=True,
        description="debug adapters started by dap.launch",
    )
    kairox_register_tool_providers = adds("kairox_dap._provider:DapToolProvider", runtime=True)
    kairox_register_commands = command("dap", "kairox_dap.cli:dap", "Debug adapters.")

A target is ``"package.module:attribute"``; it is imported when the hook runs,
and a target that does not import is that plugin's load failure (reported, the
other plugins load). Write the hook by hand where it does more than this.

``adds(target, lazy="name")`` goes one step further: it registers a :class:`Lazy`
stand-in under ``name`` and imports the target the first time anything but the name
is asked of it (a transport's ``connect``, an ``isinstance`` check), so a workspace
that never uses the transport never imports it::

    kairox_register_transports = adds("kairox_stdio.stdio:StdioTransport", lazy="stdio")

A lazy tool provider may also say when it has something to do (``needed``): while it
has nothing, it is *dormant*: a runtime neither imports, builds nor starts it, and the
first use of the stand-in wakes it (it is built then, and started when the runtime's
providers run). ``servers(..., name=...)`` does this for a feature whose servers come
from its config section::

    kairox_register_config_sections, kairox_register_tool_providers = servers(
        "lsp_servers", "kairox_lsp._config:LspServerConfig", "kairox_lsp._provider:LspToolProvider",
        name="lsp", description="language servers",
    )
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Union

from .errors import RegistrationError
from .hookspecs import hookimpl

if TYPE_CHECKING:
    import click

    from ._registrar import Registrar
    from ._runtime import Runtime

__all__ = [
    "Lazy",
    "Needed",
    "adds",
    "command",
    "config_section",
    "has_entries",
    "is_needed",
    "load_target",
    "servers",
    "stub_exports",
    "watch",
]

logger = logging.getLogger(__name__)

#: what ``needed`` is: a ``"package.module:function"`` target or a callable, given the runtime
Needed = Union[str, Callable[["Runtime"], bool]]


def _check(target: str) -> str:
    module, sep, attribute = target.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"target {target!r} is not 'package.module:attribute'")
    return target


def _module_exists(module: str) -> bool:
    """Whether ``module`` is imported or can be found (its packages are imported, not it)."""
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def load_target(target: str) -> Any:
    """The object ``"package.module:attribute"`` names (dotted attributes allowed)."""
    module, _, attribute = _check(target).partition(":")
    value: Any = importlib.import_module(module)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


class Lazy:
    """A registered object that is imported on first use: it has its ``name`` at once, and
    the first other attribute asked of it (``connect``, ``__class__`` for ``isinstance``)
    builds ``target(*args)`` (:meth:`resolve`), whose answers it gives from then on.

    The built object must have the same ``name``. A target that cannot be built (its
    module does not import, the attribute is missing, the name differs) raises
    :class:`RegistrationError` naming the target, at that first use. What a stand-in does
    not pass on: special methods (calling it, ``async with`` it), equality and hashing
    (it is itself, not the object), ``resolve``/``resolved`` (its own), and a new ``name``
    (refused: the registrar holds it under its name). ``isinstance`` builds the target;
    one that cannot be built is an instance of :class:`Lazy` alone.

    ``needed`` (tool providers): whether the target has anything to do in a runtime
    (:data:`Needed`, asked with the runtime by :func:`is_needed`); a runtime leaves one
    that has nothing dormant (not built, not started) until the stand-in's first use."""

    __slots__ = ("_args", "_building", "_needed", "_on_build", "_target", "_value", "name")

    _on_build: Callable[[Lazy, RegistrationError | None], None] | None

    def __init__(self, name: str, target: str, *args: Any, needed: Needed | None = None) -> None:
        if needed is not None and not callable(needed):
            _check(needed)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "_target", _check(target))
        object.__setattr__(self, "_args", args)
        object.__setattr__(self, "_value", None)
        object.__setattr__(self, "_needed", needed)
        object.__setattr__(self, "_on_build", None)
        # one build at a time: two threads using the stand-in at once get the same object
        object.__setattr__(self, "_building", threading.RLock())

    @property
    def resolved(self) -> bool:
        """Whether the target has been imported and built."""
        return self._value is not None

    def resolve(self) -> Any:
        """The object the target builds (imported and built once: a thread that asks while
        another builds it waits for that build, so the target must not wait for a thread
        that uses this stand-in). The watcher (:func:`watch`) is told after the build."""
        value = self._value
        if value is not None:
            return value
        error: RegistrationError | None = None
        with self._building:
            value = self._value
            if value is not None:  # another thread built it meanwhile
                return value
            try:
                value = self._build()
            except RegistrationError as exc:
                error = exc
            else:
                object.__setattr__(self, "_value", value)
        self._tell(error)
        if error is not None:
            raise error
        return value

    def _build(self) -> Any:
        try:
            value = load_target(self._target)(*self._args)
        except Exception as exc:
            raise RegistrationError(
                f"{self.name!r} (registered to be imported on first use) cannot be built from "
                f"{self._target}: {type(exc).__name__}: {exc}"
            ) from exc
        built = getattr(value, "name", None)
        if built != self.name:
            raise RegistrationError(f"{self._target} was registered as {self.name!r} but is named {built!r}")
        return value

    def _tell(self, error: RegistrationError | None) -> None:
        """The watcher (:func:`watch`), once: built (``None``) or not buildable (``error``)."""
        on_build = self._on_build
        if on_build is None:
            return
        object.__setattr__(self, "_on_build", None)
        try:
            on_build(self, error)
        except Exception:  # the watcher's trouble is not the caller's
            logger.exception("the watcher of %r failed", self.name)

    def __getattr__(self, attribute: str) -> Any:  # only what the stand-in does not have itself
        # introspection (__wrapped__, copy's __deepcopy__, ...) and a slot not set yet (a copy
        # being made) import nothing
        if attribute.startswith("__") or attribute in Lazy.__slots__:
            raise AttributeError(attribute)
        return getattr(self.resolve(), attribute)

    def __setattr__(self, attribute: str, value: Any) -> None:
        if attribute == "name":
            raise AttributeError(f"a stand-in's name is the one it was registered under ({self.name!r})")
        setattr(self.resolve(), attribute, value)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(stand_in, StdioTransport) resolves it, and holds
        try:
            return type(self.resolve())
        except RegistrationError:  # not buildable: an instance of Lazy alone (the use says why)
            return Lazy

    def __reduce__(self) -> tuple[Any, ...]:
        if self._needed is None:
            return (Lazy, (self.name, self._target, *self._args))
        return (functools.partial(Lazy, needed=self._needed), (self.name, self._target, *self._args))

    def __repr__(self) -> str:
        if self._value is not None:
            return repr(self._value)
        return f"<{self.name!r}: {self._target}, not imported yet>"


def watch(stand_in: Lazy, on_build: Callable[[Lazy, RegistrationError | None], None] | None) -> None:
    """Call ``on_build(stand_in, None)`` once, right after the stand-in's target is built, or
    ``on_build(stand_in, error)`` when the first try to build it fails (the runtime wakes a
    dormant provider so, or takes it out); ``None`` stops watching. A copy of the stand-in
    is not watched: it is a stand-in of its own, which builds its own object."""
    object.__setattr__(stand_in, "_on_build", on_build)


def is_needed(stand_in: Lazy, runtime: Runtime) -> bool:
    """Whether a stand-in's target has anything to do in ``runtime``: its ``needed``
    answer, ``True`` without one. A ``needed`` that fails (does not import, raises)
    counts as ``True``: a provider is never left out because its check broke."""
    needed = stand_in._needed
    if needed is None:
        return True
    try:
        check = load_target(needed) if isinstance(needed, str) else needed
        return bool(check(runtime))
    except Exception:
        logger.warning("the check of whether %r is needed failed; it is built", stand_in.name, exc_info=True)
        return True


def has_entries(section: str, runtime: Runtime) -> bool:
    """Whether any config file of ``runtime`` sets an entry of ``[section]`` (held and
    broken ones too): the ``needed`` of :func:`servers`."""
    return bool(runtime.config.raw.get(section))


def _either(first: Needed, second: Needed, runtime: Runtime) -> bool:
    for check in (first, second):
        if (load_target(check) if isinstance(check, str) else check)(runtime):
            return True
    return False


def _lazy_names(lazy: str | Sequence[str] | None, count: int) -> list[str] | None:
    if lazy is None:
        return None
    names = [lazy] if isinstance(lazy, str) else list(lazy)
    if len(names) != count or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"lazy= needs one non-empty name per target ({count}), got {lazy!r}")
    return names


def adds(
    *targets: str, runtime: bool = False, lazy: str | Sequence[str] | None = None, needed: Needed | None = None
) -> Callable[..., None]:
    """A registration hook that adds ``target()`` (``target(runtime)`` with ``runtime=True``)
    for each target, in order: transports, tool providers, skill, catalog and manifest formats.

    ``runtime=True`` fits only the hooks that pass one (tool providers, skill and catalog
    sources); on another hook pluggy refuses the implementation when the plugin loads.

    ``lazy`` names each target (one name per target): the hook then adds a :class:`Lazy`
    stand-in of that name and imports nothing; the target's module must exist (else the
    plugin's load failure, as for an eager target) and is imported on first use. For
    objects the kernel only looks up by name until they are used (transports). A lazy tool
    provider is built when the runtime opens, unless ``needed`` (a ``"module:function"``
    target or a callable, given the runtime: :data:`Needed`) says it has nothing to do
    there: then it stays *dormant*, neither built nor started, until something uses it
    (``runtime.providers.get(name)`` and then any attribute, an ``isinstance`` check), which
    builds it and, once the runtime's providers run, starts it."""
    names = [_check(t) for t in targets]
    if not names:
        raise ValueError("adds() needs at least one target")
    lazy_names = _lazy_names(lazy, len(names))
    if needed is not None:
        if lazy_names is None or not runtime:
            raise ValueError("needed= is for lazy tool providers: give lazy= names and runtime=True")
        if not callable(needed):
            _check(needed)
    if lazy_names is not None:
        pairs = list(zip(lazy_names, names, strict=True))

        def stand_ins(registrar: Registrar[Any], runtime: Runtime | None = None) -> None:
            extra = () if runtime is None else (runtime,)
            for name, target in pairs:
                module = target.partition(":")[0]
                if not _module_exists(module):
                    raise ModuleNotFoundError(f"{registrar.kind} {name!r}: no module named {module!r}", name=module)
            for name, target in pairs:
                registrar.add(Lazy(name, target, *extra, needed=needed))

        if runtime:

            def lazy_with_runtime(registrar: Registrar[Any], runtime: Runtime) -> None:
                stand_ins(registrar, runtime)

            return hookimpl(lazy_with_runtime)

        def lazy_without_runtime(registrar: Registrar[Any]) -> None:
            stand_ins(registrar)

        return hookimpl(lazy_without_runtime)

    if runtime:

        def with_runtime(registrar: Registrar[Any], runtime: Runtime) -> None:
            for name in names:
                registrar.add(load_target(name)(runtime))

        return hookimpl(with_runtime)

    def without_runtime(registrar: Registrar[Any]) -> None:
        for name in names:
            registrar.add(load_target(name)())

    return hookimpl(without_runtime)


def config_section(name: str, schema: str, **options: Any) -> Callable[[Registrar[Any]], None]:
    """A ``kairox_register_config_sections`` hook adding one :class:`ConfigSection`
    named ``name`` whose schema is the ``schema`` target; ``options`` are the section's
    other fields (``entries``, ``needs_trust``, ``narrows``, ``whole_environment``, ``description``,
    ``default``, ``merge``).

    The target's module must exist when the hook runs (else the plugin fails to load);
    it is imported when the section is first structured or its default built, so a
    section nobody configures costs no import, and a module that exists but does not
    import, or lacks the attribute, is a :class:`~kairox.ConfigError` on the section."""
    _check(schema)

    def kairox_register_config_sections(registrar: Registrar[Any]) -> None:
        from ._config import ConfigSection

        module = schema.partition(":")[0]
        if not _module_exists(module):
            raise ModuleNotFoundError(f"config section [{name}]: no module named {module!r}", name=module)
        registrar.add(ConfigSection(name=name, schema=schema, **options))

    return hookimpl(kairox_register_config_sections)


def servers(
    section: str,
    schema: str,
    provider: str,
    *,
    description: str,
    name: str | None = None,
    needed: Needed | None = None,
    whole_environment: bool = False,
) -> tuple[Callable[[Registrar[Any]], None], Callable[..., None]]:
    """The two hooks of a feature that runs servers (MCP, LSP, DAP): the ``[section.NAME]``
    config section, one entry per server structured as ``schema`` and held until the
    workspace is trusted, and the tool ``provider`` target, built with the runtime::

        kairox_register_config_sections, kairox_register_tool_providers = servers(
            "dap_servers", "kairox_dap._config:DapServerConfig", "kairox_dap._provider:DapToolProvider",
            name="dap", description="debug adapters started by dap.launch",
        )

    With the provider's ``name``, it is a lazy stand-in, dormant in a runtime whose config
    sets no ``[section.*]`` entry (:func:`has_entries`) unless ``needed`` (servers declared
    elsewhere: kairox-mcp's ``.mcp.json``) says otherwise: a workspace without such servers
    opens without importing or starting the provider. Without ``name``, it is built at
    every open. ``whole_environment``: the servers get kairox's whole environment (the
    trust prompt says so for each workspace entry)."""
    has = functools.partial(has_entries, section)
    check: Needed = has if needed is None else functools.partial(_either, has, needed)
    return (
        config_section(
            section,
            schema,
            entries=True,
            needs_trust=True,
            whole_environment=whole_environment,
            description=description,
        ),
        adds(provider, runtime=True) if name is None else adds(provider, runtime=True, lazy=name, needed=check),
    )


def command(name: str, target: str, help: str, *, hidden: bool = False) -> Callable[[click.Group], None]:
    """A ``kairox_register_commands`` hook adding ``kairox NAME``, imported from ``target``
    only when it runs or shows its own help (:func:`kairox.cli.lazy_command`)."""
    _check(target)

    def kairox_register_commands(cli: click.Group) -> None:
        from .cli import lazy_command

        cli.add_command(lazy_command(name, target, help, hidden=hidden))

    return hookimpl(kairox_register_commands)


def stub_exports(package: str, file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for the names its ``__init__.pyi`` lists,
    each imported from its module on first use: ``lazy_loader.attach_stub``, with the stub
    read the first time a name (or ``__all__``, or ``dir()``) is asked, not when the package
    is imported (a plugin's package is imported at every open to reach its hooks)::

        __getattr__, __dir__ = stub_exports(__name__, __file__)

    ``EAGER_IMPORT`` (lazy_loader's switch to import everything at once) reads it at once.
    Not for a stub that lists a name equal to one of its submodules' (``from .foo import
    foo``): lazy_loader guards those from the import machinery only when attached at once."""
    attached: list[tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]] = []

    def attach() -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
        if not attached:
            import lazy_loader

            attached.append(lazy_loader.attach_stub(package, file))
        return attached[0]

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            return attach()[2]
        if name.startswith("__") and name.endswith("__"):  # __path__, __wrapped__, ...: not a listed name
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return attach()[0](name)

    def __dir__() -> list[str]:
        return attach()[1]()

    if os.environ.get("EAGER_IMPORT", "") not in ("0", ""):
        attach()
    return __getattr__, __dir__
