"""What kairox keeps of its MCP servers' list and read results (2026-07-28 ``ttlMs`` / ``cacheScope``).

A 2026-07-28 server says on each ``tools/list``, ``prompts/list``, ``resources/list``,
``resources/templates/list`` and ``resources/read`` result how long (``ttlMs``, milliseconds)
a client may consider it fresh (``0``, or no ``ttlMs`` at all: stale at once) and whether a
cache may serve it across authorization contexts (``cacheScope``: ``"public"``) or only to
the one that asked (``"private"``). The MCP SDK's ``mcp.Client`` keeps the results by those
hints (``mcp.client.caching``: fresh entries served, a ``list_changed`` or resource update
evicting them, results reached through input rounds never kept, the handshake revisions'
results never kept); :class:`ResultStore` is the one store the clients of a runtime share,
bounded in entries and bytes. A server's tools are kept in the tool registry instead, and
re-listed once stale (:meth:`kairox_mcp.ServerLifecycle.refresh_tools`).

Every entry a runtime keeps belongs to the runtime's own authorization context with that
server (the credentials of its config): :data:`OWN_CONTEXT`. A gateway that forwards results
to clients of its own asks with ``cached=False`` and is never served from here.

Imports nothing of the SDK at run time (the store is the SDK's ``ResponseCacheStore``
protocol, structurally).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.client.caching import CacheEntry, CacheKey

__all__ = ["MAX_ENTRIES", "MAX_ENTRY_BYTES", "MAX_STORED_BYTES", "OWN_CONTEXT", "ResultStore", "size_of"]

#: results kept for a runtime, all servers together
MAX_ENTRIES = 512
#: about how many bytes (of the results' JSON) are kept for a runtime, all servers together
MAX_STORED_BYTES = 16 * 1024 * 1024
#: a result larger than this (bytes of JSON, about) is not kept
MAX_ENTRY_BYTES = 1024 * 1024
#: the SDK cache's partition of every entry: the runtime's own authorization context
OWN_CONTEXT = "kairox-runtime"


def size_of(value: Any, limit: int = MAX_ENTRY_BYTES) -> int:
    """About how many bytes a result model holds (its JSON's length). A read result whose
    contents alone are over ``limit`` is not serialized to find out how much more."""
    contents = getattr(value, "contents", None)
    if isinstance(contents, list):
        rough = sum(len(getattr(c, "text", None) or getattr(c, "blob", None) or "") for c in contents)
        if rough > limit:
            return rough
    dump = getattr(value, "model_dump_json", None)
    return len(dump()) if callable(dump) else limit + 1


class ResultStore:
    """The MCP SDK's ``ResponseCacheStore`` that a runtime's clients share: least recently used
    entries leave first, so that at most ``max_entries`` entries of about ``max_bytes`` bytes in
    all are kept; a result over ``max_entry_bytes`` is not kept. Entries of a connection that
    closed are never served again (each connection has a key of its own) and leave in turn."""

    def __init__(
        self,
        *,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_STORED_BYTES,
        max_entry_bytes: int = MAX_ENTRY_BYTES,
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_entry_bytes = min(max_entry_bytes, max_bytes)
        self._entries: OrderedDict[CacheKey, tuple[CacheEntry, int]] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def stored_bytes(self) -> int:
        """About how many bytes the kept results hold."""
        return self._bytes

    async def get(self, key: CacheKey) -> CacheEntry | None:
        item = self._entries.get(key)
        if item is None:
            return None
        self._entries.move_to_end(key)
        return item[0]

    async def set(self, key: CacheKey, entry: CacheEntry) -> None:
        self._drop(key)
        size = size_of(entry.value, self.max_entry_bytes)
        if size > self.max_entry_bytes:
            return
        self._entries[key] = (entry, size)
        self._bytes += size
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))

    async def delete(self, key: CacheKey) -> None:
        self._drop(key)

    async def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0

    def _drop(self, key: CacheKey) -> None:
        item = self._entries.pop(key, None)
        if item is not None:
            self._bytes -= item[1]
