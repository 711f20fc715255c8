"""The tool registry at 10, 50 and 100 servers of 50 tools: open and close, against the registry before issue 17.

    uv run python benchmarks/bench_registry.py [--tools 50] [--reps 5]

Opening is what ``Runtime.start_providers`` does: every provider's tools arrive
with ``replace_provider`` inside one ``batch()``; closing is what
``Runtime.aclose`` does: ``remove_provider`` for each provider, the 11 built-in
ones with no tools included. The reference is the registry as it was (kept
test-only in ``tests/kernel/test_registry_scaling.py``, the oracle of its
property tests), which copied the registry and named every newcomer again on
each change. Columns: median seconds, and ``sanitize_name`` calls.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import kairox._names
import kairox._tools
from kairox import FunctionTool, ToolSpec
from kairox.ext import ToolRegistry

REPO = Path(__file__).resolve().parent.parent


def reference_class() -> Any:
    path = REPO / "tests" / "kernel" / "test_registry_scaling.py"
    spec = importlib.util.spec_from_file_location("registry_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Counter:
    def __init__(self, modules: list[Any]) -> None:
        self.calls = 0
        self.modules = modules
        real = kairox._names.sanitize_name

        def counted(tool_id: str) -> str:
            self.calls += 1
            return real(tool_id)

        for m in modules:
            m.sanitize_name = counted
        kairox._names.sanitize_name = counted  # assign_exported_names and _suffixed call it too


def one_run(make: Any, servers: int, tools: int) -> tuple[float, float]:
    batches = [
        (f"server{s}", [FunctionTool(ToolSpec(id=f"server{s}.tool_{i}"), lambda: "ok") for i in range(tools)])
        for s in range(servers)
    ]
    registry = make()
    gc.collect()
    gc.disable()  # as timeit does: the collector's passes scale with the whole heap, not the registry
    try:
        t0 = time.perf_counter()
        with registry.batch():
            for provider, specs in batches:
                registry.replace_provider(provider, specs)
        opened = time.perf_counter() - t0
        assert len(registry) == servers * tools
        t0 = time.perf_counter()
        for provider in [f"builtin{i}" for i in range(11)] + [p for p, _ in batches]:
            registry.remove_provider(provider)
        closed = time.perf_counter() - t0
    finally:
        gc.enable()
    assert len(registry) == 0
    return opened, closed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", type=int, default=50)
    parser.add_argument("--reps", type=int, default=5)
    opts = parser.parse_args()
    ref = reference_class()
    counter = Counter([kairox._tools, ref])
    kinds = {"kairox": ToolRegistry, "reference": ref.ReferenceRegistry}
    print(f"# ToolRegistry: N servers x {opts.tools} tools, open (one batch) and close ({opts.reps} reps, medians)")
    print()
    print("| N | registry | open | close | sanitize_name (open + close) | open per server |")
    print("|---|---|---|---|---|---|")
    for n in (10, 50, 100):
        for name, make in kinds.items():
            if name == "reference" and n == 100 and opts.reps > 3:
                reps = 3  # the reference is quadratic: a few runs tell
            else:
                reps = opts.reps
            opens, closes = [], []
            counter.calls = 0
            for _ in range(reps):
                o, c = one_run(make, n, opts.tools)
                opens.append(o)
                closes.append(c)
            calls = counter.calls // reps
            o, c = statistics.median(opens), statistics.median(closes)
            print(f"| {n} | {name} | {o * 1000:.1f} ms | {c * 1000:.1f} ms | {calls:,} | {o / n * 1e6:.0f} µs |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
