"""Philont ``plugin.json`` code plugins as a kairox manifest format.

A plugin is a directory with ``plugin.json`` (``id``, ``name``, ``version``,
``description``, ``main``, ``requiresEnv``, ``providesTools``, ``sandbox``; one whose
``$schema`` names an Agent Plugins schema is Agent Plugins', not Philont's);
they live in ``<workspace>/.philont/plugins/`` (priority 100) and
``~/.philont/plugins/`` (priority 50). ``main`` is JavaScript (``index.js``,
the default; ``.mjs``/``.cjs``; run by Node) or Python (a ``.py`` file or a
module such as ``weather.plugin``) inside the plugin. ``domain`` and
``capability`` are the policy defaults of the plugin's tools. Kairox reads two
extensions: ``permissions`` and ``compatibility`` (as in ``.kairox-plugin/plugin.json``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional

import attrs

from kairox.files import Refused, Root
from kairox_manifests import (
    BaseFormat,
    BundleManifest,
    CodeEntry,
    Collector,
    Contribution,
    Location,
    ManifestError,
    Problem,
    RawCompatibility,
    RawPermissions,
    bundle_root,
    check_name,
    compatibility_from,
    manifest_present,
    parse_document,
    permissions_from,
    person_from,
    read_json,
)
from kairox_manifests.formats.agent_plugins import is_agent_plugins_document
from kairox_manifests.paths import resolve_inside

from .locations import philont_format_locations, philont_locations

if TYPE_CHECKING:
    from kairox_manifests.activation import Activation, ActivationContext

__all__ = [
    "DEFAULT_MAINS",
    "JS_SUFFIXES",
    "PhilontFormat",
    "PhilontManifestDoc",
    "is_javascript",
    "philont_locations",
    "resolve_main",
]

#: the entry tried when ``main`` is not set, in order (Philont's default is ``index.js``)
DEFAULT_MAINS = ("index.js", "index.mjs", "index.cjs", "index.py", "main.py", "plugin.py", "__init__.py")
JS_SUFFIXES = (".js", ".mjs", ".cjs")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


@attrs.frozen
class PhilontManifestDoc:
    """The fields of a Philont ``plugin.json``."""

    id: str
    name: Optional[str] = None
    version: Optional[str] = None
    description: Optional[str] = None
    author: Any = None
    main: Optional[str] = None
    requiresEnv: list[str] = attrs.field(factory=list)
    providesTools: list[str] = attrs.field(factory=list)
    sandbox: Literal["direct", "worker"] = "direct"
    #: the policy domain/capability of its tools that declare none (default: system/execute)
    domain: Optional[Literal["local", "network", "system"]] = None
    capability: Optional[Literal["read", "write", "execute"]] = None
    permissions: Optional[RawPermissions] = None
    compatibility: Optional[RawCompatibility] = None


def resolve_main(root: Path | Root, main: str | None, *, file: str) -> Path:
    """The entry file: a JavaScript file (``.js``, ``.mjs``, ``.cjs``), a ``.py`` path, a
    dotted module (``pkg.mod`` -> ``pkg/mod.py`` or ``pkg/mod/__init__.py``), or the first of
    :data:`DEFAULT_MAINS` that exists, inside the plugin's folder (its contained ``root``):
    an entry that leads outside it is a :class:`ManifestError` naming the file and ``main``."""
    try:
        return _main(bundle_root(root), main, file=file)
    except Refused as exc:
        raise ManifestError(f"{exc.file}: {exc.reason}", file=file, path="main") from None


def _main(root: Root, main: str | None, *, file: str) -> Path:
    if main is None:
        for candidate in DEFAULT_MAINS:
            if root.kind(candidate) == "file":
                return resolve_inside(root, candidate, file=file, path="main")
        raise ManifestError(f"no entry point ({', '.join(DEFAULT_MAINS)}); set main", file=file, path="main")
    if main.endswith((".ts", ".mts", ".cts", ".tsx")):
        raise ManifestError(
            f"{main!r} is TypeScript; point main at the compiled JavaScript (.js, .mjs, .cjs)", file=file, path="main"
        )
    if main.endswith((*JS_SUFFIXES, ".py")) or "/" in main:
        target = resolve_inside(root, main, file=file, path="main", allow_root=False)
        if root.kind(target) == "dir":
            index = (target / n for n in ("index.js", "__init__.py") if root.kind(target / n) == "file")
            target = next(index, target / "index.js")
    elif _MODULE.match(main):
        rel = main.replace(".", "/")
        target = resolve_inside(root, f"{rel}.py", file=file, path="main")
        if root.kind(target) != "file":
            target = resolve_inside(root, f"{rel}/__init__.py", file=file, path="main")
    else:
        raise ManifestError(f"{main!r} is neither a JavaScript or .py file nor a module name", file=file, path="main")
    if root.kind(target) != "file":
        raise ManifestError(f"{main!r} does not exist", file=file, path="main")
    return root.locate(target)  # an index.js found in a folder may itself be a link


def is_javascript(main: Path) -> bool:
    return main.suffix.lower() in JS_SUFFIXES


class PhilontFormat(BaseFormat):
    name = "philont"
    priority = 40
    manifest = "plugin.json"

    def locations(self, workspace: Path, env: Mapping[str, str], config: Any = None) -> list[Location]:
        return philont_format_locations(workspace, env, config)

    def probe(self, root: Path, *, reader: Root | None = None) -> BundleManifest | None:
        """The plugin at ``root``, its files read inside its folder (``reader``, the contained
        root discovery made; a link leading outside it is refused, naming the file)."""
        contained = bundle_root(root) if reader is None else reader
        file = contained.path / self.manifest
        if not manifest_present(contained, file):
            return None
        data = read_json(file, contained)
        if not isinstance(data, dict) or "id" not in data:
            return None  # some other tool's plugin.json (a Philont manifest always has an id)
        if is_agent_plugins_document(data):
            # an Agent Plugins manifest (its $schema says so): its `id` or `main` is an unknown
            # field there, which must mean nothing (Agent Plugins 1.0.0 §5.2); never run as code
            return None
        return self.parse(contained, data, file)

    def parse(self, root: Path | Root, data: Any, file: Path) -> BundleManifest:
        f = str(file)
        contained = bundle_root(root)
        root = contained.real
        problems: list[Problem] = []
        doc = parse_document(data, PhilontManifestDoc, file=f, problems=problems)
        plugin_id = check_name(doc.id, file=f, path="id")
        main = resolve_main(contained, doc.main, file=f)
        for i, var in enumerate(doc.requiresEnv):
            if not _ENV_NAME.match(var):
                raise ManifestError(f"{var!r} is not an environment variable name", file=f, path=f"requiresEnv[{i}]")
        out = Collector(problems)
        for i, tool in enumerate(doc.providesTools):
            if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool):
                raise ManifestError(f"{tool!r} is not a tool name", file=f, path=f"providesTools[{i}]")
            out.add(Contribution("tool", tool, main, {"declared": True}), file=f, path=f"providesTools[{i}]")
        metadata: dict[str, Any] = {
            "sandbox": doc.sandbox,
            "language": "javascript" if is_javascript(main) else "python",
        }
        if doc.domain:
            metadata["domain"] = doc.domain
        if doc.capability:
            metadata["capability"] = doc.capability
        if doc.name:
            metadata["displayName"] = doc.name
        if doc.requiresEnv:
            metadata["requiresEnv"] = list(doc.requiresEnv)
        return self.manifest_of(
            plugin_id,
            root,
            file,
            out,
            version=doc.version,
            description=doc.description or "",
            publisher=person_from(doc.author, file=f, path="author", problems=problems),
            permissions=permissions_from(doc.permissions),
            compatibility=compatibility_from(doc.compatibility, file=f, path="compatibility", problems=problems),
            metadata=metadata,
            code=CodeEntry(
                runtime="philont",
                main=main,
                sandbox=doc.sandbox,
                requires_env=tuple(doc.requiresEnv),
                tool_prefix=plugin_id,
            ),
        )

    async def activate(self, manifest: BundleManifest, context: ActivationContext) -> Activation:
        """Run the plugin's ``register(ctx)``: JavaScript in Node (a worker of its own, or the shared
        process), Python in this process (``direct``) or in a worker."""
        assert manifest.code is not None
        # a listed variable that is not set is simply absent from the code's environment
        # (``plugin inspect`` warns about it): requiresEnv is a whitelist, not a precondition
        if is_javascript(manifest.code.main):
            from .javascript import activate_javascript

            return await activate_javascript(manifest, context)
        if manifest.code.sandbox == "worker":
            from .worker import activate_worker

            return await activate_worker(manifest, context)
        from .direct import activate_direct

        return await activate_direct(manifest, context)
