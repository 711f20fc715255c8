"""The tools of a turn at 5,000 tools: how long choosing them takes, and how relevant they are.

    uv run python benchmarks/bench_context.py [--servers 100] [--tools 50] [--budget 8000] [--reps 20]

A registry holds ``--servers`` servers of ``--tools`` tools each (ids
``s017_billing.list_invoices``, descriptions and input schemas of a realistic
size; 25 topics, each served by 4 servers spread over the id order) plus the
kernel's ``tools.search`` and ``skills.search``. Timed, median of ``--reps``
runs:

- select: the tools a ``--budget``-token turn shows, for a prompt;
- search: one ``tools.search`` query;
- turn_context: the whole ``session.turn_context(prompt, tool_budget=...)`` of a
  runtime holding the same tools (instructions, skills and agents included);
- a change and the first select after it: a server's tools replaced, then one
  select (the registry's index is made again, taking over what it knew of the
  other specs and redoing the word index for the replaced ones only).

The reference is the algorithm before issue 17, copied below: every tool shaped
and serialised to JSON to estimate its tokens, in id order, on every turn; every
tool lowercased and scored on every search. The target is 5 ms for
turn_context's tools at 5,000 tools.

Relevance: for each prompt, the share of the tools shown (the two always-listed
ones aside) that come from a server of the prompt's topic, before (id order)
and now (the ``tools.search`` ranking).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import kairox
from kairox import FunctionTool, ToolSpec
from kairox._context import select_tools, skills_search_tool, tools_search_tool
from kairox.ext import ToolRegistry

TOPICS = (
    "billing", "github", "slack", "postgres", "calendar", "email", "jira", "kubernetes", "docker",
    "weather", "maps", "translate", "music", "photos", "notes", "contacts", "crm", "analytics",
    "storage", "dns", "payments", "shipping", "inventory", "hr", "wiki",
)  # fmt: skip
NOUNS = ("record", "item", "report", "entry", "note", "event", "user", "setting", "log", "file")
VERBS = ("list", "get", "create", "update", "delete")
#: each prompt and the topic of the servers it is about
PROMPTS = dict(
    [
        ("find files about billing", "billing"),
        ("open a pull request on github", "github"),
        ("why is the postgres database slow", "postgres"),
        ("post a message to the team on slack", "slack"),
    ]
)


def server_tools(server: int, count: int) -> tuple[str, list[FunctionTool]]:
    topic = TOPICS[server % len(TOPICS)]
    provider = f"s{server:03d}_{topic}"
    tools = []
    for i in range(count):
        verb, noun = VERBS[i % len(VERBS)], NOUNS[(i // len(VERBS)) % len(NOUNS)]
        spec = ToolSpec(
            id=f"{provider}.{verb}_{noun}_{i}",
            description=f"{verb.title()} a {noun} of the {topic} service. Returns the {noun} as JSON; "
            f"fails when the {topic} account is not connected.",
            input_schema={
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": f"the {noun}'s id"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                },
                "required": ["id"],
            },
            provider=provider,
        )
        tools.append(FunctionTool(spec, lambda **_: "ok"))
    return provider, tools


# -- the reference: turn_context's tools and tools.search before issue 17 (copied) ------------
def reference_estimate(value: Any) -> int:
    return max(1, len(json.dumps(value, ensure_ascii=False)) // 4)


def reference_select(specs: Sequence[ToolSpec], budget: int) -> list[dict[str, Any]]:
    shaped = [s.to_model_tool() for s in specs]
    kept = ("tools.search", "skills.search")
    search = sorted(
        (t for s, t in zip(specs, shaped, strict=True) if s.id in kept), key=lambda t: t["name"] != "tools_search"
    )
    rest = [t for s, t in zip(specs, shaped, strict=True) if s.id not in kept]
    chosen: list[dict[str, Any]] = []
    used = sum(reference_estimate(t) for t in search)
    for tool in rest:  # each tool that still fits, in id order
        if used + (cost := reference_estimate(tool)) <= budget:
            chosen.append(tool)
            used += cost
    omitted = len(rest) - len(chosen)
    return search + chosen if omitted else chosen + [t for t in search if t not in chosen]


def reference_search(specs: Sequence[ToolSpec], query: str, limit: int = 10) -> list[str]:
    words = [w for w in query.lower().split() if w]
    scored = []
    for spec in specs:
        if spec.id == "tools.search":
            continue
        hay_id = f"{spec.id} {spec.exported_name}".lower()
        hay = spec.description.lower()
        score = sum(3 if w in hay_id else 1 if w in hay else 0 for w in words)
        if score:
            scored.append((score, spec))
    scored.sort(key=lambda p: (-p[0], p[1].id))
    return [s.id for _, s in scored[:limit]]


# -- timing ----------------------------------------------------------------------------------
def median_ms(fn: Callable[[], Any], reps: int) -> float:
    fn()  # the first run fills the caches a steady turn finds filled
    times = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    finally:
        gc.enable()
    return statistics.median(times) * 1000


def filled_registry(servers: int, tools: int, runtime: Any = None) -> ToolRegistry:
    registry: ToolRegistry = runtime.tools if runtime is not None else ToolRegistry()
    with registry.batch():
        if runtime is None:
            fake: Any = type("R", (), {"tools": registry})()
            registry.replace_provider("kairox", [tools_search_tool(fake), skills_search_tool(fake)])
        for s in range(servers):
            provider, batch = server_tools(s, tools)
            registry.replace_provider(provider, batch)
    return registry


def relevance(tools: list[dict[str, Any]], topic: str) -> tuple[int, int]:
    shown = [t["name"] for t in tools if t["name"] not in ("tools_search", "skills_search")]
    return sum(1 for name in shown if name.split("_")[1] == topic), len(shown)


async def time_turn_context(
    ws: Path, home: Path, servers: int, tools: int, budget: int, prompt: str, reps: int
) -> float:
    async with kairox.Runtime.open(ws, home=home, load_entrypoints=False, env={}) as rt, rt.session() as s:
        filled_registry(servers, tools, rt)
        tc = await s.turn_context(prompt, tool_budget=budget)
        assert tc.omitted_tools > len(rt.tools) // 2 and len(tc.tools) > 2, "the budget did not cut"
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            await s.turn_context(prompt, tool_budget=budget)
            times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=100)
    parser.add_argument("--tools", type=int, default=50)
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--reps", type=int, default=20)
    opts = parser.parse_args()
    registry = filled_registry(opts.servers, opts.tools)
    total = len(registry)
    prompt = next(iter(PROMPTS))
    print(f"# turn_context's tools: {total:,} tools, budget {opts.budget:,} tokens (medians of {opts.reps})")
    print()
    print("| what | before issue 17 | now | ratio | target |")
    print("|---|---|---|---|---|")
    before = median_ms(lambda: reference_select(registry.specs(), opts.budget), opts.reps)
    now = median_ms(lambda: select_tools(registry.index(), prompt, opts.budget), opts.reps)
    print(f"| select ({prompt!r}) | {before:.2f} ms | {now:.3f} ms | {before / now:.0f}x | 5 ms |")
    search = tools_search_tool(type("R", (), {"tools": registry})())
    before = median_ms(lambda: reference_search(registry.specs(), "billing invoices"), opts.reps)
    now = median_ms(lambda: asyncio.run(search.call({"query": "billing invoices"}, kairox.ToolContext())), opts.reps)
    print(
        f"| tools.search ('billing invoices', with asyncio.run) | {before:.2f} ms | {now:.3f} ms | {before / now:.0f}x | |"
    )
    provider, batch = server_tools(7, opts.tools)
    changes, selects = [], []
    for _ in range(opts.reps):
        t0 = time.perf_counter()
        registry.replace_provider(provider, list(batch))
        t1 = time.perf_counter()
        select_tools(registry.index(), prompt, opts.budget)
        selects.append(time.perf_counter() - t1)
        changes.append(t1 - t0)
    change, first = statistics.median(changes) * 1000, statistics.median(selects) * 1000
    print(f"| a server's {opts.tools} tools replaced (the registry change) | | {change:.2f} ms | | |")
    print(f"| the first select after it (the index made again) | | {first:.2f} ms | | |")
    with tempfile.TemporaryDirectory() as tmp:
        ws, home = Path(tmp, "ws"), Path(tmp, "home")
        ws.mkdir()
        home.mkdir()
        whole = asyncio.run(time_turn_context(ws, home, opts.servers, opts.tools, opts.budget, prompt, opts.reps))
    print(f"| whole session.turn_context (a runtime with these tools) | | {whole:.2f} ms | | |")
    print()
    print(f"# relevance: tools shown from a server of the prompt's topic ({opts.servers // len(TOPICS)} servers each)")
    print()
    print("| prompt | before (id order) | now (ranked) |")
    print("|---|---|---|")
    for text, topic in PROMPTS.items():
        old_hit, old_shown = relevance(reference_select(registry.specs(), opts.budget), topic)
        new_hit, new_shown = relevance(select_tools(registry.index(), text, opts.budget)[0], topic)
        print(f"| {text} | {old_hit} of {old_shown} | {new_hit} of {new_shown} |")


if __name__ == "__main__":
    main()
