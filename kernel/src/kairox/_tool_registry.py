"""The tool registry: canonical ids, exported names, ranks and change events."""

from __future__ import annotations

import bisect
import contextlib
import difflib
import itertools
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from ._events import EventBus, ToolNameCollision, ToolsChanged
from ._names import assign_exported_names, first_suffixed, sanitize_name
from ._tool_index import CHANGED_SLACK, ToolIndex, _Entry
from ._tools import Tool, ToolSpec, ToolView, _respec
from .errors import RegistrationError, ToolNotFound

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)


def publish_change(
    events: EventBus, provider: str, removed: list[str], added: list[str], displaced: Mapping[str, list[str]]
) -> None:
    """The events of one registry change: each displaced provider's loss, then ``provider``'s
    :class:`ToolsChanged` (a replaced tool that kept its id is both removed and added: it
    is listed as added)."""
    gone, new = set(removed), set(added)
    really_removed = tuple(t for t in removed if t not in new)
    really_added = tuple(t for t in added if t not in gone)
    changed = tuple(t for t in added if t in gone)
    for loser, ids in displaced.items():
        logger.warning("tools %s of %s are replaced by %s's, which ranks above", ", ".join(ids), loser, provider)
        events.publish(ToolsChanged(provider=loser, added=(), removed=tuple(ids)))
    if really_added or really_removed or changed:
        events.publish(ToolsChanged(provider=provider, added=really_added + changed, removed=really_removed))


def _with_id(group: str | set[str] | None, tid: str) -> str | set[str]:
    """A group of ids (one id, kept as itself, or a set of several) with ``tid`` in it."""
    if group is None or group == tid:
        return tid
    if isinstance(group, set):
        group.add(tid)
        return group
    return {group, tid}


def _without_id(group: str | set[str], tid: str) -> str | set[str] | None:
    """``group`` without ``tid`` (``None``: nothing is left; a set left with one is that id)."""
    if isinstance(group, set):
        group.discard(tid)
        return next(iter(group)) if len(group) == 1 else group
    return None if group == tid else group


def _set_group(groups: dict[str, str | set[str]], key: str, group: str | set[str] | None) -> None:
    if group is None:
        del groups[key]
    else:
        groups[key] = group


def _members(group: str | set[str] | None) -> Iterable[str]:
    if group is None:
        return ()
    return (group,) if isinstance(group, str) else group


class ToolRegistry:
    """Every tool the agent may call, keyed by canonical id.

    Providers add and remove tools while the runtime runs; each change is one
    :class:`ToolsChanged` event. A tool keeps its exported name for the
    registry's life, even across a removal and a return (a server restart, a
    ``tools/list_changed``), as long as its provider removed no more than
    :attr:`remembered_removals` other tools since (a server that lists new names
    without end cannot grow the registry without end, nor make another server's
    tools forget their names): a newcomer that sanitises to a name someone holds
    gets a hash suffix (:func:`kairox.ext.assign_exported_names`). Tools that arrive
    together, inside one :meth:`batch` (the runtime's parallel start is one), are
    named from their set alone, whatever order they registered in: the best
    :class:`~kairox.ext.ToolRank` keeps a contested name.

    A change costs what it changes: each id is sanitised once, and only the
    newcomers that compete for a name with a tool the change touched are named
    again (the names are those :func:`~kairox.ext.assign_exported_names` gives the
    whole set of newcomers; it is called on the whole set only when a newcomer's
    hash-suffixed name meets another name, which takes a crafted id).
    """

    #: how many removed tools of one provider keep their exported names for their return
    #: (the provider's oldest removal is forgotten first; its name is free again). A provider
    #: that is gone keeps its quota (it may return), so at most this many names are kept
    #: for each provider the registry has had
    remembered_removals = 10_000

    def __init__(self, events: EventBus | None = None) -> None:
        self._events = events or EventBus()
        self._entries: dict[str, _Entry] = {}
        self._by_exported: dict[str, str] = {}
        #: canonical id -> exported name, kept after a removal (the id gets it back)
        self._pinned: dict[str, str] = {}
        #: every pinned name (they never change, and no two ids hold one)
        self._taken: set[str] = set()
        #: provider -> its removed ids whose names are kept (oldest removal first)
        self._gone: dict[str, dict[str, None]] = {}
        #: removed id whose name is kept -> the provider that removed it
        self._gone_from: dict[str, str] = {}
        self._provider_ranks: dict[str, int] = {}
        self._batch_depth = 0
        #: canonical id -> sanitize_name(id), for every registered id and every removed one
        #: whose name is kept
        self._sanitized: dict[str, str] = {}
        #: provider -> its registered ids (in registration order)
        self._by_provider: dict[str, dict[str, None]] = {}
        #: sanitised name -> the registered id that wants it, or the ids (a set: a collision);
        #: one id is kept as itself, not as a set of one, for every tool not in a collision
        self._groups: dict[str, str | set[str]] = {}
        #: newcomers of the running batch (registered, no pinned name): their names and groups
        #: (by sanitised name, one id kept as itself as in ``_groups``)
        self._fresh: dict[str, str] = {}
        self._fresh_groups: dict[str, str | set[str]] = {}
        #: losers of the fresh groups: id -> its first suffixed candidate, and how many want each
        self._loser_names: dict[str, str] = {}
        self._loser_counts: dict[str, int] = {}
        #: a suffixed name met another name in this batch: name every newcomer from scratch
        self._tangled = False
        #: every registered id, sorted (kept so by each change)
        self._ids: list[str] = []
        #: the tools as ranking sees them (``None``: changed since; the last one lends its facts)
        self._index: ToolIndex | None = None
        self._last_index: ToolIndex | None = None
        #: the ids changed since the last index was made
        self._dirty: set[str] = set()

    # -- changes ---------------------------------------------------------
    def add(self, tool: Tool, *, provider: str | None = None, rank: int | None = None) -> ToolSpec:
        """Register one tool; a second tool with the same canonical id is refused, unless its
        provider ranks above the holder's (then the holder's tool is replaced)."""
        self.replace(provider or tool.spec.provider or "<code>", add=[tool], remove=(), rank=rank)
        return self._entries[tool.spec.id].spec

    def remove(self, tool_id: str) -> None:
        entry = self._entries.get(tool_id)
        if entry is None:
            raise ToolNotFound(f"no tool {tool_id!r}")
        self.replace(entry.provider, add=(), remove=[tool_id])

    def replace_provider(self, provider: str, tools: Iterable[Tool], *, rank: int | None = None) -> None:
        """Atomically swap every tool of ``provider`` for ``tools`` (one event)."""
        current = list(self._by_provider.get(provider, ()))
        self.replace(provider, add=list(tools), remove=current, rank=rank)

    def remove_provider(self, provider: str) -> None:
        if provider in self._by_provider:  # a provider with no tools changes nothing
            self.replace_provider(provider, ())

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Tools registered inside are named together, as one set, when it ends.

        Until then their exported names may still change (a better ranked
        newcomer can take a name from one); names held before the batch never do.
        """
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1
            if self._batch_depth == 0:
                self._pin_fresh()

    def replace(self, provider: str, *, add: Iterable[Tool], remove: Iterable[str], rank: int | None = None) -> None:
        """Remove ``remove`` and add ``add`` for ``provider``, as one change.

        ``rank`` (a :class:`~kairox.ext.ToolRank`; default: what the provider had,
        else ``USER``) decides contested exported names among newcomers.
        """
        if rank is not None:
            self._provider_ranks[provider] = int(rank)
        provider_rank = self._provider_ranks.get(provider, 0)
        entries = self._entries
        removed = list(dict.fromkeys(tid for tid in remove if tid in entries))
        removing = set(removed)
        tools = list(add)
        # check everything before changing anything: a refused change leaves the registry as it was
        claimed: dict[str, _Entry] = {}
        displaced: dict[str, list[str]] = {}
        for tool in tools:
            tid = tool.spec.id
            holder = claimed.get(tid) or (entries.get(tid) if tid not in removing else None)
            if holder is not None:
                if holder.provider == provider or holder.rank <= provider_rank:
                    raise RegistrationError(f'tool "{tid}" is registered twice: by {holder.provider} and by {provider}')
                # a better ranked provider (the user's own server) takes its id back
                displaced.setdefault(holder.provider, []).append(tid)
            spec = tool.spec
            claimed[tid] = _Entry(
                tool, spec if spec.provider else _respec(spec, provider=provider), provider, provider_rank
            )
        if not removed and not claimed:
            return
        self._index = None
        old_collisions = {key: self._collision(key) for key in self._keys_of([*removed, *claimed])}
        touched: set[str] = set()
        for tid in removed:
            self._drop(tid, touched)
        for ids in displaced.values():
            for tid in ids:
                self._drop(tid, touched)
        for tid, entry in claimed.items():
            self._put(tid, entry, touched)
        self._rename(touched)
        if len(self._dirty) > len(self._ids) + CHANGED_SLACK:
            # more changed than an index could take over: the next one starts afresh (as ToolIndex
            # itself would), and the changed ids are not kept without end while no index is made
            self._last_index, self._dirty = None, set()
        if self._batch_depth == 0:
            self._pin_fresh()
        publish_change(self._events, provider, removed, list(claimed), displaced)
        new_collisions = []
        for key, before in old_collisions.items():
            group = self._collision(key)
            if group is not None and group != before:
                new_collisions.append(group)
        for group in sorted(new_collisions):
            self._events.publish(ToolNameCollision(exported_name=self._sanitize(group[0]), canonical_ids=group))

    def rank_of(self, tool_id: str) -> int | None:
        """The :class:`~kairox.ext.ToolRank` of the provider that registered ``tool_id`` (``None``: none did)."""
        entry = self._entries.get(tool_id)
        return None if entry is None else entry.rank

    # -- the bookkeeping behind replace() ----------------------------------
    def _sanitize(self, tid: str) -> str:
        name = self._sanitized.get(tid)
        if name is None:
            name = self._sanitized[tid] = sanitize_name(tid)
        return name

    def _keys_of(self, ids: Iterable[str]) -> set[str]:
        return {self._sanitize(tid) for tid in ids}

    def _collision(self, key: str) -> tuple[str, ...] | None:
        group = self._groups.get(key)
        return tuple(sorted(group)) if isinstance(group, set) else None

    def _drop(self, tid: str, touched: set[str]) -> None:
        entry = self._entries.pop(tid, None)
        if entry is None:
            return
        del self._ids[bisect.bisect_left(self._ids, tid)]
        if self._last_index is not None:  # before the first index, every id is new to it anyway
            self._dirty.add(tid)
        key = self._sanitize(tid)
        owned = self._by_provider.get(entry.provider)
        if owned is not None:
            owned.pop(tid, None)
            if not owned:
                del self._by_provider[entry.provider]
        _set_group(self._groups, key, _without_id(self._groups[key], tid))
        name = entry.spec.exported_name
        if self._by_exported.get(name) == tid:
            del self._by_exported[name]
        if tid in self._fresh:
            del self._fresh[tid]
            self._unlose(tid)
            _set_group(self._fresh_groups, key, _without_id(self._fresh_groups[key], tid))
            touched.add(key)
        if tid in self._pinned:  # its name (and sanitised form) kept for its return
            self._gone.setdefault(entry.provider, {})[tid] = None
            self._gone_from[tid] = entry.provider
        else:
            del self._sanitized[tid]

    def _put(self, tid: str, entry: _Entry, touched: set[str]) -> None:
        key = self._sanitize(tid)
        if tid not in self._entries:
            bisect.insort(self._ids, tid)
        self._entries[tid] = entry
        if self._last_index is not None:
            self._dirty.add(tid)
        self._by_provider.setdefault(entry.provider, {})[tid] = None
        self._groups[key] = _with_id(self._groups.get(key), tid)
        pinned = self._pinned.get(tid)
        if pinned is not None:
            self._drop_gone(tid)
            self._set_name(tid, pinned)
            return
        self._fresh[tid] = ""
        self._fresh_groups[key] = _with_id(self._fresh_groups.get(key), tid)
        touched.add(key)

    def _set_name(self, tid: str, name: str) -> None:
        entry = self._entries[tid]
        if entry.spec.exported_name != name:
            old = entry.spec.exported_name
            if old and self._by_exported.get(old) == tid:
                del self._by_exported[old]
            spec = _respec(entry.spec, exported_name=name)
            self._entries[tid] = _Entry(entry.tool, spec, entry.provider, entry.rank)
            if self._last_index is not None:
                self._dirty.add(tid)
        self._by_exported[name] = tid

    def _rename(self, touched: set[str]) -> None:
        """Name the newcomers again where a touched group may have moved a name: exactly the
        names ``assign_exported_names(newcomers, taken=pinned names, rank=...)`` gives."""
        if not self._tangled:
            for key in touched:
                self._name_group(key)
        if self._tangled:
            self._rename_all()
            return
        for key in touched:
            for tid in _members(self._fresh_groups.get(key)):
                self._set_name(tid, self._fresh[tid])

    def _name_group(self, key: str) -> None:
        """One group of newcomers: the winner takes the free name, the others get suffixes."""
        group = _members(self._fresh_groups.get(key))
        winner = None
        if group and key not in self._taken:
            winner = min(group, key=lambda c: (self._entries[c].rank, c != key, c))
            self._fresh[winner] = key
            if key in self._loser_counts:  # a newcomer's suffixed name is this group's name
                self._tangled = True
        for tid in group:
            if tid == winner:
                self._unlose(tid)
                continue
            candidate = self._loser_names.get(tid)
            if candidate is None:
                candidate = self._loser_names[tid] = first_suffixed(tid, key)
                count = self._loser_counts.get(candidate, 0) + 1
                self._loser_counts[candidate] = count
                if count > 1 or candidate in self._taken or candidate in self._fresh_groups:
                    self._tangled = True
            self._fresh[tid] = candidate

    def _unlose(self, tid: str) -> None:
        candidate = self._loser_names.pop(tid, None)
        if candidate is not None:
            count = self._loser_counts[candidate] - 1
            if count:
                self._loser_counts[candidate] = count
            else:
                del self._loser_counts[candidate]

    def _rename_all(self) -> None:
        names, _ = assign_exported_names(
            self._fresh, taken=self._taken, rank={tid: self._entries[tid].rank for tid in self._fresh}
        )
        for tid, name in names.items():
            self._fresh[tid] = name
            self._set_name(tid, name)

    def _pin_fresh(self) -> None:
        for tid, name in self._fresh.items():
            self._pinned[tid] = name
            self._taken.add(name)
        self._fresh.clear()
        self._fresh_groups.clear()
        self._loser_names.clear()
        self._loser_counts.clear()
        self._tangled = False
        for gone in list(self._gone.values()):
            excess = len(gone) - self.remembered_removals
            if excess > 0:
                for tid in list(itertools.islice(gone, excess)):
                    self._drop_gone(tid)
                    self._taken.discard(self._pinned.pop(tid))
                    del self._sanitized[tid]

    def _drop_gone(self, tid: str) -> None:
        """``tid`` is no longer among the removed ids whose names are kept."""
        provider = self._gone_from.pop(tid, None)
        if provider is not None:
            gone = self._gone[provider]
            del gone[tid]
            if not gone:
                del self._gone[provider]

    # -- lookups ---------------------------------------------------------
    def lookup(self, name: str) -> tuple[ToolSpec, Tool] | None:
        """What a call of ``name`` runs: the registered spec (its exported name filled in)
        and the tool itself, by exported name first, then canonical id; ``None`` when
        neither is registered (see :meth:`resolve`)."""
        tid = self._by_exported.get(name)
        entry = self._entries.get(tid if tid is not None else name)
        return None if entry is None else (entry.spec, entry.tool)

    def resolve(self, name: str) -> Tool:
        """The tool with this exported name, else with this canonical id.

        Exported names first: they are what a model sees, and an id such as
        ``a_b`` may be another tool's exported name when that tool held it first.
        """
        tid = self._by_exported.get(name)
        entry = self._entries.get(tid if tid is not None else name)
        if entry is None:
            close = difflib.get_close_matches(name, [*self._entries, *self._by_exported], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ToolNotFound(f"no tool named {name!r}{hint}")
        if entry.spec is entry.tool.spec:
            return entry.tool
        return ToolView(entry.tool, entry.spec)

    def get_spec(self, name: str) -> ToolSpec:
        return self.resolve(name).spec

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._by_exported

    def specs(self) -> list[ToolSpec]:
        return self.index().specs

    def index(self) -> ToolIndex:
        """The tools in id order, with their search text and token estimates (:class:`ToolIndex`);
        made again after a change, taking over what it knew of the specs the change did not touch."""
        if self._index is None:
            self._index = ToolIndex(list(self._ids), dict(self._entries), self._last_index, self._dirty)
            self._last_index = self._index
            self._dirty = set()
        return self._index

    def by_provider(self, provider: str) -> list[ToolSpec]:
        return [self._entries[t].spec for t in sorted(self._by_provider.get(provider, ()))]

    @property
    def collisions(self) -> list[tuple[str, ...]]:
        """Each group of registered ids that sanitise to one name (they competed for it)."""
        return sorted(tuple(sorted(g)) for g in self._groups.values() if isinstance(g, set))

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self.specs())

    def __len__(self) -> int:
        return len(self._entries)
