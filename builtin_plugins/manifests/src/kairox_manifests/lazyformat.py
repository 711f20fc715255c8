"""Manifest formats registered by name, their code imported when a directory is probed.

A format's module (the document classes, the manifest model, version ranges) is
a noticeable part of opening a runtime, and most workspaces have no plugin
directory to probe. :class:`LazyFormat` is what a plugin registers instead: it
carries the format's ``name``, ``priority`` and ``fallback`` flag, lists the
format's extra locations through a light callable, and imports the real format
(a ``"package.module:Class"`` target, built with no arguments) the first time
anything else is asked of it: ``probe``, ``parse``, ``activate``, ...::

    LazyFormat("philont", 40, "kairox_philont.manifest:PhilontFormat", locations=philont_format_locations)

Registering one checks that the target's module exists, so a format whose
module is missing is still that plugin's load failure; the loaded format must
have the name and priority it was registered with.
"""

from __future__ import annotations

import importlib.machinery
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kairox.declare import load_target

if TYPE_CHECKING:
    from kairox.files import Root

__all__ = ["BUILTIN_FORMATS", "LazyFormat", "builtin_lazy_formats", "probe_format"]

#: kairox-manifests' own formats in probing order: ``(name, priority, target, fallback)``
#: (the same list as :func:`kairox_manifests.formats.builtin_formats`)
BUILTIN_FORMATS: tuple[tuple[str, int, str, bool], ...] = (
    ("agent-plugins", 5, "kairox_manifests.formats.agent_plugins:AgentPluginsFormat", False),
    ("kairox", 10, "kairox_manifests.formats.kairox:KairoxFormat", False),
    ("codex", 20, "kairox_manifests.formats.codex:CodexFormat", False),
    ("claude", 30, "kairox_manifests.formats.claude:ClaudeFormat", False),
    ("claude-layout", 100, "kairox_manifests.formats.claude:ClaudeDefaultLayout", True),
)


def _module_exists(module: str) -> bool:
    """Whether ``module`` can be found, without running it or the packages it is in (a
    package's ``__init__`` may import the very code this defers)."""
    if module in sys.modules:
        return True
    parts = module.split(".")
    package = sys.modules.get(parts[0])  # the registering plugin's own package, as a rule
    spec = getattr(package, "__spec__", None)
    for i in range(1, len(parts) if spec is not None else 0):
        locations = spec.submodule_search_locations if spec is not None else None
        if locations is None:
            break
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[: i + 1]), list(locations))
    else:
        if spec is not None:
            return True
    from importlib.util import find_spec  # not found on the plain path: ask the whole import system

    return find_spec(module) is not None


class LazyFormat:
    """A manifest format that imports its code on first use (see the module docstring)."""

    def __init__(
        self,
        name: str,
        priority: int,
        target: str,
        *,
        fallback: bool = False,
        locations: Callable[..., list[Any]] | None = None,
    ) -> None:
        module, sep, attribute = target.partition(":")
        if not sep or not module or not attribute:
            raise ValueError(f"target {target!r} is not 'package.module:attribute'")
        if not _module_exists(module):
            raise ModuleNotFoundError(f"manifest format {name}: no module named {module!r}", name=module)
        self.name = name
        self.priority = priority
        #: asked only when no other format recognises the directory (Claude's manifest-less layout)
        self.fallback = fallback
        self.target = target
        self._locations = locations
        self._format: Any = None

    def __repr__(self) -> str:
        state = "loaded" if self._format is not None else "not loaded"
        return f"LazyFormat({self.name!r}, {self.priority}, {self.target!r}, {state})"

    @property
    def format(self) -> Any:
        """The real format, imported and built the first time it is needed."""
        if self._format is None:
            fmt = load_target(self.target)()
            if getattr(fmt, "name", None) != self.name or getattr(fmt, "priority", None) != self.priority:
                raise ValueError(
                    f"manifest format {self.target} is {getattr(fmt, 'name', '?')!r} (priority "
                    f"{getattr(fmt, 'priority', '?')}), registered as {self.name!r} (priority {self.priority})"
                )
            self._format = fmt
        return self._format

    def probe(self, root: Path, *, reader: Root | None = None, home: Path | None = None) -> Any | None:
        return probe_format(self.format, root, reader, home=home)

    def locations(self, workspace: Path, env: Mapping[str, str], config: Any = None) -> list[Any]:
        """The format's own plugin locations (none unless ``locations`` was given); never imports the format."""
        if self._locations is None:
            return []
        return list(self._locations(workspace, env, config=config))

    async def activate(self, manifest: Any, context: Any) -> Any:
        """Run the plugin's code (the real format's ``activate``); a format that runs no code
        says so."""
        activate = getattr(self.format, "activate", None)
        if activate is None:
            raise RuntimeError(f"manifest format {self.name} cannot run plugin code")
        return await activate(manifest, context)


def probe_format(fmt: Any, root: Path, reader: Root | None, *, home: Path | None = None) -> Any | None:
    """``fmt.probe(root)``, given the bundle's contained root as ``reader`` when there is one
    and the format's ``probe`` takes it (every kairox format does: it reads the bundle's
    files through it), and the runtime's kairox ``home`` when there is one and the format's
    ``probe`` takes it (Agent Plugins: a plugin's data folder is under it). A format whose
    ``probe`` takes only the folder reads on its own."""
    kwargs: dict[str, Any] = {}
    if reader is not None and _takes(fmt, "reader"):
        kwargs["reader"] = reader
    if home is not None and _takes(fmt, "home"):
        kwargs["home"] = home
    return fmt.probe(root, **kwargs)


def _takes(fmt: Any, name: str) -> bool:
    import inspect

    try:
        return name in inspect.signature(fmt.probe).parameters
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        return False


def builtin_lazy_formats() -> list[LazyFormat]:
    """kairox-manifests' formats as registered: Agent Plugins, Kairox, Codex, Claude, Claude's
    manifest-less layout."""
    return [
        LazyFormat(name, priority, target, fallback=fallback) for name, priority, target, fallback in BUILTIN_FORMATS
    ]
