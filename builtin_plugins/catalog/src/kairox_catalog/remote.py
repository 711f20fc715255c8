"""A catalog source read from a URL (or a local file): kairox manifest, MCP registry, marketplace."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kairox.ext import redact_url
from kairox.files import loads_bounded

from .documents import detect_kind, parse_text
from .fetch import DocumentCache, FetchError, fetch_document, is_remote
from .model import CatalogEntry, EntryError, SourceResult

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["RemoteSource"]

logger = logging.getLogger(__name__)


def _validate(body: bytes) -> str | None:
    try:
        data = loads_bounded(body, json.loads)
    except ValueError as exc:
        return f"not valid JSON: {exc}"
    if detect_kind(data) is None:
        return "not a catalog document"
    return None


class RemoteSource:
    """One ``[[catalog.sources]]`` entry: fetched with a timeout, cached, revalidated."""

    def __init__(
        self,
        name: str,
        url: str,
        *,
        kind: str = "auto",
        cache_dir: Path | None = None,
        ttl: float = 3600.0,
        timeout: float = 10.0,
    ) -> None:
        self.name = name
        self.url = url
        self.kind = kind
        self.cache = DocumentCache(cache_dir) if cache_dir is not None else None
        self.ttl = ttl
        self.timeout = timeout
        self.last_origin = ""

    @property
    def description(self) -> str:
        return f"{self.kind} document at {self.url}"

    @property
    def remote(self) -> bool:
        return is_remote(self.url)

    async def load(self, runtime: Runtime | None = None, *, refresh: bool = False) -> SourceResult:
        warnings: list[str] = []
        if self.cache is not None:
            self.cache.warnings.clear()
        try:
            fetched = await fetch_document(
                self.url, cache=self.cache, ttl=self.ttl, timeout=self.timeout, refresh=refresh, validate=_validate
            )
        except FetchError as exc:
            self.last_origin = "failed"
            if self.cache is not None:
                warnings.extend(self.cache.warnings)
            return SourceResult(
                errors=(
                    EntryError(
                        self.name,
                        "document",
                        f"cannot fetch {redact_url(self.url)}: {str(exc).replace(self.url, redact_url(self.url))}",
                    ),
                ),
                warnings=tuple(warnings),
            )
        self.last_origin = fetched.origin
        if self.cache is not None:
            warnings.extend(self.cache.warnings)
        if fetched.warning:
            warnings.append(fetched.warning)
        result = parse_text(fetched.body, source=self.name, kind=self.kind, location=self.url)
        return SourceResult(entries=result.entries, errors=result.errors, warnings=(*warnings, *result.warnings))

    async def entries(self, runtime: Runtime) -> Sequence[CatalogEntry]:
        return (await self.load(runtime)).entries
