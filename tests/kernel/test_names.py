"""Exported tool names: always valid, unique, stable, independent of registration order."""

from __future__ import annotations

import random

from hypothesis import example, given
from hypothesis import strategies as st

from kairox import FunctionTool, ToolSpec
from kairox._names import EXPORTED_NAME_RE, MAX_EXPORTED_LEN
from kairox.ext import ToolRegistry, assign_exported_names, sanitize_name

# canonical ids as they come from MCP servers and plugins: dots, dashes, unicode, long names
IDS = st.one_of(
    st.text(max_size=80),
    st.from_regex(r"[a-z]{1,6}\.[a-z_]{1,8}", fullmatch=True),
    st.builds(lambda a, b: f"{a}.{b}", st.sampled_from(["git", "fs", "a.b", "a_b", "x"]), st.text(max_size=70)),
    st.from_regex(r"[A-Za-z0-9_-]{60,70}", fullmatch=True),
)


def test_examples() -> None:
    assert sanitize_name("fs.read") == "fs_read"
    assert sanitize_name("git.git_status") == "git_git_status"
    assert sanitize_name("ok-name_1") == "ok-name_1"
    assert sanitize_name("über.tool") == "_ber_tool"
    assert sanitize_name("") == "tool"
    long = "server." + "x" * 100
    name = sanitize_name(long)
    assert len(name) == MAX_EXPORTED_LEN
    assert name.startswith("server_xxx") and EXPORTED_NAME_RE.match(name)
    assert name == sanitize_name(long)  # stable


def test_collision_is_resolved_deterministically_and_reported() -> None:
    names, collisions = assign_exported_names(["a.b", "a_b", "a-b"])
    assert names["a_b"] == "a_b"  # the id that equals the name keeps it
    assert names["a.b"] != "a_b" and names["a.b"].startswith("a_b_")
    assert names["a-b"] == "a-b"
    assert collisions == [("a.b", "a_b")]

    names, collisions = assign_exported_names(["x.y", "x/y"])
    assert names["x.y"] == "x_y"  # no exact owner: the smallest id keeps it
    assert names["x/y"].startswith("x_y_")
    assert collisions == [("x.y", "x/y")]


@given(ids=st.lists(IDS, max_size=30))
def test_exported_names_are_valid_and_unique(ids: list[str]) -> None:
    names, collisions = assign_exported_names(ids)
    assert set(names) == set(ids)
    assert all(EXPORTED_NAME_RE.match(n) for n in names.values()), names
    assert len(set(names.values())) == len(names)
    for group in collisions:
        assert len(group) > 1
        assert len({sanitize_name(cid) for cid in group}) == 1


@given(ids=st.lists(IDS, max_size=20), seed=st.integers())
def test_exported_names_do_not_depend_on_order(ids: list[str], seed: int) -> None:
    shuffled = list(ids)
    random.Random(seed).shuffle(shuffled)
    assert assign_exported_names(ids) == assign_exported_names(shuffled)


@given(ids=st.lists(IDS, max_size=20, unique=True))
@example(ids=["0\n"])  # EXPORTED_NAME_RE once ended in `$`, which matches before a final newline
def test_a_valid_name_without_rival_is_kept(ids: list[str]) -> None:
    names, _ = assign_exported_names(ids)
    for cid in ids:
        if EXPORTED_NAME_RE.match(cid):
            assert names[cid] == cid


@given(ids=st.lists(IDS, max_size=15, unique=True), seed=st.integers())
def test_registry_resolves_every_tool_by_both_names_whatever_the_order(ids: list[str], seed: int) -> None:
    def tool(cid: str) -> FunctionTool:
        return FunctionTool(ToolSpec(cid), lambda: cid)

    one = ToolRegistry()
    with one.batch():  # tools that arrive together (a parallel start) are named as one set
        for cid in ids:
            one.add(tool(cid), provider="p")
    other = ToolRegistry()
    shuffled = list(ids)
    random.Random(seed).shuffle(shuffled)
    with other.batch():
        for cid in shuffled:
            other.add(tool(cid), provider="q")
    assert [s.exported_name for s in one.specs()] == [s.exported_name for s in other.specs()]
    for spec in one.specs():
        assert one.resolve(spec.id).spec.id == spec.id
        assert one.resolve(spec.exported_name).spec.id == spec.id
