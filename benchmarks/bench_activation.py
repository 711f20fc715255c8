"""Lazy activation: ``kairox tools call fs.read`` in this repository against an empty workspace.

    uv run python benchmarks/bench_activation.py [--runs 15]

This repository's ``kairox.toml`` declares two MCP servers (mcp-server-git,
mcp-server-time), a language server (basedpyright) and a debug adapter. A
``tools call`` starts only what owns the tool, so calling ``fs.read`` here
should cost about what it costs in an empty workspace. The repository is
trusted for the run in a temporary ``KAIROX_HOME`` (``kairox trust``), so its
servers *could* start; ``status`` (which starts everything) is measured too,
to show what lazy activation saves. Prints the median, min and max of each and
its ratio to the empty workspace (target for the call: at most 1.3).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KAIROX = str(Path(sys.executable).parent / "kairox")


def time_once(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def measure(cmd: list[str], env: dict[str, str], runs: int, warmup: int) -> tuple[float, float, float]:
    for _ in range(warmup):
        time_once(cmd, env)
    times = [time_once(cmd, env) for _ in range(runs)]
    return statistics.median(times), min(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as empty:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
        env["KAIROX_HOME"] = home
        (Path(empty) / "README.md").write_text("empty workspace\n", encoding="utf-8")
        subprocess.run([KAIROX, "-w", str(REPO), "trust"], env=env, stdout=subprocess.DEVNULL, check=True)
        call = ["tools", "call", "fs.read", "--args", '{"path": "README.md"}']
        rows = [
            ("tools call fs.read, empty workspace", measure([KAIROX, "-w", empty, *call], env, args.runs, args.warmup)),
            (
                "tools call fs.read, this repository",
                measure([KAIROX, "-w", str(REPO), *call], env, args.runs, args.warmup),
            ),
            ("status, this repository (starts all)", measure([KAIROX, "-w", str(REPO), "status"], env, 3, 1)),
        ]

    baseline = rows[0][1][0]
    width = max(len(name) for name, _ in rows)
    print(f"{'command':<{width}}  {'median':>9}  {'min':>9}  {'max':>9}  {'x empty':>8}")
    for name, (median, low, high) in rows:
        print(
            f"{name:<{width}}  {median * 1000:7.0f}ms  {low * 1000:7.0f}ms  {high * 1000:7.0f}ms  {median / baseline:8.2f}"
        )
    ratio = rows[1][1][0] / baseline
    print(f"\ntools call fs.read here / in an empty workspace: {ratio:.2f} (target <= 1.3)")


if __name__ == "__main__":
    main()
