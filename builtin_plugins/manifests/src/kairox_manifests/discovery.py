"""Finding plugins: where to look, probing each directory, one winner per name.

Locations, highest priority first (a plugin name found twice loads from the
higher one; the other is reported as shadowed):

- 200: a per-plugin ``path`` override in the settings;
- 150: ``[plugins] paths`` and the settings' ``paths`` (each a plugin, or a directory of plugins);
- 100: ``<workspace>/.kairox/plugins/`` (and format-specific workspace locations, e.g. Philont's);
- 50: ``$KAIROX_HOME/plugins/`` (and format-specific user locations).

Probing asks each registered manifest format in ascending ``priority``; the
first that recognises the directory wins. A broken manifest never stops
discovery: the candidate carries its :class:`ManifestError`.

Every folder is read contained (:class:`kairox.files.Root`): a workspace location
inside the workspace (a ``[plugins] paths`` entry or a plugin folder of the
workspace's that leads outside it is a failed candidate saying so), a user location
inside itself, and each bundle inside its own folder, which is the root its format
reads everything through (``probe(root, reader=...)``). A folder ``readable_roots``
in the user's own ``[files]`` names may be reached by links all the same.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from kairox.ext import user_home
from kairox.files import Refused, Root

from .config import SECTION, BundlesConfig
from .errors import ManifestError
from .lazyformat import probe_format
from .location import PRIORITY_CONFIGURED, PRIORITY_OVERRIDE, PRIORITY_USER, PRIORITY_WORKSPACE, Location
from .paths import bundle_root, is_inside
from .settings import BundleSettings, SettingsStore

if TYPE_CHECKING:
    from kairox import Runtime
    from kairox.ext import WorkspaceTrust

    from .model import BundleManifest

__all__ = ["Candidate", "DiscoveryContext", "Location", "discover", "probe", "sorted_formats"]

logger = logging.getLogger(__name__)


@attrs.define
class Candidate:
    """A directory a format recognised (or tried to)."""

    root: Path
    location: Location
    manifest: BundleManifest | None = None
    error: ManifestError | None = None
    shadowed_by: Candidate | None = None
    #: whether it may load without asking (decided once, see :func:`.trust.candidate_trust`)
    trusted: bool | None = None
    trust_reason: str = ""

    @property
    def name(self) -> str:
        return self.manifest.name if self.manifest is not None else self.root.name

    @property
    def scope(self) -> str:
        return self.location.scope


@attrs.define
class DiscoveryContext:
    workspace: Path
    env: Mapping[str, str]
    home: Path
    config: BundlesConfig
    settings: BundleSettings
    formats: list[Any]
    #: the file that set each [plugins] key (to tell user from workspace config)
    config_sources: dict[str, str] = attrs.field(factory=dict)
    #: the runtime's whole configuration (formats may read their own section)
    runtime_config: Any = None
    #: the runtime's workspace trust (``None``: only the user's config can trust a workspace bundle)
    trust: WorkspaceTrust | None = None
    #: ``[plugins]`` as the user's own files set it, and as the workspace's files do (raw tables):
    #: a workspace's values never change how the user's own bundles load
    user_values: dict[str, Any] = attrs.field(factory=dict)
    workspace_values: dict[str, Any] = attrs.field(factory=dict)
    #: folders outside a root that links may reach: the user's own ``[files] readable_roots``
    readable_roots: tuple[str, ...] = ()

    def contained(self, folder: Path, *, label: str = "") -> Root:
        """``folder`` as a contained root (as :meth:`kairox.Runtime.contained` makes one)."""
        return Root(folder, label=label, also=self.readable_roots)

    def bundle(self, folder: Path) -> Root:
        """The contained root of the bundle in ``folder``: everything it contains is read inside it."""
        return bundle_root(folder, also=self.readable_roots)

    @property
    def workspace_root(self) -> Root:
        return self.contained(self.workspace, label="the workspace")

    @classmethod
    def from_runtime(cls, runtime: Runtime, *, settings: BundleSettings | None = None) -> DiscoveryContext:
        config = runtime.config.section(SECTION) if SECTION in runtime.config.sections else BundlesConfig()
        sources = {
            key: runtime.config.source_of(SECTION, key) or ""
            for key in ("paths", "workspace_trust", "disabled", "enabled")
        }
        return cls(
            workspace=runtime.workspace,
            env=runtime.env,
            home=runtime.home or user_home(runtime.env),
            config=config,
            settings=settings
            or SettingsStore(runtime.workspace, _settings_env(runtime), root=runtime.workspace_root).load(),
            formats=sorted_formats(runtime.manifest_formats),
            config_sources=sources,
            runtime_config=runtime.config,
            trust=runtime.trust,
            user_values=_scoped_values(runtime, "user"),
            workspace_values=_scoped_values(runtime, "workspace"),
            readable_roots=runtime.readable_roots,
        )

    def source_scope(self, key: str) -> str:
        """``workspace`` when ``[plugins] key`` was set by a workspace file, else ``user``."""
        source = self.config_sources.get(key) or ""
        if not source:
            return "user"
        config = self.runtime_config
        if config is not None and hasattr(config, "scope_of"):
            return str(config.scope_of(source))
        real = Path(os.path.realpath(source))
        return "workspace" if is_inside(real, Path(os.path.realpath(self.workspace))) else "user"

    def values_for(self, scope: str) -> dict[str, Any]:
        """The raw ``[plugins]`` values that apply to bundles of ``scope``: a user bundle
        sees only the user's files; a workspace bundle sees both (the workspace's last)."""
        if scope == "user" or self.runtime_config is None:
            return self.user_values if self.runtime_config is not None else attrs.asdict(self.config)
        return {**self.user_values, **self.workspace_values}


def _scoped_values(runtime: Runtime, scope: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for file, data in runtime.config.documents:
        part = data.get(SECTION)
        if isinstance(part, dict) and runtime.config.scope_of(file) == scope:
            out.update(part)
    return out


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _settings_env(runtime: Runtime) -> dict[str, str]:
    env = dict(runtime.env)
    if runtime.home is not None:
        env["KAIROX_HOME"] = str(runtime.home)
    return env


def sorted_formats(formats: Iterable[Any]) -> list[Any]:
    return sorted(formats, key=lambda f: (getattr(f, "priority", 0), getattr(f, "name", "")))


def ask_format(fmt: Any, root: Path, reader: Root, home: Path | None = None) -> BundleManifest | None:
    """``fmt.probe(root)`` (with the bundle's contained ``reader`` when the format takes one);
    a format's own bug is this directory's :class:`ManifestError`."""
    try:
        manifest: BundleManifest | None = probe_format(fmt, root, reader, home=home)
    except ManifestError:
        raise
    except Refused as exc:  # a format that reads through the reader and lets a refusal out
        raise ManifestError(exc.reason, file=exc.file) from None
    except Exception as exc:  # a format's own bug costs this plugin only
        logger.debug("format %s failed on %s", getattr(fmt, "name", fmt), root, exc_info=True)
        raise ManifestError(
            f"manifest format {getattr(fmt, 'name', '?')} failed: {type(exc).__name__}: {exc}", file=str(root)
        ) from None
    return manifest


def probe(
    root: Path, formats: Iterable[Any], *, reader: Root | None = None, home: Path | None = None
) -> tuple[BundleManifest | None, ManifestError | None]:
    """Ask every format, in order: a directory with several manifests (``.claude-plugin/``
    and ``.codex-plugin/``...) is read by each, and the manifests are merged into one
    (:func:`~kairox_manifests.merge.merge_manifests`: metadata from the first, the union
    of the components, a warning where they disagree). A format marked ``fallback``
    (Claude's manifest-less layout) is asked only when no other recognises ``root``.
    Any manifest that is wrong fails the whole directory: a later one's components
    never load without the first one's permissions.

    ``reader`` is the bundle's contained root (default: ``root`` itself, :func:`.paths.bundle_root`):
    the formats read every file of the bundle through it. ``home`` is the runtime's kairox home
    (a format that keeps a folder per plugin there, Agent Plugins' data folder, is told it)."""
    contained = bundle_root(root) if reader is None else reader
    ordered = list(formats)
    found: list[BundleManifest] = []
    try:
        for fmt in ordered:
            if not getattr(fmt, "fallback", False):
                manifest = ask_format(fmt, root, contained, home)
                if manifest is not None:
                    found.append(manifest)
        if found:
            from .merge import merge_manifests

            return merge_manifests(found), None
        for fmt in ordered:
            if getattr(fmt, "fallback", False):
                manifest = ask_format(fmt, root, contained, home)
                if manifest is not None:
                    return manifest, None
    except ManifestError as exc:
        return None, exc
    return None, None


def _expand_path(value: str, base: Path, env: Mapping[str, str], *, expand_vars: bool = True) -> Path:
    """``~`` and (for the user's own settings) ``$VAR`` expanded, relative to ``base``;
    a path a workspace wrote never reads the environment."""
    text = os.path.expandvars(value) if expand_vars and "$" in value else value
    if text.startswith("~"):
        home = env.get("HOME")
        text = (home + text[1:]) if home and text[:2] in ("~", "~/") else os.path.expanduser(text)
    path = Path(text)
    return path if path.is_absolute() else base / path


def locations(ctx: DiscoveryContext) -> list[Location]:
    out = [
        Location(ctx.home / "plugins", "user", PRIORITY_USER, "user plugins"),
        Location(ctx.workspace / ".kairox" / "plugins", "workspace", PRIORITY_WORKSPACE, "workspace plugins"),
    ]
    if ctx.runtime_config is None:  # a bare context: the structured config is all there is
        configured = [(v, ctx.source_scope("paths")) for v in ctx.config.paths]
    else:  # the user's paths and the workspace's, each with its own scope (neither replaces the other)
        configured = [(v, "user") for v in _strings(ctx.user_values.get("paths"))]
        configured += [(v, "workspace") for v in _strings(ctx.workspace_values.get("paths"))]
    for value, paths_scope in configured:
        base = ctx.workspace if paths_scope == "workspace" else ctx.home
        path = _expand_path(value, base, ctx.env, expand_vars=paths_scope == "user")
        out.append(Location(path, paths_scope, PRIORITY_CONFIGURED, "[plugins] paths", "auto"))
    for value, scope in ctx.settings.paths:
        base = ctx.workspace if scope == "workspace" else ctx.home
        path = _expand_path(value, base, ctx.env, expand_vars=scope == "user")
        out.append(Location(path, scope, PRIORITY_CONFIGURED, f"{scope} settings", "auto"))
    for name, entry in ctx.settings.plugins.items():
        override = entry.get("path")
        if isinstance(override, str) and override:
            scope = ctx.settings.override_scopes.get(name, "user")
            base = ctx.workspace if scope == "workspace" else ctx.home
            path = _expand_path(override, base, ctx.env, expand_vars=scope == "user")
            out.append(Location(path, scope, PRIORITY_OVERRIDE, f"settings path of {name}", "plugin"))
    for fmt in ctx.formats:
        extra = getattr(fmt, "locations", None)
        if extra is None:
            continue
        try:
            wants_config = "config" in inspect.signature(extra).parameters
            found = (
                extra(ctx.workspace, ctx.env, config=ctx.runtime_config)
                if wants_config
                else extra(ctx.workspace, ctx.env)
            )
            out.extend(found)
        except Exception:
            logger.exception("manifest format %s could not list its locations", getattr(fmt, "name", fmt))
    return out


def _location_root(ctx: DiscoveryContext, location: Location) -> Root:
    """What a location is read inside: a workspace's inside the workspace, a user's inside itself."""
    if location.scope == "workspace":
        return ctx.workspace_root
    return ctx.contained(location.path, label=str(location.path))


def _refused(path: Path, location: Location, reason: str) -> Candidate:
    """A folder that may not be read, as a failed candidate saying where and why."""
    return Candidate(path, location, None, ManifestError(f"{reason} ({location.origin})", file=str(path)))


def _scan(location: Location, ctx: DiscoveryContext) -> list[Candidate]:
    path, formats = location.path, ctx.formats
    outer = _location_root(ctx, location)
    try:
        if outer.kind(path) != "dir":
            return []
    except Refused as exc:
        return [_refused(path, location, exc.reason)]
    if location.mode in ("plugin", "auto"):
        real = outer.locate(path)
        manifest, error = probe(path, formats, reader=ctx.bundle(real), home=ctx.home)
        if manifest is not None or error is not None or location.mode == "plugin":
            if manifest is None and error is None:
                error = ManifestError("no manifest format recognises this directory", file=str(path))
            return [Candidate(real, location, manifest, error)]
    out: list[Candidate] = []
    for entry in outer.entries(path):
        if entry.name.startswith("."):
            continue
        if entry.refused:
            if entry.kind == "dir":  # a plugin folder that is a link to a folder outside
                out.append(_refused(entry.path, location, entry.refused))
            continue
        if entry.kind != "dir" or entry.real is None:
            continue
        manifest, error = probe(entry.path, formats, reader=ctx.bundle(entry.real), home=ctx.home)
        if manifest is None and error is None:
            logger.debug("%s: not a plugin (no format recognises it)", entry.path)
            continue
        out.append(Candidate(entry.real, location, manifest, error))
    return out


def discover(ctx: DiscoveryContext) -> list[Candidate]:
    """Every candidate, winners first in priority order; losers have ``shadowed_by`` set."""
    seen: dict[Path, Candidate] = {}
    for location in sorted(locations(ctx), key=lambda loc: -loc.priority):
        for cand in _scan(location, ctx):
            previous = seen.get(cand.root)
            if previous is None:
                seen[cand.root] = cand
            elif previous.scope == "workspace" and cand.scope == "user":
                # the same directory reached as a user plugin (workspace == home): trust the user's view
                seen[cand.root] = attrs.evolve(previous, location=cand.location)
    candidates = sorted(seen.values(), key=lambda c: -c.location.priority)
    named = [c for c in candidates if c.manifest is not None]
    if not named:
        return candidates
    # an untrusted copy never shadows a trusted one of the same name: trusted copies win first
    from .trust import candidate_trust

    order = sorted(named, key=lambda c: (not candidate_trust(ctx, c)[0], -c.location.priority))
    winners: dict[str, Candidate] = {}
    for cand in order:
        winner = winners.get(cand.name)
        if winner is None:
            winners[cand.name] = cand
        else:
            cand.shadowed_by = winner
            workspace_copy, user_copy = (winner, cand) if winner.scope == "workspace" else (cand, winner)
            if workspace_copy.scope == "workspace" and user_copy.scope == "user" and ctx.trust is not None:
                # trusting the workspace lets its copy replace the user's own: say so before they trust it
                from .trust import bundle_key

                if workspace_copy.manifest is not None:
                    key = bundle_key(workspace_copy.manifest, ctx.workspace)
                    ctx.trust.note(
                        key, f"replaces your own bundle {user_copy.name} from {user_copy.root} in this workspace"
                    )
    return candidates
