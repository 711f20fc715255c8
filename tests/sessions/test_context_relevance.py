"""The tools a budget keeps: the always-listed ones, then the most relevant to the prompt.

``turn_context(prompt, tool_budget=...)`` takes the longest start of one ranking that fits
the budget: ``tools.search`` and ``skills.search``, then the tools that match the prompt
(scored as ``tools.search`` scores them), then the rest in id order. The ranking runs on
the registry's index (a word index kept up to date change by change); the oracle below
scores every tool's text directly, as ``tools.search`` did before it had an index.
How long it takes is in ``benchmarks/bench_context.py``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kairox
from kairox import FunctionTool, ToolSpec
from kairox._context import (
    ALWAYS_LISTED,
    MAX_PASSED_OVER,
    select_tools,
    skills_search_tool,
    tool_ranking,
    tools_search_tool,
)
from kairox._tool_index import ToolIndex, estimate_tokens
from kairox.errors import RegistrationError
from kairox.ext import ToolRegistry


def tool(tool_id: str, description: str = "", schema_words: int = 0) -> FunctionTool:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"q": {"type": "string", "description": "w " * schema_words}},
    }
    return FunctionTool(ToolSpec(id=tool_id, description=description, input_schema=schema), lambda: "ok")


def registry_with_search(*providers: tuple[str, list[FunctionTool]]) -> ToolRegistry:
    registry = ToolRegistry()
    holder: Any = type("Holder", (), {"tools": registry})()
    registry.replace_provider("kairox", [tools_search_tool(holder), skills_search_tool(holder)])
    for name, tools in providers:
        registry.replace_provider(name, tools)
    return registry


def oracle_order(specs: list[ToolSpec], query: str) -> list[str]:
    """Every tool that matches ``query``, best first: 3 a word in the id or exported name, else 1 in the description."""
    words = query.lower().split()

    def score(spec: ToolSpec) -> int:
        name, text = f"{spec.id} {spec.exported_name}".lower(), spec.description.lower()
        return sum(3 if w in name else (w in text) for w in words)

    scored = {s.id: score(s) for s in specs}
    return sorted((i for i, n in scored.items() if n), key=lambda i: (-scored[i], i))


def servers(count: int, topics: tuple[str, ...]) -> list[tuple[str, list[FunctionTool]]]:
    out = []
    for n in range(count):
        topic = topics[n % len(topics)]
        name = f"s{n:02d}_{topic}"
        out.append((name, [tool(f"{name}.{verb}", f"{verb} {topic} records", 20) for verb in ("list", "get", "put")]))
    return out


def room_for_six(index: ToolIndex) -> int:
    """A budget for the always-listed tools and six tools of :func:`servers` (they cost alike)."""
    always = sum(index.tokens(index.position(t) or 0) for t in ALWAYS_LISTED)
    return always + 6 * index.tokens(index.position("s00_billing.get") or 0)


def test_a_budget_keeps_the_tools_of_the_servers_the_prompt_is_about() -> None:
    registry = registry_with_search(*servers(12, ("billing", "github", "slack", "maps")))
    index = registry.index()
    tools, omitted = select_tools(index, "find records about billing", room_for_six(index))
    names = [t["name"] for t in tools]
    assert names[:2] == ["tools_search", "skills_search"]
    # 3 billing servers of 3 tools: the 6 that fit are billing tools, in id order (their scores tie)
    assert names[2:] == [
        "s00_billing_get",
        "s00_billing_list",
        "s00_billing_put",
        "s04_billing_get",
        "s04_billing_list",
        "s04_billing_put",
    ]
    assert omitted == len(registry) - 8


def test_with_no_word_of_the_prompt_matching_the_tools_go_in_id_order() -> None:
    registry = registry_with_search(*servers(12, ("billing", "github", "slack", "maps")))
    index = registry.index()
    tools, _ = select_tools(index, "zzz", room_for_six(index))
    assert [t["name"] for t in tools[2:]] == [
        "s00_billing_get",
        "s00_billing_list",
        "s00_billing_put",
        "s01_github_get",
        "s01_github_list",
        "s01_github_put",
    ]


def test_the_always_listed_tools_come_first_even_when_another_tool_matches_better() -> None:
    registry = registry_with_search(("x", [tool("tools.find", "search the tools for tools")]))
    order = [registry.index().spec(at).id for at in tool_ranking(registry.index(), "tools search")]
    assert order[:2] == ["tools.search", "skills.search"]
    assert order[2] == "tools.find"
    tools, omitted = select_tools(registry.index(), "tools search", 1)  # not even those fit: they stay
    assert [t["name"] for t in tools] == ["tools_search", "skills_search"] and omitted == 1


@pytest.mark.anyio
async def test_the_budget_follows_the_ranking_of_tools_search() -> None:
    registry = registry_with_search(*servers(20, ("billing", "github", "slack", "maps", "wiki")))
    prompt = "get billing records"
    tools, _ = select_tools(registry.index(), prompt, 100_000)
    ranked = [t["name"] for t in tools[2:]]
    search = tools_search_tool(type("Holder", (), {"tools": registry})())
    result = await search.call({"query": prompt, "limit": 100}, kairox.ToolContext())
    assert result.structured is not None
    found = [t["name"] for t in result.structured["tools"]]
    assert len(found) == 60  # every tool has "records" in its description
    assert ranked[: len(found)] == found
    assert len(ranked) == len(registry) - 2  # everything fits: nothing left out


def test_a_changed_description_is_ranked_by_its_new_text() -> None:
    registry = registry_with_search(("a", [tool("a.one", "plain"), tool("a.two", "plain")]))
    assert registry.index().rank("weather") == []
    registry.replace_provider("a", [tool("a.one", "plain"), tool("a.two", "the weather today")])
    index = registry.index()
    assert [index.spec(at).id for at in index.rank("weather")] == ["a.two"]
    registry.remove_provider("a")
    assert registry.index().rank("weather") == []


def test_a_word_with_punctuation_is_found_across_the_parts_of_an_id() -> None:
    registry = registry_with_search(
        ("fs", [tool("fs.read_file"), tool("fs.write", "write a file (fs.read_file reads)")])
    )
    index = registry.index()
    assert [index.spec(at).id for at in index.rank("fs.read_file")] == ["fs.read_file", "fs.write"]
    assert [index.spec(at).id for at in index.rank("d_f")] == ["fs.read_file", "fs.write"]


@pytest.mark.anyio
async def test_turn_context_shows_the_billing_tools_for_a_billing_prompt(
    kairox_workspace: Path, kairox_home: Path
) -> None:
    async with (
        kairox.Runtime.open(kairox_workspace, home=kairox_home, load_entrypoints=False, env={}) as rt,
        rt.session() as s,
    ):
        for name, tools in servers(12, ("billing", "github", "slack", "maps")):
            rt.tools.replace_provider(name, tools)
        tc = await s.turn_context("billing records", tool_budget=1200)
        names = [t["name"] for t in tc.tools]
        assert names[:2] == ["tools_search", "skills_search"]
        # 3 billing servers of 3 tools first; the budget has room for some of the others after them
        assert len(names) > 11 and all("_billing_" in n for n in names[2:11])
        assert not any("_billing_" in n for n in names[11:])
        assert tc.omitted_tools == len(rt.tools) - len(names)


# -- properties -------------------------------------------------------------------------------
letters = st.sampled_from(["a", "b", "ab", "é", "A", "1", "_", ".", "-", " ", "\n", "ß", "İ"])
texts = st.lists(letters, max_size=12).map("".join)
ids = st.lists(st.sampled_from(["a", "b", "ab", "_", ".", "-", "1", "É"]), min_size=1, max_size=6).map("".join)
queries = st.lists(
    st.sampled_from(["a", "b", "ab", "A", "_", ".", "a.b", "b_a", "é", "ss", "i̇", "1", "ab1"]), max_size=4
)


@st.composite
def changes(draw: st.DrawFn) -> list[tuple[str, dict[str, str], int | None]]:
    """A few providers' tool sets, one after another (a provider may come back with other
    tools; ids such as ``a.b`` and ``a_b`` compete for an exported name, ranks decide)."""
    steps = []
    for _ in range(draw(st.integers(1, 5))):
        provider = draw(st.sampled_from(["p", "q", "r"]))
        tools = draw(st.dictionaries(ids, texts, max_size=5))
        steps.append((provider, tools, draw(st.sampled_from([None, 0, 1, 2]))))
    return steps


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=changes(), query=queries, in_batch=st.booleans())
def test_the_index_ranks_every_change_as_scoring_every_text_does(
    steps: list[tuple[str, dict[str, str], int | None]], query: list[str], in_batch: bool
) -> None:
    """Inside a batch a newcomer's exported name may move on a later change: the index sees it."""
    registry = ToolRegistry()
    prompt = " ".join(query)
    with registry.batch() if in_batch else contextlib.nullcontext():
        for provider, tools, rank in steps:
            with contextlib.suppress(RegistrationError):  # an id another provider holds
                registry.replace_provider(provider, [tool(i, d) for i, d in tools.items()], rank=rank)
            index = registry.index()
            assert [index.spec(at).id for at in index.rank(prompt)] == oracle_order(registry.specs(), prompt)
    index = registry.index()
    assert [index.spec(at).id for at in index.rank(prompt)] == oracle_order(registry.specs(), prompt)


@settings(max_examples=150, deadline=None)
@given(
    tools=st.dictionaries(ids.map("t.{}".format), st.tuples(texts, st.integers(0, 60)), max_size=12),
    query=queries,
    budget=st.integers(0, 600),
)
def test_the_chosen_tools_fit_the_budget_and_follow_the_ranking(
    tools: dict[str, tuple[str, int]], query: list[str], budget: int
) -> None:
    registry = registry_with_search(("t", [tool(i, d, n) for i, (d, n) in tools.items()]))
    index, prompt = registry.index(), " ".join(query)
    chosen, omitted = select_tools(index, prompt, budget)
    ranking = [index.spec(at).to_model_tool() for at in tool_ranking(index, prompt)]
    assert omitted == len(ranking) - len(chosen)
    costs = [estimate_tokens(t) for t in chosen]
    assert [t["name"] for t in chosen[:2]] == ["tools_search", "skills_search"]
    if len(chosen) > 2:
        assert sum(costs) <= budget
    # greedy in ranking order (fewer than MAX_PASSED_OVER tools here): every tool left
    # out would not have fitted beside those chosen before it
    used, picked = 0, []
    for at, model_tool in enumerate(ranking):
        cost = estimate_tokens(model_tool)
        if at >= 2 and used + cost > budget:
            continue
        picked.append(model_tool)
        used += cost
    assert chosen == picked
    # the ranking: the always-listed, the matches best first, then the rest in id order
    matched = [i for i in oracle_order(registry.specs(), prompt) if i not in ALWAYS_LISTED]
    rest = sorted(set(tools) - set(matched))
    assert [t["name"] for t in ranking] == [
        "tools_search",
        "skills_search",
        *(registry.get_spec(i).exported_name for i in [*matched, *rest]),
    ]


def test_an_oversized_tool_that_ranks_first_does_not_crowd_out_the_others() -> None:
    """A hostile server's tool stuffed with the prompt's words and a huge schema ranks first
    for the prompt but is too big for the budget: it is passed over, the next ones go in."""
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(2000)}}
    huge = FunctionTool(
        ToolSpec(id="evil.billing_invoices", description="billing invoices " * 50, input_schema=schema), lambda: "ok"
    )
    registry = registry_with_search(
        ("evil", [huge]), ("billing", [tool(f"billing.t{i}", "billing", 0) for i in range(5)])
    )
    index = registry.index()
    assert index.spec(next(iter(index.rank("billing invoices")))).id == "evil.billing_invoices"  # it ranks first
    chosen, omitted = select_tools(index, "billing invoices", 2000)
    names = [t["name"] for t in chosen]
    assert "evil_billing_invoices" not in names and omitted == 1
    assert names[2:] == [f"billing_t{i}" for i in range(5)]


def test_a_long_run_of_tools_too_big_for_the_budget_ends_the_scan() -> None:
    big = [tool(f"big.t{i:03}", "x" * 4000, 0) for i in range(MAX_PASSED_OVER + 5)]
    registry = registry_with_search(("big", big), ("small", [tool("zz.small", "y", 0)]))
    chosen, omitted = select_tools(registry.index(), "", 500)
    # zz.small comes after MAX_PASSED_OVER oversized tools in id order: the scan stopped first
    assert [t["name"] for t in chosen] == ["tools_search", "skills_search"] and omitted == len(big) + 1


def test_many_changes_without_a_ranking_keep_the_index_bounded_and_right() -> None:
    """A gateway that only lists tools never ranks: the ids changed since the last ranking
    are not remembered without end (the index starts afresh), and the ranking stays right."""
    from kairox._tool_index import CHANGED_SLACK

    registry = ToolRegistry()
    registry.index().rank("warm")  # an index with state, which the next ones take over
    for round_ in range(60):
        registry.replace_provider("p", [tool(f"p.r{round_}_t{i}", f"round {round_}") for i in range(50)])
        index = registry.index()  # asked for (a listing), never ranked
        assert len(index._changed) <= len(index) + CHANGED_SLACK
    assert [index.spec(at).id for at in index.rank("round 59")][:50] == sorted(f"p.r59_t{i}" for i in range(50))


def test_a_description_is_searched_in_its_first_4096_characters() -> None:
    from kairox._tool_index import SEARCHED_DESCRIPTION

    padding = "x" * (SEARCHED_DESCRIPTION - 10)
    registry = registry_with_search(
        ("p", [tool("p.one", padding + " early"), tool("p.two", padding + "  " * 10 + "late")])
    )
    index = registry.index()
    assert [index.spec(at).id for at in index.rank("early")] == ["p.one"]
    assert [index.spec(at).id for at in index.rank("late")] == []
