"""CLI start-up time: ``kairox plugins`` with every installed plugin, against baselines.

    uv run python benchmarks/bench_cli_startup.py [--runs 30] [--keep-env]

Each command runs ``--runs`` times in a fresh process (after warm-up runs that
also write the bytecode caches; ``--keep-env`` keeps PYTHONDONTWRITEBYTECODE
and friends as they are, to measure a cold, no-cache start). Prints the median,
min and max wall time of each and its ratio to a bare ``python -c pass``, and
last the figure that matters: the median of ``kairox plugins``.
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

BIN = Path(sys.executable).parent


def commands(workspace: str) -> dict[str, list[str]]:
    kairox = str(BIN / "kairox")
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import kairox": [sys.executable, "-c", "import kairox"],
        "build_plugin_host()": [sys.executable, "-c", "import kairox.ext; kairox.ext.build_plugin_host()"],
        "kairox plugins (kernel only)": [kairox, "-w", workspace, "plugins"],
        "kairox plugins": [kairox, "-w", workspace, "plugins"],
        "kairox --help": [kairox, "-w", workspace, "--help"],
    }


def time_once(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--keep-env", action="store_true", help="keep PYTHONDONTWRITEBYTECODE etc. as they are")
    args = parser.parse_args()

    base_env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    if not args.keep_env:
        base_env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as tmp:
        base_env["KAIROX_HOME"] = tmp
        rows = []
        for name, cmd in commands(tmp).items():
            env = dict(base_env)
            if name.endswith("(kernel only)"):
                env["KAIROX_LOAD_PLUGINS"] = ""
            for _ in range(args.warmup):
                time_once(cmd, env)
            times = [time_once(cmd, env) for _ in range(args.runs)]
            rows.append((name, statistics.median(times), min(times), max(times)))

    baseline = rows[0][1]
    width = max(len(r[0]) for r in rows)
    print(f"{'command':<{width}}  {'median':>9}  {'min':>9}  {'max':>9}  {'x python':>8}")
    for name, median, low, high in rows:
        print(
            f"{name:<{width}}  {median * 1000:7.1f}ms  {low * 1000:7.1f}ms  {high * 1000:7.1f}ms  {median / baseline:8.2f}"
        )
    plugins = dict((r[0], r[1]) for r in rows)["kairox plugins"]
    print(f"\nkairox plugins, median of {args.runs} runs: {plugins * 1000:.0f} ms")


if __name__ == "__main__":
    main()
