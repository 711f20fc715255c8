"""The scan cache: parsed frontmatter keyed by path, size and mtime.

One cache per cache file per process (memory), backed by an optional JSON file
under the user home (``$KAIROX_HOME/cache/skills.json``) so that the next
process starts warm. The file is written atomically (temp file +
``os.replace``); two processes writing it at once cost only a re-parse later,
because every entry is checked against the file's size and mtime.

An entry whose file changed less than :data:`RACY_SECONDS` before it was read
is not cached: a second edit within the file system's timestamp granularity
could keep the same size and mtime.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Union

from kairox.ext import SkillArgument, SkillError, SkillFrontmatter, SkillScope, SkillWarning
from kairox.files import atomic_write_text

__all__ = ["RACY_SECONDS", "Parsed", "ScanCache", "get_cache"]

logger = logging.getLogger(__name__)

#: bump when parsing changes what a file yields
FORMAT_VERSION = 5
RACY_SECONDS = 2.0

#: what parsing one file gives: the frontmatter and its warnings, or the error
Parsed = Union[tuple[SkillFrontmatter, tuple[SkillWarning, ...]], SkillError]


def _problem_row(p: SkillWarning | SkillError) -> list[Any]:
    return [p.message, p.line, p.field]


_SCOPES = {s.value: s for s in SkillScope}


def _encode(parsed: Parsed) -> list[Any]:
    """A compact JSON row: ``[0, error]`` or ``[1, frontmatter fields..., warnings]``."""
    if isinstance(parsed, SkillError):
        return [0, _problem_row(parsed)]
    fm, warnings = parsed
    row = [
        1,
        fm.name,
        fm.description,
        fm.scope.value if fm.scope is not None else None,
        list(fm.keywords),
        list(fm.tools),
        fm.model,
        [[a.name, a.type, a.description, a.required, a.default, list(a.choices)] for a in fm.arguments],
        fm.license,
        fm.compatibility,
        dict(fm.metadata),
        list(fm.allowed_tools),
        dict(fm.extra),
        [_problem_row(w) for w in warnings],
        fm.disable_model_invocation,
    ]
    while len(row) > 3 and not row[-1]:  # trailing empty fields are implied (smaller file, faster load)
        row.pop()
    return row


_ROW = [1, "", "", None, [], [], None, [], None, None, {}, [], {}, [], False]


def _decode(path: str, row: list[Any]) -> Parsed:
    if row[0] == 0:
        message, line, field = row[1]
        return SkillError(message, file=path, line=line, field=field)
    if len(row) <= 6:  # the common case: name, description, scope, keywords, tools
        _, name, description, scope, keywords, tools = row + _ROW[len(row) : 6]
        if not isinstance(name, str) or not isinstance(description, str):
            raise ValueError("damaged entry")
        return SkillFrontmatter(
            name, description, _SCOPES[scope] if scope is not None else None, tuple(keywords), tuple(tools)
        ), ()
    if len(row) < 15:
        row = row + _ROW[len(row) :]
    _, name, description, scope, keywords, tools, model, args, license_, compat, metadata, allowed, extra, w, dmi = row
    fm = SkillFrontmatter(
        name,
        description,
        _SCOPES[scope] if scope is not None else None,
        tuple(keywords),
        tuple(tools),
        model,
        tuple(SkillArgument(n, t, d, r, df, tuple(c)) for n, t, d, r, df, c in args) if args else (),
        license_,
        compat,
        metadata or {},
        tuple(allowed),
        extra or {},
        dmi is True,
    )
    if not isinstance(name, str) or not isinstance(description, str):
        raise ValueError("damaged entry")
    return fm, tuple(SkillWarning(m, file=path, line=ln, field=f) for m, ln, f in w) if w else ()


class ScanCache:
    """Parsed skill files of this process, optionally persisted to ``file``."""

    def __init__(self, file: Path | None = None) -> None:
        self.file = file
        self._mem: dict[str, tuple[int, int, Parsed]] = {}
        self._disk: dict[str, list[Any]] | None = None
        self._dirty = False
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _load_disk(self) -> dict[str, list[Any]]:
        if self._disk is None:
            self._disk = {}
            if self.file is not None:
                try:
                    data = json.loads(self.file.read_text(encoding="utf-8"))
                except FileNotFoundError:
                    pass
                except (OSError, ValueError) as exc:
                    logger.debug("ignoring the skill cache %s: %s", self.file, exc)
                else:
                    if isinstance(data, dict) and data.get("version") == FORMAT_VERSION:
                        entries = data.get("entries")
                        self._disk = entries if isinstance(entries, dict) else {}
        return self._disk

    def get(self, path: str, size: int, mtime_ns: int) -> Parsed | None:
        entry = self._mem.get(path)
        if entry is not None and entry[0] == size and entry[1] == mtime_ns:
            self.hits += 1
            return entry[2]
        if self.file is not None:
            disk = self._disk if self._disk is not None else self._load_disk()
            row = disk.get(path)
            if row is not None and row[0] == size and row[1] == mtime_ns:
                try:
                    parsed = _decode(path, row[2])
                except Exception:  # a damaged entry is a miss
                    logger.debug("bad skill cache entry for %s", path, exc_info=True)
                else:
                    self._mem[path] = (size, mtime_ns, parsed)
                    self.hits += 1
                    return parsed
        self.misses += 1
        return None

    def put(self, path: str, size: int, mtime_ns: int, parsed: Parsed) -> None:
        if time.time_ns() - mtime_ns < RACY_SECONDS * 1e9:
            return
        self._mem[path] = (size, mtime_ns, parsed)
        if self.file is not None:
            self._load_disk()[path] = [size, mtime_ns, _encode(parsed)]
            self._dirty = True

    def get_many(self, keys: list[tuple[str, int, int]]) -> list[Parsed | None]:
        """:meth:`get` for each ``(path, size, mtime_ns)``."""
        mem = self._mem
        out: list[Parsed | None] = []
        append = out.append
        for path, size, mtime_ns in keys:
            entry = mem.get(path)
            if entry is not None and entry[0] == size and entry[1] == mtime_ns:
                append(entry[2])
                self.hits += 1
            else:
                append(self.get(path, size, mtime_ns))
        return out

    def prune(self, root: str, seen: set[str]) -> None:
        """Forget entries under ``root`` that the last scan of it did not see.

        Only the file's entries are pruned: a stale in-memory entry is never
        looked up again, and the process ends.
        """
        if not self._disk:
            return
        prefix = root.rstrip(os.sep) + os.sep
        stale = [p for p in self._disk if p not in seen and p.startswith(prefix)]
        for p in stale:
            del self._disk[p]
            self._mem.pop(p, None)
        if stale:
            self._dirty = True

    def save(self) -> None:
        """Write the file if anything changed (atomically; failures are only logged)."""
        if self.file is None or not self._dirty:
            return
        with self._lock:
            data = {"version": FORMAT_VERSION, "entries": self._load_disk()}
            try:
                self.file.parent.mkdir(parents=True, exist_ok=True)
                text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
                atomic_write_text(self.file, text, fsync=False)
            except OSError as exc:
                logger.warning("cannot write the skill cache %s: %s", self.file, exc)
                return
            self._dirty = False

    def clear_memory(self) -> None:
        """Drop the in-memory layer (the disk layer is read again on the next miss)."""
        self._mem.clear()
        self._disk = None
        self._dirty = False


_CACHES: dict[str, ScanCache] = {}


def get_cache(file: Path | None) -> ScanCache:
    """The process-wide cache for ``file`` (``None``: memory only)."""
    key = str(file) if file is not None else ""
    cache = _CACHES.get(key)
    if cache is None:
        cache = _CACHES[key] = ScanCache(file)
    return cache
