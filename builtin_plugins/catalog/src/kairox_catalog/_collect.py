"""Entries of a document, each converted on its own: a bad one is an :class:`EntryError`
naming its field path, and the others load (every document reader uses this)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from kairox.errors import ConfigError

from ._reader import EntryProblem
from .model import CatalogEntry, EntryError, SourceResult, entry_errors

__all__ = ["collect", "name_of"]


def name_of(item: Any) -> str:
    if isinstance(item, dict):
        name = item.get("name")
        if isinstance(name, str):
            # whole (bounded), so `kairox catalog install NAME` finds why NAME was skipped;
            # EntryError shortens it for display
            return name[:1024]
    return ""


def collect(
    source: str, items: list[tuple[str, Any]], convert: Callable[[Any, str], CatalogEntry | None]
) -> SourceResult:
    entries: list[CatalogEntry] = []
    errors: list[EntryError] = []
    for where, item in items:
        try:
            entry = convert(item, where)
        except EntryProblem as exc:
            errors.append(EntryError(source, exc.where, exc.reason, name_of(item)))
            continue
        except ConfigError as exc:
            for err in exc.errors:
                errors.append(EntryError(source, err.path or where, err.message, name_of(item)))
            continue
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            errors.append(EntryError(source, where, str(exc) or type(exc).__name__, name_of(item)))
            continue
        if entry is None:
            continue
        problems = entry_errors(entry, source, where)
        if problems:  # a name or path that would leave its directory: see kairox_catalog._paths
            errors.extend(problems)
            continue
        entries.append(attrs.evolve(entry, source=source))
    return SourceResult(entries=tuple(entries), errors=tuple(errors))
