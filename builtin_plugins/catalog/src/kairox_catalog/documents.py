"""Catalog documents -> entries, with one error per bad entry and never another exception.

Three formats:

- ``kairox``: ``{"entries": [CatalogEntry, ...]}`` (or a bare list), structured
  with the kernel's converter so errors carry the field path
  (``entries[2].launch.command``);
- ``mcp-registry``: ``server.json`` documents and registry API responses
  (see :mod:`kairox_catalog.registry`);
- ``claude-marketplace``: ``marketplace.json`` (plugins; see
  :mod:`kairox_catalog.marketplace`).

``auto`` picks the format from the document's shape.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from kairox.ext import structure
from kairox.files import check_depth, loads_bounded

from ._collect import collect as _collect
from ._collect import name_of as _name_of
from ._paths import name_problem
from ._reader import EntryProblem, Obj
from .marketplace import bundle_to_entry, marketplace_base
from .model import CatalogEntry, EntryError, SourceResult
from .network import network_only
from .registry import registry_items, server_to_entry, skip_reason, version_key

__all__ = ["DOCUMENT_KINDS", "DocumentKind", "detect_kind", "parse_document", "parse_text"]

DocumentKind = Literal["auto", "kairox", "mcp-registry", "claude-marketplace"]
DOCUMENT_KINDS: tuple[str, ...] = ("auto", "kairox", "mcp-registry", "claude-marketplace")


def detect_kind(data: Any) -> str | None:
    """The format of a parsed document, or ``None`` when it is none of them."""
    if isinstance(data, list):
        looks_registry = any(
            isinstance(i, dict) and ("packages" in i or "remotes" in i or "server" in i) for i in data[:20]
        )
        return "mcp-registry" if looks_registry else "kairox"
    if not isinstance(data, dict):
        return None
    if "plugins" in data:
        return "claude-marketplace"
    if "entries" in data:
        return "kairox"
    schema = data.get("$schema")
    if "servers" in data or "packages" in data or "remotes" in data or (isinstance(schema, str) and "server" in schema):
        return "mcp-registry"
    return None


def parse_text(text: str | bytes, *, source: str, kind: str = "auto", location: str = "") -> SourceResult:
    """Parse a document's bytes; bad JSON is one document-level error."""
    try:
        data = loads_bounded(text, json.loads)
    except ValueError as exc:
        where = f"{location}: " if location else ""
        return SourceResult(errors=(EntryError(source, "document", f"{where}not valid JSON: {exc}"),))
    return parse_document(data, source=source, kind=kind, location=location)


#: entries one document may list; more is one error and the rest are not read (a document
#: within the size limit can still hold hundreds of thousands of tiny entries)
MAX_ENTRIES = 20_000


def parse_document(data: Any, *, source: str, kind: str = "auto", location: str = "") -> SourceResult:
    """Entries of a parsed JSON document; every bad entry becomes an :class:`EntryError`.

    A document fetched from a URL installs only from the network: its entries are marked
    with that URL, and one that names something on this machine (a local path or file:// URL,
    a local git repository, a server program given as a path, ...) is an error
    (:func:`kairox_catalog.network.network_only`; a marketplace's relative sources resolve
    against its URL and stay remote; a local document's may name local paths)."""
    try:
        check_depth(data)
    except ValueError as exc:
        where = f"{location}: " if location else ""
        return SourceResult(errors=(EntryError(source, "document", f"{where}{exc}"),))
    data, too_many = _bounded(data, source)
    result = _parse(data, source=source, kind=kind, location=location)
    if _remote(location):
        result = network_only(result, source, location)
    if too_many is not None:
        result = SourceResult(entries=result.entries, errors=(too_many, *result.errors))
    return result


def _remote(location: str) -> bool:
    return location.split(":", 1)[0].lower() in ("http", "https")


def _bounded(data: Any, source: str) -> tuple[Any, EntryError | None]:
    """``data`` with its entry list cut at :data:`MAX_ENTRIES`, and the error that says so."""
    if not isinstance(data, dict):
        items, key = (data, "") if isinstance(data, list) else (None, "")
    else:
        key = next((k for k in ("entries", "servers", "plugins") if isinstance(data.get(k), list)), "")
        items = data.get(key) if key else None
    if not isinstance(items, list) or len(items) <= MAX_ENTRIES:
        return data, None
    error = EntryError(source, key or "document", f"lists {len(items)} entries; only the first {MAX_ENTRIES} are read")
    cut = items[:MAX_ENTRIES]
    return ({**data, key: cut} if isinstance(data, dict) else cut), error


def _parse(data: Any, *, source: str, kind: str, location: str) -> SourceResult:
    actual = detect_kind(data) if kind == "auto" else kind
    if actual is None:
        return SourceResult(
            errors=(
                EntryError(
                    source,
                    "document",
                    "not a catalog document (expected a kairox manifest with entries[], "
                    "an MCP registry server.json / servers[] or a marketplace.json with plugins[])",
                ),
            )
        )
    try:
        if actual == "kairox":
            return _kairox(data, source)
        if actual == "mcp-registry":
            return _registry(data, source)
        if actual == "claude-marketplace":
            return _marketplace(data, source, location)
    except RecursionError:
        return SourceResult(errors=(EntryError(source, "document", "nested too deeply"),))
    return SourceResult(errors=(EntryError(source, "document", f"unknown document kind {actual!r}"),))


def _kairox(data: Any, source: str) -> SourceResult:
    if isinstance(data, dict):
        items = data.get("entries")
        if not isinstance(items, list):
            return SourceResult(errors=(EntryError(source, "entries", "expected a list of entries"),))
        prefix = "entries"
    elif isinstance(data, list):
        items, prefix = data, ""
    else:
        return SourceResult(errors=(EntryError(source, "document", "expected an object with entries[]"),))

    def convert(item: Any, where: str) -> CatalogEntry:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            problem = name_problem(item["name"])  # first: the name is what the entry is known by
            if problem is not None:
                raise EntryProblem(f"{where}.name", problem)
        if isinstance(item, dict) and "source" in item:
            item = {k: v for k, v in item.items() if k != "source"}
        entry: CatalogEntry = structure(item, CatalogEntry, path=where)
        return entry

    return _collect(source, [(f"{prefix}[{i}]", item) for i, item in enumerate(items)], convert)


def _registry(data: Any, source: str) -> SourceResult:
    skipped: list[EntryError] = []
    items: list[tuple[str, Any]] = []
    for where, server, meta in registry_items(data):
        reason = skip_reason(meta)
        if reason is not None:
            skipped.append(EntryError(source, where, reason, _name_of(server)))
        else:
            items.append((where, server))
    result = _collect(source, items, server_to_entry)
    # several versions of one server may be listed: the newest (semver) of each name wins,
    # in the place of the first listed; a name two servers share goes to the first listed
    best: dict[str, CatalogEntry] = {}
    for entry in result.entries:
        held = best.get(entry.name)
        if held is None:
            best[entry.name] = entry
        elif held.tags[:1] == entry.tags[:1] and version_key(entry.version) > version_key(held.version):
            skipped.append(EntryError(source, entry.name, f"version {held.version} superseded by {entry.version}"))
            best[entry.name] = entry
        else:
            why = f"superseded by version {held.version}" if held.tags[:1] == entry.tags[:1] else "name already used"
            skipped.append(EntryError(source, entry.name, f"version {entry.version}: {why}"))
    return SourceResult(entries=tuple(best.values()), errors=(*result.errors, *skipped))


def _marketplace(data: Any, source: str, location: str) -> SourceResult:
    from .codex_marketplace import is_codex_marketplace, parse_codex_marketplace

    if is_codex_marketplace(data, location):
        return parse_codex_marketplace(data, source=source, location=location)
    try:
        doc = Obj(data, "")
        metadata = doc.obj("metadata")
        plugin_root = metadata.text("pluginRoot") if metadata else ""
        plugins = doc.items("plugins")
    except EntryProblem as exc:
        return SourceResult(errors=(EntryError(source, exc.where, exc.reason),))
    base = marketplace_base(location) if location else ""
    return _collect(
        source,
        [(f"plugins[{i}]", item) for i, item in enumerate(plugins)],
        lambda item, where: bundle_to_entry(item, where, base=base, plugin_root=plugin_root),
    )
