"""The plugin host: a fresh pluggy manager, built-ins and entry points loaded in isolation."""

from __future__ import annotations

import difflib
import importlib
import logging
import os
import re
import sys
import traceback
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import pluggy

from . import hookspecs
from ._dispatch import Dispatcher, plugin_label, wrapper_hooks
from ._distribution import DISTRIBUTION_GROUP, DistributionChoice, choose_distribution
from ._entrypoints import ENTRY_POINT_GROUP, InstalledEntryPoints, index_home, installed_entry_points, kernel_version
from .errors import RegistrationError

__all__ = [
    "DEFAULT_PLUGINS",
    "ENTRY_POINT_GROUP",
    "LoadFailure",
    "PluginHost",
    "PluginInfo",
    "build_plugin_host",
    "package_key",
]

logger = logging.getLogger(__name__)

#: the kernel's own hookimpls, registered like any other plugin
DEFAULT_PLUGINS: tuple[str, ...] = ("kairox._builtin",)


@attrs.frozen
class LoadFailure:
    """A plugin that could not be imported, registered or could not register its extensions."""

    plugin: str
    distribution: str | None
    version: str | None
    stage: str  # "load", "register", "validate" or the hook name
    error: str
    traceback: str = ""


@attrs.frozen
class PluginInfo:
    name: str
    distribution: str | None
    version: str | None
    hooks: tuple[str, ...]
    builtin: bool


def _env_list(env: Mapping[str, str], name: str) -> list[str] | None:
    value = env.get(name)
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def _format_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class PluginHost:
    """Owns one :class:`pluggy.PluginManager` and what happened while loading it.

    Every hook call goes through :attr:`dispatch` (:class:`~kairox._dispatch.Dispatcher`):
    one typed method per hookspec, in pluggy's call order, one implementation at a time.
    """

    def __init__(self, pm: pluggy.PluginManager, *, strict: bool = False) -> None:
        self.pm = pm
        self.strict = strict
        self.failures: list[LoadFailure] = []
        self._dists: dict[str, tuple[str | None, str | None]] = {}
        self._builtin: set[str] = set()
        self.dispatch = Dispatcher(self)
        #: the distribution that chose the plugin set (:mod:`kairox._distribution`)
        self.distribution = DistributionChoice()
        #: installed plugin packages that were not loaded: entry-point name -> (package, why)
        self.not_loaded: dict[str, tuple[str | None, str]] = {}

    @property
    def hook(self) -> Any:
        return self.pm.hook

    def record(self, failure: LoadFailure, exc: BaseException | None = None) -> None:
        self.failures.append(failure)
        logger.warning("plugin %s failed at %s: %s", failure.plugin, failure.stage, failure.error)
        if self.strict and exc is not None:
            raise exc

    def fail(self, plugin_name: str, stage: str, error: BaseException | str, tb: str = "") -> None:
        """Record that ``plugin_name`` failed at ``stage`` (an exception is re-raised when strict)."""
        dist, version = self._dists.get(plugin_name, (None, None))
        message = error if isinstance(error, str) else _format_error(error)
        exc = None if isinstance(error, str) else error
        self.record(LoadFailure(plugin_name, dist, version, stage, message, tb), exc)

    def label(self, plugin_name: str) -> str:
        """The distribution name of a plugin when it came from one, else its plugin name."""
        dist = self._dists.get(plugin_name, (None, None))[0]
        return dist or plugin_name

    def distribution_of(self, plugin_name: str) -> tuple[str | None, str | None]:
        return self._dists.get(plugin_name, (None, None))

    def came_from(self, plugin_name: str, distribution: str | None, version: str | None) -> None:
        """Record the distribution (and version) a plugin is loaded from."""
        self._dists[plugin_name] = (distribution, version)

    def register(self, plugin: object, name: str | None = None, *, builtin: bool = False) -> str | None:
        """Register a plugin object (module or instance); failures are recorded, not raised.

        A plugin with a wrapper implementation (``hookwrapper=True``/``wrapper=True``)
        is refused at stage ``"validate"``: kairox calls implementations one at a
        time, so a wrapper would never run."""
        try:
            registered = self.pm.register(plugin, name=name)
        except Exception as exc:
            if self.pm.is_registered(plugin):  # its kairox_addhooks raised after pluggy took it
                self.pm.unregister(plugin)
            label = name or str(getattr(plugin, "__name__", None) or repr(plugin))
            self.fail(label, "register", exc, traceback.format_exc())
            return None
        wrapped = wrapper_hooks(self.pm, plugin) if registered else []
        if registered and wrapped:
            self.pm.unregister(plugin)
            error = (
                f"{', '.join(wrapped)}: wrapper implementations (hookwrapper/wrapper) are not supported;"
                " kairox calls each implementation on its own, so a wrapper would never run"
            )
            self.fail(registered, "validate", pluggy.PluginValidationError(plugin, error))
            return None
        if registered and builtin:
            self._builtin.add(registered)
        return registered

    def check_pending(self) -> None:
        """pluggy's ``check_pending()``, but a plugin with an unknown hook is unregistered and
        recorded (stage ``"validate"``), not raised. Call it after registering plugins on a built host."""
        for _ in range(100):
            try:
                self.pm.check_pending()
                return
            except pluggy.PluginValidationError as exc:
                name = self.pm.get_name(exc.plugin) or repr(exc.plugin)
                dist, version = self.distribution_of(name)
                self.pm.unregister(exc.plugin)
                self.record(LoadFailure(name, dist, version, "validate", _format_error(exc)), exc)

    def plugins(self, *, include_builtin: bool = False) -> list[PluginInfo]:
        infos = []
        for name, plugin in self.pm.list_name_plugin():
            if plugin is None:
                continue
            builtin = name in self._builtin
            if builtin and not include_builtin:
                continue
            hooks = tuple(sorted(h.name for h in self.pm.get_hookcallers(plugin) or ()))
            dist, version = self._dists.get(name, (None, None))
            infos.append(PluginInfo(name, dist, version, hooks, builtin))
        return sorted(infos, key=lambda i: (not i.builtin, i.name))


_ABSENT = object()
#: names a module's type answers for itself (``__class__``, ``__dict__``, ...): pluggy's lookup
#: may see the type's attribute there rather than the module's own, so they are left to it
_MODULE_TYPE_NAMES = frozenset(dir(types.ModuleType))


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, with a quicker look at a module plugin's names.

    ``register`` asks :meth:`parse_hookimpl_opts` of every name in ``dir(plugin)``, and
    pluggy looks each up with :func:`inspect.getattr_static` so that no descriptor runs:
    about 0.1 ms a plugin module, most of it on names such as ``__doc__``, at every open.
    A module's name is the value in its ``__dict__`` (running nothing), so a plain
    function there is judged by its marker and anything not callable is no hook; every
    other case (classes, instances, staticmethods, ...) is pluggy's own lookup."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if type(plugin) is types.ModuleType and name not in _MODULE_TYPE_NAMES:
            value = plugin.__dict__.get(name, _ABSENT)
            if type(value) is types.FunctionType:
                opts = getattr(value, self.project_name + "_impl", None)
                return opts if isinstance(opts, dict) else None
            if value is not _ABSENT and not callable(value) and not isinstance(value, (classmethod, staticmethod)):
                return None
        return super().parse_hookimpl_opts(plugin, name)


def _trace_writer(*args: Any) -> None:
    sys.stderr.write("kairox-trace: " + " ".join(str(a) for a in args).rstrip("\n") + "\n")


class _TraceLine:
    """One trace line, ``hook -> plugin(arguments it takes)``, made into text only when
    pluggy's tracer has a writer (``KAIROX_TRACE_PLUGINS``, or ``pm.trace.root.setwriter``)."""

    __slots__ = ("hook", "impls", "pm")

    def __init__(self, pm: pluggy.PluginManager, hook: str, impls: Sequence[Any]) -> None:
        self.pm, self.hook, self.impls = pm, hook, impls

    def __str__(self) -> str:
        called = ", ".join(
            f"{plugin_label(self.pm.get_name(i.plugin) or i.plugin_name, i.plugin)}({', '.join(i.argnames)})"
            for i in self.impls
        )
        return f"{self.hook} -> {called}"


def _observe(pm: pluggy.PluginManager) -> None:
    """Every hook call is seen through pluggy's hook-call monitoring: a trace line each, written
    when a writer is set (kairox calls one implementation at a time, so each line names one)."""
    tracer = pm.trace.root.get("hook")

    def before(hook_name: str, hook_impls: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        tracer(_TraceLine(pm, hook_name, hook_impls))

    def after(outcome: Any, hook_name: str, hook_impls: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        return None

    pm.add_hookcall_monitoring(before, after)


def build_plugin_host(
    *,
    plugins: Iterable[object] = (),
    load_entrypoints: bool = True,
    env: Mapping[str, str] | None = None,
) -> PluginHost:
    """Build a fresh plugin host.

    Registers :data:`DEFAULT_PLUGINS`, then each entry point of the ``kairox``
    group on its own (a failure is recorded with distribution, version and
    error, and the rest load), then ``plugins`` (inline plugin objects, e.g.
    in tests). Environment controls are read now, not at import:

    - ``KAIROX_LOAD_PLUGINS``: comma list of entry-point or distribution names
      to load (``""`` loads none);
    - ``KAIROX_DISABLE_PLUGINS``: comma list not to load;
    - ``KAIROX_STRICT_PLUGINS=1``: re-raise the first failure;
    - ``KAIROX_TRACE_PLUGINS=1``: trace every hook call to stderr.
    """
    env = os.environ if env is None else env
    pm = _PluginManager("kairox")
    pm.add_hookspecs(hookspecs)
    # each plugin adds the hooks it owns as it is registered (kairox-mcp: the transports')
    pm.hook.kairox_addhooks.call_historic(kwargs={"pluginmanager": pm})
    host = PluginHost(pm, strict=env.get("KAIROX_STRICT_PLUGINS", "") not in ("", "0", "false"))
    installed = _installed(env) if load_entrypoints else None
    for modname in DEFAULT_PLUGINS:
        host.came_from(modname, "kairox", installed.kernel_version if installed else kernel_version())
        host.register(importlib.import_module(modname), name=modname, builtin=True)
    if installed is not None:
        host.distribution = choose_distribution(installed_entry_points(DISTRIBUTION_GROUP, env, index_home(env)), env)
        _load_entry_points(host, env, installed)
    for plugin in plugins:
        host.register(plugin)
    host.check_pending()
    _remember_not_loaded(host)
    _observe(pm)
    if env.get("KAIROX_TRACE_PLUGINS", "") not in ("", "0", "false"):
        pm.trace.root.setwriter(_trace_writer)
    return host


def _installed(env: Mapping[str, str]) -> InstalledEntryPoints:
    return installed_entry_points(ENTRY_POINT_GROUP, env, index_home(env))


def package_key(name: str) -> str:
    """A plugin package's name as kairox compares it: PEP 503 (``Kairox_Example`` and
    ``kairox-example`` are one name), so the import name of a package matches too."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _load_entry_points(host: PluginHost, env: Mapping[str, str], installed: InstalledEntryPoints) -> None:
    choice = host.distribution
    for problem in choice.problems:
        host.record(
            LoadFailure("distribution", choice.package, choice.version, "distribution", problem),
            RegistrationError(problem),
        )
    shipped = None if choice.distribution is None else choice.plugin_set()
    listed_only = _env_list(env, "KAIROX_LOAD_PLUGINS")
    only = None if listed_only is None else {package_key(n) for n in listed_only}
    listed_disabled = _env_list(env, "KAIROX_DISABLE_PLUGINS") or []
    disabled = {package_key(n) for n in listed_disabled}
    seen: dict[str, str | None] = {}
    known: set[str] = set()
    for ep in installed.entry_points:
        dist_name, version = ep.dist_name, ep.version
        names = {package_key(ep.name)} | ({package_key(dist_name)} if dist_name else set())
        known |= names
        why = None
        if choice.problems:
            why = f"no plugin package loads until the distribution problem is fixed ({choice.problems[0]})"
        elif shipped is not None and not names & shipped:
            why = f"not in the plugin set of {choice.label}"
        elif only is not None and not names & only:
            why = "not listed in KAIROX_LOAD_PLUGINS"
        elif names & disabled:
            why = "listed in KAIROX_DISABLE_PLUGINS"
        if why is not None:
            host.not_loaded.setdefault(ep.name, (dist_name, why))
            continue
        if ep.name in seen:
            other = seen[ep.name]
            if other != dist_name:  # the same distribution found twice on sys.path is not a clash
                host.record(
                    LoadFailure(
                        ep.name,
                        dist_name,
                        version,
                        "load",
                        f"entry point name {ep.name!r} is used by both {other} and {dist_name}; {other} keeps it",
                    ),
                    RegistrationError(f"entry point name {ep.name!r} is used by both {other} and {dist_name}"),
                )
            continue
        seen[ep.name] = dist_name
        if host.pm.get_plugin(ep.name) is not None or host.pm.is_blocked(ep.name):
            continue
        host.came_from(ep.name, dist_name, version)
        try:
            plugin = ep.load()
        except Exception as exc:
            host.record(
                LoadFailure(ep.name, dist_name, version, "load", _format_error(exc), traceback.format_exc()), exc
            )
            continue
        host.register(plugin, name=ep.name)
    for variable, listed in (("KAIROX_LOAD_PLUGINS", listed_only or []), ("KAIROX_DISABLE_PLUGINS", listed_disabled)):
        # a typo must not pass for a plugin turned off (or on): each unknown name is a failure
        for name in (n for n in listed if package_key(n) not in known):
            close = difflib.get_close_matches(package_key(name), sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            message = f"{variable} names {name!r}, which is no installed plugin package{hint}"
            host.record(LoadFailure(name, None, None, "environment", message), RegistrationError(message))
    if choice.distribution is not None and not choice.problems:
        for name in choice.distribution.plugins:
            if package_key(name) not in known:
                message = f"{choice.label} lists plugin package {name!r}, which is not installed"
                host.record(
                    LoadFailure(name, choice.package, choice.version, "distribution", message),
                    RegistrationError(message),
                )


def _remember_not_loaded(host: PluginHost) -> None:
    from ._features import remember_not_loaded

    remember_not_loaded(host)
