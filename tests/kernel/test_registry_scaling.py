"""ToolRegistry's changes cost what they change, and name tools exactly as before.

The registry names newcomers incrementally (only the groups a change touched).
:class:`ReferenceRegistry` below is the registry as it was before that (every
change copied the registry and named every newcomer again): the oracle. Random
sequences of add / replace / remove / remove_provider, inside and outside
batches, must give the same exported names, collisions and events in both.
How long a change takes is in ``benchmarks/bench_registry.py``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import kairox._names
import kairox._tool_registry
from kairox import Event, FunctionTool, ToolSpec
from kairox._events import ToolNameCollision
from kairox._names import assign_exported_names, sanitize_name
from kairox._tool_index import CHANGED_SLACK, _Entry
from kairox._tool_registry import publish_change
from kairox._tools import Tool, ToolView
from kairox.errors import RegistrationError, ToolNotFound
from kairox.ext import EventBus, ToolRegistry

logger = logging.getLogger(__name__)


# -- the oracle: the registry before issue 17, kept as it was (test-only) -------------------
class ReferenceRegistry:
    """The registry's contract (see :class:`kairox.ext.ToolRegistry`) done the simple way: every
    change copies the entries and names every newcomer again. Only what the comparison and
    ``benchmarks/bench_registry.py`` call is here; the thin methods are written anew, not
    copied, so the oracle shares no code with what it checks."""

    def __init__(self, events: EventBus | None = None) -> None:
        self._events = events or EventBus()
        self._entries: dict[str, _Entry] = {}
        self._by_exported: dict[str, str] = {}
        self._collisions: list[tuple[str, ...]] = []
        #: canonical id -> exported name, kept after a removal (the id gets it back)
        self._pinned: dict[str, str] = {}
        #: removed ids with a kept name and the provider that removed them, oldest removal
        #: first (only so many of each provider are remembered)
        self._gone: list[tuple[str, str]] = []
        self.remembered_removals = ToolRegistry.remembered_removals
        self._provider_ranks: dict[str, int] = {}
        self._batch_depth = 0

    # -- changes: all through replace() --------------------------------------
    def add(self, tool: Tool, *, provider: str | None = None, rank: int | None = None) -> None:
        self.replace(provider or tool.spec.provider or "<code>", add=[tool], remove=(), rank=rank)

    def remove(self, tool_id: str) -> None:
        if tool_id not in self._entries:
            raise ToolNotFound(tool_id)
        self.replace(self._entries[tool_id].provider, add=(), remove=[tool_id])

    def replace_provider(self, provider: str, tools: Iterable[Tool], *, rank: int | None = None) -> None:
        mine = [tid for tid, e in self._entries.items() if e.provider == provider]
        self.replace(provider, add=list(tools), remove=mine, rank=rank)

    def remove_provider(self, provider: str) -> None:
        self.replace_provider(provider, ())

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        # no try/finally: a refused step inside a batch is caught in Pair.both, never raised through
        self._batch_depth += 1
        yield
        self._batch_depth -= 1
        if not self._batch_depth:
            self._pinned.update({tid: e.spec.exported_name for tid, e in self._entries.items()})
            self._forget()

    def _forget(self) -> None:
        for provider in {p for _, p in self._gone}:
            mine = [tid for tid, p in self._gone if p == provider]
            for tid in mine[: max(0, len(mine) - self.remembered_removals)]:
                self._gone.remove((tid, provider))
                del self._pinned[tid]

    def replace(self, provider: str, *, add: Iterable[Tool], remove: Iterable[str], rank: int | None = None) -> None:
        """The change on a copy of the entries; then every newcomer named again, together."""
        ranks = self._provider_ranks
        provider_rank = ranks[provider] = int(rank) if rank is not None else ranks.get(provider, 0)
        removed = [tid for tid in remove if tid in self._entries]
        new_entries = dict(self._entries)
        for tid in removed:
            del new_entries[tid]
        added: list[str] = []
        displaced: dict[str, list[str]] = {}
        for tool in add:
            spec = tool.spec
            if spec.id in new_entries:
                holder = new_entries[spec.id]
                if holder.provider == provider or holder.rank <= provider_rank:
                    raise RegistrationError(
                        f'tool "{spec.id}" is registered twice: by {holder.provider} and by {provider}'
                    )
                # a better ranked provider (the user's own server) takes its id back
                displaced.setdefault(holder.provider, []).append(spec.id)
                del new_entries[spec.id]
            new_entries[spec.id] = _Entry(
                tool, attrs.evolve(spec, provider=spec.provider or provider), provider, provider_rank
            )
            added.append(spec.id)
        self._gone = [(tid, p) for tid, p in self._gone if tid not in new_entries]
        self._gone += [
            (tid, self._entries[tid].provider) for tid in removed if tid in self._pinned and tid not in new_entries
        ]
        names = self._assign(new_entries)
        for tid, entry in new_entries.items():
            if entry.spec.exported_name != names[tid]:
                new_entries[tid] = attrs.evolve(entry, spec=attrs.evolve(entry.spec, exported_name=names[tid]))
        self._entries = new_entries
        self._by_exported = {names[tid]: tid for tid in new_entries}
        if self._batch_depth == 0:
            self._pinned.update(names)
            self._forget()
        collisions = _collision_groups(new_entries)
        new_collisions = [c for c in collisions if c not in self._collisions]
        self._collisions = collisions
        publish_change(self._events, provider, removed, added, displaced)  # the kernel's: not what changed
        for group in new_collisions:
            self._events.publish(ToolNameCollision(exported_name=sanitize_name(group[0]), canonical_ids=group))

    def rank_of(self, tool_id: str) -> int | None:
        """The :class:`~kairox.ext.ToolRank` of the provider that registered ``tool_id`` (``None``: none did)."""
        entry = self._entries.get(tool_id)
        return None if entry is None else entry.rank

    def _assign(self, entries: Mapping[str, _Entry]) -> dict[str, str]:
        """Held names for tools that have one; the newcomers named as one set around them."""
        names = {tid: self._pinned[tid] for tid in entries if tid in self._pinned}
        fresh = [tid for tid in entries if tid not in names]
        if fresh:
            fresh_names, _ = assign_exported_names(
                fresh, taken=set(self._pinned.values()), rank={tid: entries[tid].rank for tid in fresh}
            )
            names.update(fresh_names)
        return names

    # -- the lookups the comparison reads (unchanged by issue 17: the oracle keeps them short) --
    def resolve(self, name: str) -> ToolView:
        """By exported name first, then by id (``check`` resolves registered ids only)."""
        entry = self._entries[self._by_exported.get(name, name)]
        return ToolView(entry.tool, entry.spec)

    def specs(self) -> list[ToolSpec]:
        return [entry.spec for _, entry in sorted(self._entries.items())]

    def by_provider(self, provider: str) -> list[ToolSpec]:
        return [e.spec for _, e in sorted(self._entries.items()) if e.provider == provider]

    @property
    def collisions(self) -> list[tuple[str, ...]]:
        return list(self._collisions)

    def __len__(self) -> int:
        return len(self._entries)


def _collision_groups(entries: Mapping[str, _Entry]) -> list[tuple[str, ...]]:
    """Each group of registered ids that sanitise to one name (they competed for it)."""
    wanted: dict[str, list[str]] = {}
    for tid in sorted(entries):
        wanted.setdefault(sanitize_name(tid), []).append(tid)
    return [tuple(group) for group in wanted.values() if len(group) > 1]


# -- the comparison ---------------------------------------------------------------------------
def make_tool(tool_id: str) -> FunctionTool:
    return FunctionTool(ToolSpec(id=tool_id), lambda: "ok")


class Pair:
    """The registry and the oracle, driven alike; every step compares them."""

    def __init__(self, remembered_removals: int | None = None) -> None:
        self.new_events: list[Event] = []
        self.old_events: list[Event] = []
        new_bus, old_bus = EventBus(), EventBus()
        new_bus.subscribe(self.new_events.append)
        old_bus.subscribe(self.old_events.append)
        self.new = ToolRegistry(new_bus)
        self.old = ReferenceRegistry(old_bus)
        if remembered_removals is not None:
            self.new.remembered_removals = self.old.remembered_removals = remembered_removals

    def both(self, method: str, *args: Any, **kwargs: Any) -> None:
        errors = []
        for registry in (self.new, self.old):
            try:
                getattr(registry, method)(*args, **kwargs)
                errors.append(None)
            except (RegistrationError, ToolNotFound) as exc:
                errors.append(type(exc))
        assert errors[0] == errors[1]
        self.check()

    def check(self) -> None:
        new = {s.id: s.exported_name for s in self.new.specs()}
        old = {s.id: s.exported_name for s in self.old.specs()}
        assert new == old
        assert self.new.collisions == self.old.collisions
        assert [e.to_dict() for e in self.new_events] == [e.to_dict() for e in self.old_events]
        for spec in self.old.specs():
            assert self.new.resolve(spec.exported_name).spec == spec
            assert self.new.resolve(spec.id).spec.id == self.old.resolve(spec.id).spec.id
            assert self.new.rank_of(spec.id) == self.old.rank_of(spec.id)
        assert len(self.new) == len(self.old)
        for provider in {e.provider for e in self.old._entries.values()}:
            assert self.new.by_provider(provider) == self.old.by_provider(provider)


# ids that collide a lot: a few sanitised names, dots and dashes, long ids (hash suffixes),
# and ids that look like another id's hash-suffixed name
def _suffix_of(tool_id: str) -> str:
    return kairox._names._with_suffix(sanitize_name(tool_id), kairox._names._hash(tool_id))


_BASE = ["a.b", "a_b", "a-b", "a/b", "x.y", "x_y", "fs.read", "fs_read", "q", "Q.q", "q_q", "q.q"]
_LONG = ["s." + "x" * 70, "s_" + "x" * 70, "s." + "x" * 69 + "y"]
_CRAFTED = [_suffix_of("a.b"), _suffix_of("a_b"), _suffix_of("x.y"), _suffix_of(_LONG[0]), _suffix_of(_LONG[1])]
IDS = st.sampled_from(_BASE + _LONG + _CRAFTED)
PROVIDERS = st.sampled_from(["p0", "p1", "p2", "p3"])
RANKS = st.one_of(st.none(), st.integers(0, 2))

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), PROVIDERS, IDS, RANKS),
        st.tuples(st.just("replace"), PROVIDERS, st.lists(IDS, max_size=5), RANKS),
        st.tuples(st.just("patch"), PROVIDERS, st.lists(IDS, max_size=3), st.lists(IDS, max_size=3, unique=True)),
        st.tuples(st.just("remove"), IDS),
        st.tuples(st.just("remove_provider"), PROVIDERS),
        st.tuples(st.just("batch"), st.booleans()),
    ),
    max_size=30,
)


def run_steps(steps: list[tuple[Any, ...]], remembered_removals: int | None = None) -> Pair:
    pair = Pair(remembered_removals)
    with contextlib.ExitStack() as new_batches, contextlib.ExitStack() as old_batches:
        for step in steps:
            kind = step[0]
            if kind == "add":
                _, provider, tool_id, rank = step
                pair.both("add", make_tool(tool_id), provider=provider, rank=rank)
            elif kind == "replace":
                _, provider, ids, rank = step
                pair.both("replace_provider", provider, [make_tool(t) for t in ids], rank=rank)
            elif kind == "patch":
                _, provider, add, remove = step
                pair.both("replace", provider, add=[make_tool(t) for t in add], remove=remove)
            elif kind == "remove":
                pair.both("remove", step[1])
            elif kind == "remove_provider":
                pair.both("remove_provider", step[1])
            elif step[1]:  # open a batch
                new_batches.enter_context(pair.new.batch())
                old_batches.enter_context(pair.old.batch())
            else:  # close every open batch
                new_batches.close()
                old_batches.close()
                pair.check()
    pair.check()
    return pair


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(STEPS)
def test_random_changes_name_tools_as_the_reference_does(steps: list[tuple[Any, ...]]) -> None:
    run_steps(steps)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(STEPS, st.integers(0, 3))
# p1's removal must not free the name p0's removed a.b holds (a cap shared by all providers does)
@example(
    [
        ("add", "p0", "a.b", None),
        ("remove", "a.b"),
        ("add", "p1", "q", None),
        ("remove", "q"),
        ("add", "p2", "a_b", None),
        ("add", "p0", "a.b", None),
    ],
    1,
)
def test_forgetting_old_removals_names_tools_as_the_reference_does(
    steps: list[tuple[Any, ...]], remembered: int
) -> None:
    """With room for only a few removed tools' names, the oldest removal's name is free again."""
    run_steps(steps, remembered)


def test_a_server_that_lists_new_names_without_end_cannot_grow_the_registry_without_end() -> None:
    registry = ToolRegistry()
    registry.remembered_removals = 100
    for listing in range(50):  # each tools/list_changed names 20 tools never seen before
        registry.replace_provider("mcp:hostile", [make_tool(f"h.t{listing}_{i}") for i in range(20)])
    assert len(registry) == 20
    kept = (registry._pinned, registry._taken, registry._sanitized, registry._gone_from)
    assert [len(k) for k in kept] == [120, 120, 120, 100]
    # a tool removed among the last 100 gets its name back; its name is not given to another
    registry.replace_provider("mcp:hostile", [make_tool("h.t45_3")])
    assert registry.get_spec("h.t45_3").exported_name == "h_t45_3"
    # the oldest removal was forgotten: its id comes back as a newcomer (named as one)
    registry.replace_provider("mcp:other", [make_tool("h.t0_0")])
    assert registry.get_spec("h.t0_0").exported_name == "h_t0_0"
    assert "h.t0_0" not in registry._gone_from


def test_a_server_that_lists_new_names_without_end_cannot_make_another_forget_its_names() -> None:
    """The removals remembered are counted per provider: the churn of one server does not
    free the name of another server's tool while that server restarts."""
    registry = ToolRegistry()
    registry.remembered_removals = 100
    registry.replace_provider("mcp:a", [make_tool("a.x")])
    registry.remove_provider("mcp:a")  # server a restarts
    for listing in range(50):
        registry.replace_provider("mcp:hostile", [make_tool(f"h.t{listing}_{i}") for i in range(20)])
    registry.replace_provider("mcp:b", [make_tool("a_x")])  # wants the name a.x held
    registry.replace_provider("mcp:a", [make_tool("a.x")])  # a is back
    names = {spec.id: spec.exported_name for spec in registry.specs()}
    assert names["a.x"] == "a_x"
    assert names["a_x"].startswith("a_x_")  # the newcomer's name has a suffix


def test_the_changes_kept_for_the_next_index_stay_bounded_while_no_index_is_made() -> None:
    """Once an index was made, the ids changed since are kept for the next one; a server that
    re-lists new names while nobody asks for the tools must not grow that set without end."""
    registry = ToolRegistry()
    registry.replace_provider("mcp:hostile", [make_tool(f"h.first{i}") for i in range(20)])
    registry.index()  # a turn ranked the tools once
    for listing in range(200):  # 4,000 removals and 4,000 additions, no turn in between
        registry.replace_provider("mcp:hostile", [make_tool(f"h.t{listing}_{i}") for i in range(20)])
        assert len(registry._dirty) <= len(registry) + CHANGED_SLACK + 40
    index = registry.index()
    assert [s.id for s in index.specs] == sorted(f"h.t199_{i}" for i in range(20))
    assert index.spec(index.rank("h.t199_5")[0]).id == "h.t199_5"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(PROVIDERS, st.lists(IDS, max_size=6), RANKS), max_size=8))
def test_a_batch_of_providers_is_named_from_scratch(changes: list[tuple[str, list[str], int | None]]) -> None:
    """What a batch ends with is what assign_exported_names gives the whole set at once."""
    pair = Pair()
    with pair.new.batch(), pair.old.batch():
        for provider, ids, rank in changes:
            pair.both("replace_provider", provider, [make_tool(t) for t in ids], rank=rank)
    pair.check()
    specs = pair.new.specs()
    expected, _ = assign_exported_names([s.id for s in specs], rank={s.id: pair.new.rank_of(s.id) or 0 for s in specs})
    assert {s.id: s.exported_name for s in specs} == expected


def test_crafted_ids_that_take_a_suffixed_name_are_named_as_before() -> None:
    run_steps(
        [
            ("batch", True),
            ("replace", "p0", ["a.b", "a_b"], None),
            ("add", "p1", _suffix_of("a.b"), None),
            ("remove", "a_b"),
            ("add", "p2", "a/b", 2),
            ("batch", False),
            ("add", "p3", "a-b", None),
        ]
    )


class Counting:
    """Counts sanitize_name calls made through the registry's module."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = kairox._tool_registry.sanitize_name

        def counted(tool_id: str) -> str:
            self.calls += 1
            return real(tool_id)

        monkeypatch.setattr(kairox._tool_registry, "sanitize_name", counted)


def server_tools(server: int, count: int) -> list[FunctionTool]:
    return [make_tool(f"server{server}.tool_{i}") for i in range(count)]


@pytest.mark.parametrize("servers", [10, 40])
def test_opening_and_closing_sanitises_each_id_once(monkeypatch: pytest.MonkeyPatch, servers: int) -> None:
    """Work proportional to what changed: 50 tools per server, each id sanitised once, however
    many servers came before it; closing sanitises nothing and empty providers cost nothing."""
    counting = Counting(monkeypatch)
    registry = ToolRegistry()
    with registry.batch():
        for server in range(servers):
            registry.replace_provider(f"server{server}", server_tools(server, 50))
    assert counting.calls == servers * 50
    assert len(registry) == servers * 50
    for provider in [f"empty{i}" for i in range(11)] + [f"server{s}" for s in range(servers)]:
        registry.remove_provider(provider)
    assert counting.calls == servers * 50
    assert len(registry) == 0


def test_an_empty_provider_changes_nothing() -> None:
    events: list[Event] = []
    bus = EventBus()
    bus.subscribe(events.append)
    registry = ToolRegistry(bus)
    registry.add(make_tool("a.b"), provider="p")
    events.clear()
    registry.remove_provider("nobody")
    registry.replace_provider("nobody", [])
    assert events == []
    assert [s.exported_name for s in registry.specs()] == ["a_b"]
