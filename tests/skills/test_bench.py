"""benchmarks/bench_skills.py runs (a smoke test: no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_skills.py"


def test_the_benchmark_runs_and_prints_its_table() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--count", "120", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
    )
    assert proc.returncode in (0, 1), proc.stderr  # 1: a target missed at this tiny size
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("120 skills (")
    rows = [line.split("  ")[0].strip() for line in lines[5:]]
    assert rows == [
        "floor: walk + read every skill file",
        "cold: empty cache",
        "cold + write the cache file",
        "warm: memory cache",
        "warm: disk cache, empty memory",
        "warm: SkillRegistry.scan (memory)",
        "new process, no cache file",
        "new process, cache file (next CLI run)",
    ]
