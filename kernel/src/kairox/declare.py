"""Registration hooks in one line each.

Most of a plugin's ``hooks`` module is the same moves: add an object to a
registrar, add a config section (and a CLI command: ``kairox_cli.command``), each
importing its module only when kairox calls the hook (so ``import your_plugin.hooks``
stays cheap).
These helpers write that hook for you; what they return is an ordinary pluggy
implementation, so give it the hook's name:

    from kairox.declare import adds, config_section

    kairox_register_config_sections = config_section(
        "dap_servers", "kairox_dap._config:DapServerConfig", entries=True, needs_trust=True,
        description="debug adapters started by dap.launch",
    )
    kairox_register_tool_providers = adds("kairox_dap._provider:DapToolProvider", runtime=True)

Tools from plain functions are a :class:`ToolSet` (the schema from the signature, the
descriptions from the docstring), registered in one line with :func:`tools`; skills in a
folder of your package with :func:`skills`::

    kairox_register_tool_providers = tools("kairox_notes.tools:tools")
    kairox_register_skill_sources = skills("kairox_notes:skills")

A target is ``"package.module:attribute"``; it is imported when the hook runs,
and a target that does not import is that plugin's load failure (reported, the
other plugins load). Write the hook by hand where it does more than this.

What a hook adds is built at every open, so it must be cheap to build: a transport
imports its transport machinery in ``connect``, a tool provider what it runs with in
``start`` (or ``discover``, which may say there is nothing to do in this workspace:
:class:`kairox.protocols.Discovers`). A workspace that uses neither pays for neither.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._toolset import ToolSet, schema_from_signature
from .hookspecs import hookimpl

if TYPE_CHECKING:
    from ._registrar import Registrar
    from ._runtime import Runtime

__all__ = [
    "ToolSet",
    "adds",
    "check_target",
    "config_section",
    "has_entries",
    "load_target",
    "schema_from_signature",
    "servers",
    "skills",
    "stub_exports",
    "tools",
]


def check_target(target: str) -> str:
    """``target`` if it reads ``"package.module:attribute"``; else a :class:`ValueError`."""
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
    module, _, attribute = check_target(target).partition(":")
    value: Any = importlib.import_module(module)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def has_entries(section: str, runtime: Runtime) -> bool:
    """Whether any config file of ``runtime`` sets an entry of ``[section]`` (held and
    broken ones too): what a server provider's ``discover`` asks first."""
    return bool(runtime.config.raw.get(section))


def adds(*targets: str, runtime: bool = False) -> Callable[..., None]:
    """A registration hook that adds ``target()`` (``target(runtime)`` with ``runtime=True``)
    for each target, in order: transports, tool providers, skill, catalog and manifest formats.

    ``runtime=True`` fits only the hooks that pass one (tool providers, skill and catalog
    sources); on another hook pluggy refuses the implementation when the plugin loads."""
    names = [check_target(t) for t in targets]
    if not names:
        raise ValueError("adds() needs at least one target")

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
    check_target(schema)

    def kairox_register_config_sections(registrar: Registrar[Any]) -> None:
        from ._config import ConfigSection

        module = schema.partition(":")[0]
        if not _module_exists(module):
            raise ModuleNotFoundError(f"config section [{name}]: no module named {module!r}", name=module)
        registrar.add(ConfigSection(name=name, schema=schema, **options))

    return hookimpl(kairox_register_config_sections)


def servers(
    section: str, schema: str, provider: str, *, description: str, whole_environment: bool = False
) -> tuple[Callable[[Registrar[Any]], None], Callable[..., None]]:
    """The two hooks of a feature that runs servers (MCP, LSP, DAP): the ``[section.NAME]``
    config section, one entry per server structured as ``schema`` and held until the
    workspace is trusted, and the tool ``provider`` target, built with the runtime::

        kairox_register_config_sections, kairox_register_tool_providers = servers(
            "dap_servers", "kairox_dap._config:DapServerConfig", "kairox_dap._provider:DapToolProvider",
            description="debug adapters started by dap.launch",
        )

    The provider is built at every open: keep it cheap to build, and have its ``discover``
    say when there is nothing to do (:func:`has_entries` tells whether the config sets any
    ``[section.*]`` entry). ``whole_environment``: the servers get kairox's whole
    environment (the trust prompt says so for each workspace entry)."""
    return (
        config_section(
            section,
            schema,
            entries=True,
            needs_trust=True,
            whole_environment=whole_environment,
            description=description,
        ),
        adds(provider, runtime=True),
    )


def tools(*targets: str) -> Callable[[Registrar[Any]], None]:
    """A ``kairox_register_tool_providers`` hook adding the tools of each :class:`ToolSet`
    target (``"kairox_notes.tools:tools"``), each as a tool provider of its own per runtime."""
    names = [check_target(t) for t in targets]
    if not names:
        raise ValueError("tools() needs at least one target")

    def kairox_register_tool_providers(registrar: Registrar[Any]) -> None:
        for name in names:
            toolset = load_target(name)
            if not isinstance(toolset, ToolSet):
                raise TypeError(f"{name} is a {type(toolset).__name__}, not a kairox.declare.ToolSet")
            registrar.add(toolset.provider())

    return hookimpl(kairox_register_tool_providers)


def skills(target: str, *, namespace: str | None = None) -> Callable[..., None]:
    """A ``kairox_register_skill_sources`` hook for the skills in a folder of an installed
    package: ``skills("kairox_notes:skills")`` reads ``kairox_notes/skills/`` as kairox-skills
    reads a plugin's skills (kairox skill files and Agent Skills folders, plugin scope, named
    ``<namespace>:<name>``, read inside that folder). ``namespace`` defaults to the package's
    name without its ``kairox_`` (``notes``). kairox-skills reads them: depend on it.

    The folder is looked up when the skills are scanned; a package or folder that is not
    there, or kairox-skills missing, is an error of the source, naming it."""
    package, sep, folder = target.partition(":")
    if not sep or not package or not folder or Path(folder).is_absolute() or ".." in Path(folder).parts:
        raise ValueError(f"skills target {target!r} is not 'package:folder inside it'")
    if namespace is None:
        top = package.split(".")[0]
        namespace = top[len("kairox_") :] if top.startswith("kairox_") and top != "kairox_" else top

    def kairox_register_skill_sources(registrar: Registrar[Any]) -> None:
        registrar.add(PackageSkills(package, folder, namespace))

    return hookimpl(kairox_register_skill_sources)


class PackageSkills:
    """The skill source :func:`skills` registers: the folder ``folder`` of the installed
    package ``package``, read by kairox-skills' :class:`~kairox_skills.DirectorySkillSource`
    (imported when the skills are first scanned, in the registry's worker thread)."""

    #: the kairox-skills reader, by name: the kernel imports no feature package
    READER = "kairox_skills:DirectorySkillSource"

    def __init__(self, package: str, folder: str, namespace: str) -> None:
        self.name = f"package:{package}/{folder}"
        self.package = package
        self.folder = folder
        self.namespace = namespace

    def locate(self) -> Path:
        """The folder; a :class:`LookupError` naming what is missing."""
        spec = importlib.util.find_spec(self.package)
        locations = list(spec.submodule_search_locations or ()) if spec is not None else []
        if not locations:
            raise LookupError(f"{self.package} is not an installed package")
        for location in locations:
            if (Path(location) / self.folder).is_dir():
                return Path(location) / self.folder
        raise LookupError(f"the package {self.package} has no folder {self.folder!r} ({locations[0]})")

    def scan(self, runtime: Runtime | None = None) -> Any:
        from ._contained import Root
        from ._skill_model import SkillError, SkillScope

        try:
            folder = self.locate()
        except (LookupError, ImportError, ValueError) as exc:
            return [SkillError(f"skills of {self.name}: {exc}")]
        try:
            reader = load_target(self.READER)
        except ImportError:
            message = "reading them needs kairox-skills, which is not installed (pip install kairox-skills)"
            return [SkillError(f"skills of {self.name}: {message}", file=str(folder))]
        root = Root(folder, label=f"the skills folder of the package {self.package}")
        return reader(self.name, SkillScope.PLUGIN, [root], namespace=self.namespace).scan(runtime)

    def __repr__(self) -> str:
        return f"PackageSkills({self.package!r}, {self.folder!r}, namespace={self.namespace!r})"


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
