"""What the benchmarks share.

``bench_outside_patterns.py`` and ``bench_redaction.py`` each time a pattern kairox applies now against
the one it replaced, on inputs of growing size; this prints their rows the same way. The benchmarks that
measure in a process of their own (``bench_mcp.py``, ``bench_open.py``, ``bench_peers.py``) run it with
:func:`run_child` and read its result with :func:`last_json`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

Fn = Callable[[str], object]

#: the plugins of ``contrib/`` installed in the dev workspace (what a third party publishes, there so
#: its entry point is exercised): the benchmarks measure kairox's own plugins and leave these out
#: (``KAIROX_DISABLE_PLUGINS``), since ``example`` adds a ``pre_tool_call`` guard that reads every
#: argument of every call and tools it registers in every workspace; where its cost is worth seeing,
#: a benchmark shows it in a row of its own
CONTRIB_PLUGINS = ("example",)


def without_contrib(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with :data:`CONTRIB_PLUGINS` added to ``KAIROX_DISABLE_PLUGINS``."""
    given = [p for p in env.get("KAIROX_DISABLE_PLUGINS", "").split(",") if p.strip()]
    return {**env, "KAIROX_DISABLE_PLUGINS": ",".join([*given, *CONTRIB_PLUGINS])}


@attrs.frozen
class Row:
    """One row: what it stresses, the input at a size (in bytes), and the code now and before."""

    stresses: str
    text: Callable[[int], str]
    now: Fn
    old: Fn


def run_child(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a measuring process, its output captured as text; its exit status is the caller's to read."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, env=env, cwd=cwd)


def last_json(proc: subprocess.CompletedProcess[str]) -> Any:
    """A measuring process's result: the last line it printed, as JSON."""
    return json.loads(proc.stdout.strip().splitlines()[-1])


def median_seconds(fn: Fn, text: str, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def parse_options(doc: str | None, *, input_name: str, reps: int) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,4,16,64", help=f"{input_name} sizes in KB (default: 1,4,16,64)")
    parser.add_argument("--reps", type=int, default=reps, help=f"runs per cell; the median is shown (default: {reps})")
    parser.add_argument(
        "--old-budget",
        type=float,
        default=2.0,
        help="seconds the old one may take at a size before larger sizes are skipped",
    )
    parser.add_argument("--only", help="run only this row (a name of the first column)")
    return parser.parse_args()


def print_table(
    title: str, rows: dict[str, Row], opts: argparse.Namespace, *, old_reps: Callable[[int], int] = lambda size: 1
) -> None:
    """Print the rows, each at every size; the old one only while its previous size took under the budget."""
    sizes = [int(s) * 1024 for s in opts.sizes.split(",")]
    names = [opts.only] if opts.only else list(rows)
    print(f"# {title} (median of {opts.reps} runs)")
    print()
    for name in names:
        print(f"- `{name}`: {rows[name].stresses}")
    print()
    print("| shape | size | now | old (baseline) | old / now |")
    print("|---|---|---|---|---|")
    for name in names:
        row = rows[name]
        old_allowed = True
        for size in sizes:
            text = row.text(size)
            now = median_seconds(row.now, text, opts.reps)
            old = None
            if old_allowed:
                old = median_seconds(row.old, text, old_reps(size))
                old_allowed = old < opts.old_budget
            old_cell = f"{old * 1000:,.1f} ms" if old is not None else "-"
            ratio = f"{old / now:,.0f}x" if old is not None else "-"
            print(f"| `{name}` | {size // 1024} KB | {now * 1000:.2f} ms | {old_cell} | {ratio} |")
            sys.stdout.flush()
