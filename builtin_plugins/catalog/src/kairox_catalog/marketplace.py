"""Claude Code ``marketplace.json`` -> plugin entries.

``{"name", "owner": {"name"}, "metadata": {"pluginRoot"}, "plugins": [{"name",
"source", ...}]}``; ``source`` is a relative path (``"./plugins/x"``, relative
to the marketplace root, the directory holding ``.claude-plugin/``) or an
object ``{"source": "github" | "url" | "git-subdir" | "npm", ...}``.
"""

from __future__ import annotations

import posixpath
from typing import Any
from urllib.parse import urljoin, urlsplit

from kairox_manifests.model import METADATA_FIELDS

from ._paths import subpath_problem
from ._reader import EntryProblem, Obj, safe_name
from .model import CatalogEntry, InstallSource, Requirement

__all__ = [
    "MANIFEST_FIELDS",
    "MARKETPLACE_LAYOUTS",
    "bundle_to_entry",
    "inline_manifest",
    "marketplace_base",
    "path_source",
]


#: the folders a marketplace document is kept in, below its root: Claude Code's
#: ``.claude-plugin/``, Codex's ``.agents/plugins/`` (Codex reads ``.claude-plugin/`` too),
#: and the ``.codex-plugin/`` next to a Codex plugin's own manifest
MARKETPLACE_LAYOUTS = ((".agents", "plugins"), (".claude-plugin",), (".codex-plugin",))


def marketplace_base(location: str) -> str:
    """The marketplace root of a document at ``location`` (path or URL): the directory
    holding its layout folder (:data:`MARKETPLACE_LAYOUTS`), else the document's own
    directory. A local source is relative to it, as in Claude Code and Codex."""
    remote = urlsplit(location).scheme in ("http", "https")
    path = location if remote else location.removeprefix("file://")
    parent = path.rsplit("/", 1)[0] if "/" in path else ""
    parts = parent.split("/")
    for layout in MARKETPLACE_LAYOUTS:
        if len(parts) > len(layout) and tuple(parts[-len(layout) :]) == layout:
            parent = "/".join(parts[: -len(layout)]) or ("/" if path.startswith("/") else "")
            break
    return parent + "/" if remote else parent


def _escapes(path: str) -> bool:
    return ".." in path.replace("\\", "/").split("/") or path.startswith(("/", "\\")) or ":" in path


def _relative(path: str, base: str, plugin_root: str, where: str) -> InstallSource:
    if not path.startswith("./") and plugin_root:
        path = posixpath.join(plugin_root, path)
    if _escapes(path):
        raise EntryProblem(where, f"source path {path!r} escapes the marketplace root")
    return path_source(path, base, where)


def path_source(path: str, base: str, where: str) -> InstallSource:
    """The ``path`` install source of a local plugin at ``path`` below the marketplace root ``base``
    (a directory or an http(s) URL); ``path`` must be a subpath (else an entry problem at ``where``)."""
    problem = subpath_problem(path)
    if problem is not None:
        raise EntryProblem(where, f"source path {problem}")
    if urlsplit(base).scheme in ("http", "https"):
        return InstallSource(type="path", path=urljoin(base, path))
    return InstallSource(type="path", path=posixpath.normpath(posixpath.join(base, path)) if base else path)


def _subpath(src: Obj, key: str) -> str:
    value = src.text(key, required=True)
    problem = subpath_problem(value)
    if problem is not None:
        raise EntryProblem(src.path(key), problem)
    return value


def _source(plugin: Obj, base: str, plugin_root: str) -> tuple[InstallSource, tuple[Requirement, ...]]:
    raw = plugin.data.get("source")
    where = plugin.path("source")
    if isinstance(raw, str):
        if not raw.strip():
            raise EntryProblem(where, "must not be empty")
        return _relative(raw, base, plugin_root, where), ()
    src = plugin.obj("source")
    if src is None:
        raise EntryProblem(where, "required field is missing")
    kind = src.text("source", "type", required=True)
    git = (Requirement("git"),)
    if kind == "github":
        repo = src.text("repo", required=True)
        if repo.count("/") != 1:
            raise EntryProblem(src.path("repo"), f"expected owner/name, got {repo!r}")
        return InstallSource(type="github", repo=repo, ref=src.text("sha", "ref")), git
    if kind == "url":
        return InstallSource(type="git", url=src.text("url", required=True), ref=src.text("sha", "ref")), git
    if kind == "git-subdir":
        return (
            InstallSource(
                type="git",
                url=src.text("url", "repo", required=True),
                path=_subpath(src, "path"),
                ref=src.text("sha", "ref"),
            ),
            git,
        )
    if kind == "npm":
        return (
            InstallSource(type="npm", package=src.text("package", required=True), version=src.text("version")),
            (Requirement("npm"),),
        )
    raise EntryProblem(src.path("source"), f"unknown source type {kind!r} (github, url, git-subdir, npm)")


#: the fields of a marketplace entry that are plugin manifest fields (Claude's plugin.json)
MANIFEST_FIELDS = (
    *METADATA_FIELDS,
    "commands",
    "agents",
    "skills",
    "outputStyles",
    "hooks",
    "mcpServers",
    "lspServers",
)
#: component fields that list paths (a string or a list of strings)
PATH_FIELDS = ("commands", "agents", "skills", "outputStyles")
#: component fields that are a path, an inline table, or a list of either
TABLE_FIELDS = ("hooks", "mcpServers", "lspServers")


def _paths(plugin: Obj, key: str) -> list[str]:
    value = plugin.data.get(key)
    items = [value] if isinstance(value, str) else plugin.strings(key)
    for i, item in enumerate(items):
        where = plugin.path(key) if isinstance(value, str) else f"{plugin.path(key)}[{i}]"
        if _escapes(item):
            raise EntryProblem(where, f"path {item!r} escapes the plugin root")
        problem = subpath_problem(item)
        if problem is not None or not item.strip():
            raise EntryProblem(where, f"path {problem or 'must not be empty'}")
    return list(items)


def inline_manifest(plugin: Obj, name: str) -> dict[str, Any]:
    """The plugin manifest a ``strict: false`` entry declares: its manifest fields, checked
    (component paths stay inside the plugin; tables are tables)."""
    out: dict[str, Any] = {"name": name}
    for key in MANIFEST_FIELDS:
        if key not in plugin.data or plugin.data[key] is None:
            continue
        value = plugin.data[key]
        if key in PATH_FIELDS:
            value = _paths(plugin, key)
        elif key in TABLE_FIELDS:
            items = value if isinstance(value, list) else [value]
            for i, item in enumerate(items):
                where = f"{plugin.path(key)}[{i}]" if isinstance(value, list) else plugin.path(key)
                if isinstance(item, str):
                    if _escapes(item) or subpath_problem(item):
                        raise EntryProblem(where, f"path {item!r} escapes the plugin root")
                elif not isinstance(item, dict):
                    raise EntryProblem(where, "expected a path or a table")
        out[key] = value
    return out


def bundle_to_entry(data: Any, where: str, *, base: str, plugin_root: str = "") -> CatalogEntry:
    plugin = Obj(data, where)
    raw_name = plugin.text("name", required=True)
    name = safe_name(raw_name)
    if not name:
        raise EntryProblem(plugin.path("name"), f"no usable name in {raw_name!r}")
    install, requirements = _source(plugin, base, plugin_root)
    tags = [*plugin.strings("keywords"), *plugin.strings("tags")]
    category = plugin.text("category")
    if category:
        tags.append(category)
    strict = plugin.flag("strict", default=True)
    manifest = inline_manifest(plugin, raw_name)
    notes: tuple[str, ...] = ()
    if strict:
        # Claude Code's default: the plugin's own plugin.json is the authority and the entry's
        # components supplement it (an entry of only metadata changes nothing that is installed)
        added = [k for k in (*PATH_FIELDS, *TABLE_FIELDS) if k in manifest]
        manifest = manifest if added else {}
        if added:
            notes = (
                f"the marketplace entry adds its {', '.join(added)} to the plugin's own .claude-plugin/plugin.json "
                "(strict, Claude Code's default: the plugin's manifest is the authority)",
            )
    elif manifest:
        listed = [f"{k} {', '.join(manifest[k])}" for k in PATH_FIELDS if k in manifest]
        notes = (
            "the marketplace entry describes the plugin (strict: false), merged with its own "
            ".claude-plugin/plugin.json; install reports what of that is not kept"
            + (f"; installs only the listed {'; '.join(listed)}" if listed else ""),
        )
    return CatalogEntry(
        manifest=manifest,
        supplements=strict and bool(manifest),
        notes=notes,
        name=name,
        kind="plugin",
        title=plugin.text("displayName") or raw_name,
        description=plugin.text("description"),
        version=plugin.opt_text("version") or "",
        requirements=requirements,
        install_hint=f"installs into the plugins directory from {install.describe()}",
        install=install,
        homepage=plugin.link("homepage"),
        repository=plugin.link("repository"),
        tags=tuple(tags),
    )
