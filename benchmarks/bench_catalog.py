"""Catalog search on 10,000 entries against a floor: a plain substring scan.

Run: ``uv run python benchmarks/bench_catalog.py [--entries N]``

The floor scans pre-lowered "name title tags description" strings for the
whole query (``q in text``): no ranking, no word boundaries, no multi-term AND.
The ranked search (kairox_catalog.search.SearchIndex) does all of that; the
ratio column says what it costs over the floor. Times are the best of several
runs, in milliseconds per query.
"""

from __future__ import annotations

import argparse
import functools
import random
import time
from collections.abc import Callable

from kairox_catalog.builtin import BUILTIN_ENTRIES
from kairox_catalog.model import CatalogEntry, LaunchRecipe
from kairox_catalog.search import SearchIndex

WORDS = (
    "git github gitlab time clock zone browser web fetch http search index file files filesystem memory graph "
    "knowledge database sql postgres sqlite redis cloud aws azure kubernetes docker container slack email "
    "calendar notes issue ticket jira linear sentry log metrics monitor weather maps translate pdf image audio "
    "video youtube spotify music finance stock crypto payment stripe shop order invoice code review lint test "
    "deploy build ci pipeline secret vault auth oauth token user team chat discord telegram sms phone"
).split()
QUERIES = ["git", "browser", "time zone", "knowledge graph", "docker container deploy", "sql", "zzz-nothing", "a"]


def make_entries(n: int, seed: int = 7) -> list[CatalogEntry]:
    rng = random.Random(seed)
    entries = list(BUILTIN_ENTRIES)
    recipe = LaunchRecipe(command="npx", args=("-y", "pkg"))
    while len(entries) < n:
        i = len(entries)
        name = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{i}"
        entries.append(
            CatalogEntry(
                name=name,
                title=" ".join(rng.choice(WORDS).title() for _ in range(2)),
                description=" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 20))),
                tags=tuple(rng.choice(WORDS) for _ in range(rng.randint(0, 4))),
                launch=recipe,
                source="bench",
            )
        )
    return entries


def best_ms(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--limit", type=int, default=20, help="results wanted (the CLI shows 20)")
    args = parser.parse_args()

    entries = make_entries(args.entries)
    build_ms = best_ms(lambda: SearchIndex(entries), 3)
    index = SearchIndex(entries)
    texts = [(e, " ".join((e.name, e.title, " ".join(e.tags), e.description)).lower()) for e in entries]

    def floor(q: str) -> list[CatalogEntry]:
        ql = q.lower()
        return [e for e, text in texts if ql in text]

    print(f"catalog search, {len(entries):,} entries; index build {build_ms:.1f} ms (once per catalog load)")
    print()
    print(f"{'query':<26} {'floor hits':>10} {'ranked hits':>11} {'floor ms':>9} {'ranked ms':>10} {'ratio':>6}")
    print("-" * 77)
    ratios = []
    for q in QUERIES:
        f_ms = best_ms(functools.partial(floor, q), args.repeat)
        r_ms = best_ms(functools.partial(index.search, q, limit=args.limit), args.repeat)
        ratio = r_ms / f_ms if f_ms else float("nan")
        ratios.append(ratio)
        print(f"{q:<26} {len(floor(q)):>10} {len(index.search(q)):>11} {f_ms:>9.2f} {r_ms:>10.2f} {ratio:>5.1f}x")
    print("-" * 77)
    print(f"{'worst ratio':<60} {max(ratios):>15.1f}x")
    print()
    print("floor: one substring test per entry for the whole query (no ranking, no AND of terms);")
    print("ranked: every term must match (rejected by one substring test on a blob), then scored and sorted.")


if __name__ == "__main__":
    main()
