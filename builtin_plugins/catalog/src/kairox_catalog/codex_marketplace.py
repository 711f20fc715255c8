"""Codex ``marketplace.json`` (``.agents/plugins/marketplace.json``) -> plugin entries.

What Codex reads (``codex-rs/core-plugins/src/marketplace.rs``)::

    {"name": "...", "interface": {"displayName": "..."},
     "plugins": [{"name": "...",
                  "source": "./plugins/x"
                          | {"source": "local", "path": "./plugins/x"}
                          | {"source": "url", "url": "...", "path"?, "ref"?, "sha"?}
                          | {"source": "git-subdir", "url": "...", "path": "...", "ref"?, "sha"?},
                  "policy": {"installation": "AVAILABLE" | "INSTALLED_BY_DEFAULT" | "NOT_AVAILABLE",
                             "authentication": "ON_INSTALL" | "ON_USE", "products": [...]},
                  "category": "..."}]}

A local path starts with ``./`` and is relative to the marketplace root (the
directory holding ``.agents/plugins/``, or ``.claude-plugin/`` / ``.codex-plugin/`` for a
document kept there: :func:`kairox_catalog.marketplace.marketplace_base`); it may not
contain ``..``. A ``url`` or
``git-subdir`` source is a git repository (``owner/name`` is GitHub). An entry
whose policy is ``NOT_AVAILABLE`` is not offered (an entry error says so). A local
plugin's own ``.codex-plugin/plugin.json`` (or ``.claude-plugin/plugin.json``)
gives the entry its description, version and display name when the marketplace
is a local file.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from kairox.files import Root, loads_bounded

from ._collect import collect
from ._paths import subpath_problem
from ._reader import EntryProblem, Obj, safe_name
from .marketplace import marketplace_base, path_source
from .model import CatalogEntry, EntryError, InstallSource, Requirement, SourceResult

__all__ = [
    "CODEX_MARKETPLACE",
    "codex_plugin_to_entry",
    "is_codex_marketplace",
    "parse_codex_marketplace",
]

#: where Codex looks for a marketplace inside its root
CODEX_MARKETPLACE = ".agents/plugins/marketplace.json"
_POLICIES = ("AVAILABLE", "INSTALLED_BY_DEFAULT", "NOT_AVAILABLE")
_AUTH = ("ON_INSTALL", "ON_USE")
_SOURCES = ("local", "url", "git-subdir")
_MAX_MANIFEST = 1024 * 1024
_PLUGIN_MANIFESTS = (".codex-plugin/plugin.json", ".claude-plugin/plugin.json")


def is_codex_marketplace(data: Any, location: str = "") -> bool:
    """A ``plugins[]`` document in Codex's shape: found at ``.agents/plugins/marketplace.json``,
    or with an entry Claude's marketplaces do not have (``source: local``, a ``policy``)."""
    if not isinstance(data, dict) or not isinstance(data.get("plugins"), list):
        return False
    if location.replace("\\", "/").rstrip("/").endswith(CODEX_MARKETPLACE):
        return True
    for item in data["plugins"][:200]:
        if not isinstance(item, dict):
            continue
        src = item.get("source")
        if isinstance(src, dict) and src.get("source") == "local":
            return True
        if isinstance(item.get("policy"), dict):
            return True
    return False


def _local(path: str, base: str, where: str) -> InstallSource:
    if not path.startswith("./"):
        raise EntryProblem(where, f"a local plugin path must start with ./ (got {path!r})")
    rel = path[2:].strip("/")
    if not rel:
        raise EntryProblem(where, "a local plugin path must not be empty")
    parts = rel.replace("\\", "/").split("/")
    if any(p in ("", ".", "..") for p in parts) or ":" in rel:
        raise EntryProblem(where, f"a local plugin path must stay within the marketplace root (got {path!r})")
    return path_source(rel, base, where)


def _git_url(url: str, where: str) -> str:
    url = url.strip()
    if not url:
        raise EntryProblem(where, "must not be empty")
    if url.startswith("-"):
        raise EntryProblem(where, f"{url[:40]!r} starts with '-'")
    head = url.split("/")
    if "://" not in url and not url.startswith(("git@", "./", "../", "/")) and len(head) == 2 and all(head):
        return f"https://github.com/{url}.git"  # owner/name: GitHub, as in Codex
    return url


def _source(plugin: Obj, base: str) -> tuple[InstallSource, tuple[Requirement, ...]]:
    raw = plugin.data.get("source")
    where = plugin.path("source")
    if isinstance(raw, str):
        return _local(raw, base, where), ()
    src = plugin.obj("source")
    if src is None:
        raise EntryProblem(where, "required field is missing")
    kind = src.text("source", required=True)
    git = (Requirement("git"),)
    ref = src.text("sha") or src.text("ref")
    if kind == "local":
        return _local(src.text("path", required=True), base, src.path("path")), ()
    if kind == "url":
        subdir = src.text("path")
        if subdir:
            subdir = subdir.removeprefix("./")
            problem = subpath_problem(subdir)
            if problem is not None:
                raise EntryProblem(src.path("path"), problem)
        return InstallSource(
            type="git", url=_git_url(src.text("url", required=True), src.path("url")), path=subdir, ref=ref
        ), git
    if kind == "git-subdir":
        subdir = src.text("path", required=True).removeprefix("./")
        problem = subpath_problem(subdir)
        if problem is not None:
            raise EntryProblem(src.path("path"), problem)
        url = _git_url(src.text("url", required=True), src.path("url"))
        return InstallSource(type="git", url=url, path=subdir, ref=ref), git
    raise EntryProblem(src.path("source"), f"unknown source type {kind!r} ({', '.join(_SOURCES)})")


def _plugin_manifest(source: InstallSource) -> dict[str, Any]:
    """The local plugin's own manifest (its description, version, interface), or ``{}``."""
    if source.type != "path" or urlsplit(source.path).scheme in ("http", "https") or not source.path:
        return {}
    contained = Root(source.path, label=f"plugin {source.path}")
    for rel in _PLUGIN_MANIFESTS:
        try:  # inside the plugin's folder: a manifest linked elsewhere is not read
            data = loads_bounded(contained.read_text(rel, max_bytes=_MAX_MANIFEST), json.loads)
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            return data
    return {}


def _str(data: Any, key: str) -> str:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, str) else ""


def codex_plugin_to_entry(data: Any, where: str, *, base: str, marketplace: str = "") -> CatalogEntry | None:
    """One ``plugins[]`` entry as a catalog entry; ``EntryProblem`` naming the field when it cannot be."""
    plugin = Obj(data, where)
    raw_name = plugin.text("name", required=True)
    name = safe_name(raw_name)
    if not name:
        raise EntryProblem(plugin.path("name"), f"no usable name in {raw_name!r}")
    policy = plugin.obj("policy")
    installation = "AVAILABLE"
    if policy is not None:
        installation = policy.text("installation") or "AVAILABLE"
        if installation not in _POLICIES:
            raise EntryProblem(
                policy.path("installation"), f"expected one of {', '.join(_POLICIES)}, got {installation!r}"
            )
        auth = policy.text("authentication")
        if auth and auth not in _AUTH:
            raise EntryProblem(policy.path("authentication"), f"expected one of {', '.join(_AUTH)}, got {auth!r}")
        policy.strings("products")
    install, requirements = _source(plugin, base)
    if installation == "NOT_AVAILABLE":
        raise EntryProblem(plugin.path("policy.installation"), "not available for install (NOT_AVAILABLE)")
    own = _plugin_manifest(install)
    interface = own.get("interface") if isinstance(own.get("interface"), dict) else {}
    tags = [t for t in (plugin.text("category"), _str(interface, "category")) if t]
    if installation == "INSTALLED_BY_DEFAULT":
        tags.append("installed-by-default")
    if marketplace:
        tags.append(f"marketplace:{marketplace}")
    keywords = own.get("keywords")
    if isinstance(keywords, list):
        tags += [k for k in keywords if isinstance(k, str)][:20]
    description = _str(own, "description") or _str(interface, "shortDescription")
    version = _str(own, "version").strip()
    return CatalogEntry(
        name=name,
        kind="plugin",
        title=_str(interface, "displayName") or raw_name,
        description=description,
        version=version,
        requirements=requirements,
        install_hint=f"installs into the plugins directory from {install.describe()}",
        install=install,
        homepage=_str(interface, "websiteURL") or _str(interface, "websiteUrl") or _str(own, "homepage"),
        repository=_str(own, "repository"),
        tags=tuple(dict.fromkeys(tags)),
    )


def parse_codex_marketplace(data: Any, *, source: str, location: str = "") -> SourceResult:
    """Entries of a Codex marketplace document; every bad entry is an :class:`EntryError`."""
    try:
        doc = Obj(data, "")
        doc.text("name", required=True)
        doc.obj("interface")
        plugins = doc.items("plugins")
    except EntryProblem as exc:
        return SourceResult(errors=(EntryError(source, exc.where, exc.reason),))
    name = doc.text("name")
    base = marketplace_base(location) if location else ""
    return collect(
        source,
        [(f"plugins[{i}]", item) for i, item in enumerate(plugins)],
        lambda item, where: codex_plugin_to_entry(item, where, base=base, marketplace=name),
    )
