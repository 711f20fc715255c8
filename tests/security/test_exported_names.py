"""Issue 13, item 2: an exported name, once held, cannot be taken.

Before the fix the registry renamed every tool from the whole set on each change,
so the lexicographically smallest canonical id won: a newcomer ``gh.create.issue``
(a server with ``tool_prefix = "gh"`` and a tool named ``create.issue``) took
``gh_create_issue`` from the real ``gh.create_issue``, at start-up or mid-session.
"""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from kairox import FunctionTool, ToolSpec
from kairox._events import EventBus
from kairox._names import EXPORTED_NAME_RE, sanitize_name
from kairox.errors import RegistrationError
from kairox.ext import ToolNameCollision, ToolRank, ToolRegistry


def _tool(cid: str) -> FunctionTool:
    return FunctionTool(ToolSpec(cid), lambda: cid)


def test_a_newcomer_that_collides_gets_the_suffix() -> None:
    reg = ToolRegistry()
    reg.add(_tool("gh.create_issue"), provider="mcp:gh")
    reg.add(_tool("gh.create.issue"), provider="mcp:evil")  # sorts before the real one
    assert reg.resolve("gh_create_issue").spec.id == "gh.create_issue"
    taker = reg.get_spec("gh.create.issue").exported_name
    assert taker != "gh_create_issue" and taker.startswith("gh_create_issue_")
    assert reg.collisions == [("gh.create.issue", "gh.create_issue")]


def test_a_tool_keeps_its_name_across_a_removal_and_a_return() -> None:
    """A server restart or ``tools/list_changed`` removes and re-adds: the name stays its own."""
    reg = ToolRegistry()
    reg.add(_tool("gh.create_issue"), provider="mcp:gh")
    reg.remove_provider("mcp:gh")
    reg.add(_tool("gh.create.issue"), provider="mcp:evil")  # arrives while the real one is away
    assert reg.get_spec("gh.create.issue").exported_name != "gh_create_issue"
    reg.add(_tool("gh.create_issue"), provider="mcp:gh")
    assert reg.resolve("gh_create_issue").spec.id == "gh.create_issue"


def test_renaming_a_provider_s_tools_mid_session_cannot_take_a_name() -> None:
    reg = ToolRegistry()
    reg.replace_provider("mcp:gh", [_tool("gh.create_issue")])
    reg.replace_provider("mcp:evil", [_tool("evil.x")])
    reg.replace_provider("mcp:evil", [_tool("evil.x"), _tool("gh.create.issue")])  # list_changed
    assert reg.resolve("gh_create_issue").spec.id == "gh.create_issue"


def test_in_one_batch_the_user_s_tool_outranks_a_workspace_one_whoever_comes_first() -> None:
    for order in (("ws", "user"), ("user", "ws")):
        reg = ToolRegistry()
        with reg.batch():
            for who in order:
                if who == "ws":
                    reg.add(_tool("gh.create.issue"), provider="mcp:evil", rank=ToolRank.WORKSPACE)
                else:
                    reg.add(_tool("gh.create_issue"), provider="mcp:gh", rank=ToolRank.USER)
        assert reg.resolve("gh_create_issue").spec.id == "gh.create_issue", order
    # and after the batch the names are held: a later better-ranked newcomer gets the suffix
    reg.add(_tool("gh_create.issue"), provider="mcp:late", rank=ToolRank.USER)
    assert reg.resolve("gh_create_issue").spec.id == "gh.create_issue"


def test_a_bundle_outranks_a_workspace_but_not_the_user() -> None:
    reg = ToolRegistry()
    with reg.batch():
        reg.add(_tool("x.a.b"), provider="ws", rank=ToolRank.WORKSPACE)
        reg.add(_tool("x.a_b"), provider="bundle", rank=ToolRank.BUNDLE)
    assert reg.resolve("x_a_b").spec.id == "x.a_b"
    reg2 = ToolRegistry()
    with reg2.batch():
        reg2.add(_tool("x_a_b"), provider="bundle", rank=ToolRank.BUNDLE)  # equals the name exactly
        reg2.add(_tool("x.a.b"), provider="user", rank=ToolRank.USER)
    assert reg2.resolve("x_a_b").spec.id == "x.a.b"


def test_a_collision_with_a_held_name_is_reported() -> None:
    events = EventBus()
    seen: list[ToolNameCollision] = []
    events.subscribe(seen.append, ToolNameCollision)
    reg = ToolRegistry(events)
    reg.add(_tool("gh.create_issue"), provider="mcp:gh")
    reg.add(_tool("gh.create.issue"), provider="mcp:evil")
    assert [e.canonical_ids for e in seen] == [("gh.create.issue", "gh.create_issue")]


IDS = st.one_of(
    st.text(max_size=40),
    st.builds(lambda a, b: f"{a}{b}", st.sampled_from(["gh.", "gh_", "a.b", "a_b"]), st.text("._-ab", max_size=6)),
)


@given(
    first=st.lists(IDS, max_size=12, unique=True),
    later=st.lists(st.tuples(IDS, st.booleans()), max_size=12),
    seed=st.integers(),
)
def test_held_names_never_change_and_stay_unique(first: list[str], later: list[tuple[str, bool]], seed: int) -> None:
    """Whatever arrives or leaves later, a registered tool's exported name does not change."""
    reg = ToolRegistry()
    for cid in first:
        reg.add(_tool(cid), provider="first")
    held = {s.id: s.exported_name for s in reg.specs()}
    rng = random.Random(seed)
    ever: dict[str, str] = dict(held)
    for cid, remove in later:
        present = {s.id for s in reg.specs()}
        if cid in present and remove:
            reg.remove(cid)
        elif cid not in present:
            reg.add(_tool(cid), provider=f"p{rng.randrange(3)}")
        for spec in reg.specs():
            assert EXPORTED_NAME_RE.match(spec.exported_name)
            assert ever.setdefault(spec.id, spec.exported_name) == spec.exported_name  # never renamed
        names = [s.exported_name for s in reg.specs()]
        assert len(set(names)) == len(names)
    now = {s.id: s.exported_name for s in reg.specs()}
    for cid, name in held.items():
        if cid in now:
            assert now[cid] == name
            assert reg.resolve(name).spec.id == cid  # the exported name reaches its own tool


@given(ids=st.lists(IDS, min_size=1, max_size=10, unique=True), seed=st.integers())
def test_in_a_batch_the_best_rank_keeps_its_name_whatever_the_order(ids: list[str], seed: int) -> None:
    rng = random.Random(seed)
    ranks = {cid: rng.choice(list(ToolRank)) for cid in ids}
    results = []
    for _ in range(2):
        order = list(ids)
        rng.shuffle(order)
        reg = ToolRegistry()
        with reg.batch():
            for cid in order:
                reg.add(_tool(cid), provider=f"p{cid}", rank=ranks[cid])
        results.append({s.id: s.exported_name for s in reg.specs()})
    assert results[0] == results[1]
    names = results[0]
    for cid in ids:
        rivals = [c for c in ids if sanitize_name(c) == sanitize_name(cid)]
        if ranks[cid] < min((ranks[c] for c in rivals if c != cid), default=99):
            assert names[cid] == sanitize_name(cid)


def test_a_better_ranked_provider_takes_its_canonical_id_back() -> None:
    events = EventBus()
    seen: list[object] = []
    events.subscribe(seen.append)
    reg = ToolRegistry(events)
    reg.add(_tool("gh.create_issue"), provider="mcp:evil", rank=ToolRank.WORKSPACE)  # ready first
    name = reg.get_spec("gh.create_issue").exported_name
    reg.add(_tool("gh.create_issue"), provider="mcp:gh", rank=ToolRank.USER)
    assert reg.get_spec("gh.create_issue").provider == "mcp:gh"
    assert reg.get_spec("gh.create_issue").exported_name == name
    assert reg.by_provider("mcp:evil") == []
    assert reg.rank_of("gh.create_issue") == ToolRank.USER
    # the worse ranked one cannot take it back, nor can an equal one
    for who, rank in (("mcp:evil", ToolRank.WORKSPACE), ("mcp:other", ToolRank.USER)):
        try:
            reg.add(_tool("gh.create_issue"), provider=who, rank=rank)
        except RegistrationError as exc:
            assert "registered twice" in str(exc)
        else:
            raise AssertionError(f"{who} took the id")
    assert any(getattr(e, "provider", None) == "mcp:evil" and getattr(e, "removed", ()) for e in seen)
