"""Exported tool names: what a model API accepts (``[A-Za-z0-9_-]{1,64}``)."""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Collection, Iterable, Mapping

__all__ = [
    "ENTRY_NAME_RE",
    "EXPORTED_NAME_RE",
    "MAX_EXPORTED_LEN",
    "ToolRank",
    "assign_exported_names",
    "sanitize_name",
]

MAX_EXPORTED_LEN = 64
EXPORTED_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
#: what a plugin, catalog entry or other name that becomes a directory may be (use
#: ``fullmatch``): never ``.``/``..``, no separator, NUL or newline, at most 128 characters
ENTRY_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def _hash(canonical_id: str, length: int = 8) -> str:
    return hashlib.sha256(canonical_id.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def _with_suffix(base: str, suffix: str) -> str:
    return f"{base[: MAX_EXPORTED_LEN - len(suffix) - 1]}_{suffix}"


def sanitize_name(canonical_id: str) -> str:
    """The exported name a canonical id gets when nothing collides with it.

    Every character outside ``[A-Za-z0-9_-]`` (dots first of all) becomes ``_``;
    a name longer than 64 characters is cut and ends with ``_`` plus 8 hex
    digits of a SHA-256 of the canonical id, so it stays stable across runs.
    """
    base = _INVALID.sub("_", canonical_id) or "tool"
    if len(base) > MAX_EXPORTED_LEN:
        return _with_suffix(base, _hash(canonical_id))
    return base


class ToolRank(enum.IntEnum):
    """Who stands behind a tool, for who keeps an exported name both want.

    Lower ranks first: a server from the user's own config (or a tool that
    built-in or installed code registers) keeps ``gh_create_issue`` over a bundle's
    or a workspace's tool that sanitises to the same name.
    """

    USER = 0
    BUNDLE = 1
    WORKSPACE = 2


def assign_exported_names(
    canonical_ids: Iterable[str],
    *,
    taken: Collection[str] = (),
    rank: Mapping[str, int] | None = None,
) -> tuple[dict[str, str], list[tuple[str, ...]]]:
    """Give every canonical id a unique exported name, deterministically.

    Returns ``(names, collisions)``. The result depends only on the *set* of
    ids (and ``taken``, ``rank``), never on the order they were registered in.
    Names in ``taken`` belong to someone else already: an id that wants one gets
    a suffix. When several ids sanitise to the same free name, the best ranked
    (lowest :class:`ToolRank`) keeps it, then the id that equals the name, then
    the smallest id; the others get a hash suffix of their own id.
    ``collisions`` lists each group of ids that competed for one free name.
    """
    ranks = rank or {}
    ids = sorted(set(canonical_ids))
    wanted: dict[str, list[str]] = {}
    for cid in ids:
        wanted.setdefault(sanitize_name(cid), []).append(cid)
    names: dict[str, str] = {}
    used: set[str] = set(taken)
    collisions: list[tuple[str, ...]] = []
    losers: list[str] = []
    for name, claimants in wanted.items():
        if name in used:
            losers.extend(claimants)
            continue
        winner = min(claimants, key=lambda c: (ranks.get(c, 0), c != name, c))
        names[winner] = name
        used.add(name)
        if len(claimants) > 1:
            collisions.append(tuple(claimants))
            losers.extend(c for c in claimants if c != winner)
    for cid in sorted(losers):
        names[cid] = _suffixed(cid, used)
        used.add(names[cid])
    return names, collisions


def first_suffixed(cid: str, base: str) -> str:
    """The name an id that lost its sanitised name ``base`` gets unless that one is used too."""
    return _with_suffix(base, _hash(cid))


def _suffixed(cid: str, used: Collection[str]) -> str:
    base = sanitize_name(cid)
    for length in (8, 16, 64):
        candidate = _with_suffix(base, _hash(cid, length))
        if candidate not in used:
            return candidate
    counter = 2
    while candidate in used:  # pathological: someone registered our hashed name
        candidate = _with_suffix(base, f"{_hash(cid, 6)}{counter}")
        counter += 1
    return candidate
