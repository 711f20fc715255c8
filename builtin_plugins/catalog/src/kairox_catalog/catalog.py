"""The catalog: every registered source loaded in parallel, merged, searchable.

Sources come from ``runtime.catalog_sources()`` (the
``kairox_register_catalog_sources`` hook). A source is any object with a
``name`` and ``async entries(runtime)``; kairox-catalog's own sources also have
``async load(runtime, refresh=)`` returning entries, skipped entries and
warnings. A source that raises or hangs costs only its own entries.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from kairox.errors import ConfigError
from kairox.ext import redact_url, structure

from .model import CatalogEntry, EntryError, SourceResult, entry_errors
from .progress import NullProgress, Progress
from .search import Hit, SearchIndex

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["Catalog", "CatalogSnapshot", "EntryNotFound", "SourceStatus", "load_catalog"]

logger = logging.getLogger(__name__)

SOURCE_TIMEOUT = 60.0


class EntryNotFound(LookupError):
    """No entry (or more than one, ambiguously) has that name."""


@attrs.frozen
class SourceStatus:
    name: str
    owner: str
    description: str
    entries: int
    errors: int
    origin: str = ""
    warnings: tuple[str, ...] = ()
    failed: str = ""


@attrs.frozen
class CatalogSnapshot:
    """All entries and problems of one load of the catalog."""

    entries: tuple[CatalogEntry, ...]
    errors: tuple[EntryError, ...]
    warnings: tuple[str, ...]
    sources: tuple[SourceStatus, ...]
    index: SearchIndex = attrs.field(eq=False, repr=False)

    def search(self, query: str, *, limit: int | None = None, kinds: Sequence[str] | None = None) -> list[Hit]:
        return self.index.search(query, limit=limit, kinds=kinds)

    def find(self, name: str) -> list[CatalogEntry]:
        """Entries named ``name`` (``source:name`` picks one source; a registry's
        qualified ``namespace/name`` works too)."""
        if ":" in name:
            source, _, short = name.partition(":")
            return [e for e in self.entries if e.source == source and e.name == short]
        exact = [e for e in self.entries if e.name == name]
        if exact:
            return exact
        return [e for e in self.entries if name in e.tags and "/" in name]

    def get(self, name: str) -> CatalogEntry:
        """The entry called ``name``; the first source wins when several have it.

        Raises :class:`EntryNotFound` with close names when there is none.
        """
        found = self.find(name)
        if found:
            return found[0]
        skipped = [e for e in self.errors if name in (e.name, f"{e.source}:{e.name}")]
        if skipped:
            raise EntryNotFound(f"the catalog entry {name!r} cannot be installed: {skipped[0]}")
        names = sorted({e.name for e in self.entries} | {e.key for e in self.entries})
        close = difflib.get_close_matches(name, names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; try `kairox catalog search`"
        raise EntryNotFound(f"no catalog entry named {name!r}{hint}")


def _owner(runtime: Runtime, name: str) -> str:
    return runtime.catalog_sources().owner_of(name) or ""


def _normalize(source: str, items: Sequence[Any]) -> SourceResult:
    entries: list[CatalogEntry] = []
    errors: list[EntryError] = []
    for i, item in enumerate(items):
        where = f"[{i}]"
        if isinstance(item, CatalogEntry):
            entry: CatalogEntry = item
        else:
            try:
                entry = structure(item, CatalogEntry, path=where)
            except ConfigError as exc:
                errors.append(EntryError(source, exc.path or where, exc.message))
                continue
        problems = entry_errors(entry, source, where)
        if problems:  # a name or path that would leave its directory
            errors.extend(problems)
            continue
        entries.append(attrs.evolve(entry, source=source))
    return SourceResult(entries=tuple(entries), errors=tuple(errors))


class Catalog:
    """Loads the runtime's catalog sources; :meth:`load` gives a :class:`CatalogSnapshot`."""

    def __init__(self, runtime: Runtime, *, progress: Progress | None = None) -> None:
        self.runtime = runtime
        self.progress = progress or NullProgress()

    def source_names(self) -> list[str]:
        names = self.runtime.catalog_sources().names()
        return sorted(names, key=lambda n: (n != "builtin", n))

    async def _load_one(self, source: Any, refresh: bool) -> tuple[SourceResult, str]:
        load = getattr(source, "load", None)
        if load is not None:
            result = await load(self.runtime, refresh=refresh)
            if not isinstance(result, SourceResult):
                raise TypeError(f"load() returned {type(result).__name__}, not SourceResult")
            if any(e.source != source.name for e in result.entries):
                entries = tuple(
                    e if e.source == source.name else attrs.evolve(e, source=source.name) for e in result.entries
                )
                result = attrs.evolve(result, entries=entries)
            return result, ""
        items = await source.entries(self.runtime)
        if not isinstance(items, (list, tuple)):
            raise TypeError(f"entries() returned {type(items).__name__}, not a sequence")
        return _normalize(source.name, items), ""

    async def load(self, *, sources: Iterable[str] | None = None, refresh: bool = False) -> CatalogSnapshot:
        registrar = self.runtime.catalog_sources()
        wanted = list(sources) if sources is not None else self.source_names()
        unknown = [n for n in wanted if n not in registrar]
        if unknown:
            raise EntryNotFound(
                f"no catalog source named {', '.join(unknown)}; sources: {', '.join(self.source_names()) or 'none'}"
            )
        results: dict[str, tuple[SourceResult, str]] = {}

        async def one(name: str) -> None:
            source = registrar[name]
            url = getattr(source, "url", "")
            slow = bool(getattr(source, "remote", False))
            try:
                with anyio.fail_after(SOURCE_TIMEOUT):
                    if slow:
                        async with self.progress.step(
                            f"Fetching catalog {name} ({redact_url(url) if url else ''})"
                        ) as step:
                            result = await self._load_one(source, refresh)
                            step.detail = _summary(result[0], getattr(source, "last_origin", ""))
                            step.ok = not _failed(result[0])
                    else:
                        result = await self._load_one(source, refresh)
                results[name] = result
            except Exception as exc:
                logger.debug("catalog source %s failed", name, exc_info=True)
                msg = f"timed out after {SOURCE_TIMEOUT:g} s" if isinstance(exc, TimeoutError) else str(exc)
                results[name] = (SourceResult(), f"{type(exc).__name__}: {msg}")

        async with anyio.create_task_group() as tg:
            for name in wanted:
                tg.start_soon(one, name)
        entries: list[CatalogEntry] = []
        errors: list[EntryError] = []
        warnings: list[str] = []
        statuses: list[SourceStatus] = []
        for name in wanted:
            result, failed = results[name]
            source = registrar[name]
            entries.extend(result.entries)
            errors.extend(result.errors)
            warnings.extend(result.warnings)
            if failed:
                warnings.append(f"catalog source {name} failed: {failed}")
            statuses.append(
                SourceStatus(
                    name=name,
                    owner=_owner(self.runtime, name),
                    description=str(getattr(source, "description", "") or getattr(source, "url", "")),
                    entries=len(result.entries),
                    errors=len(result.errors),
                    origin=str(getattr(source, "last_origin", "")),
                    warnings=result.warnings,
                    failed=failed,
                )
            )
        for warning in warnings:
            self.progress.warn(warning)
        return CatalogSnapshot(
            entries=tuple(entries),
            errors=tuple(errors),
            warnings=tuple(warnings),
            sources=tuple(statuses),
            index=SearchIndex(entries),
        )


def _failed(result: SourceResult) -> bool:
    return not result.entries and any(e.where == "document" for e in result.errors)


def _summary(result: SourceResult, origin: str) -> str:
    if _failed(result):
        return "; ".join(e.reason for e in result.errors if e.where == "document")
    where = {"network": "downloaded", "revalidated": "not modified", "cache": "from cache", "stale": "stale cache"}
    parts = [f"{len(result.entries)} entries"]
    if result.errors:
        parts.append(f"{len(result.errors)} skipped")
    if origin in where:
        parts.append(where[origin])
    return ", ".join(parts)


async def load_catalog(runtime: Runtime, *, progress: Progress | None = None, refresh: bool = False) -> CatalogSnapshot:
    return await Catalog(runtime, progress=progress).load(refresh=refresh)
