"""Benchmark: scanning 10,000 skills, cold and warm, against merely reading every file.

    uv run python benchmarks/bench_skills.py [--count 10000] [--repeat 5]

Generates a realistic mix of skills in a temporary directory (kairox skill
files, files with declared arguments, Agent Skills folders with block-scalar
descriptions and a scripts/ folder, and some that need the PyYAML fallback:
folded descriptions, unquoted colons), dates them an hour back (files changed
in the last two seconds are deliberately not cached), and times:

- floor: walk the tree and read every skill file whole (open, read, close);
- cold: list every skill with an empty cache (read frontmatter only, parse);
- cold + write cache: the same, then write the on-disk cache;
- warm (memory): the same source again in this process;
- warm (disk, new cache): an empty in-memory cache backed by the cache file,
  as in the next CLI run;
- warm (registry): ``SkillRegistry.scan`` over the warm source (thread hop, dedupe);
- new process cold / warm: a child interpreter times one scan with no cache
  file / with the cache file (the interpreter start is not counted).

Targets: cold within 3x the floor, warm faster than the floor. Each time is the
median of ``--repeat`` runs; the OS page cache is warm for every case (the
floor included), so the ratios compare CPU work, not disk latency.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from kairox._skills import SkillDef, SkillRegistry
from kairox_skills import DirectorySkillSource
from kairox_skills._cache import ScanCache

STEP = "{n}. Step {n}: read the relevant files, run the checks, and report what changed and why.\n"


def body(i: int, size: int) -> str:
    """About ``size`` bytes of markdown (skill bodies are prompts: a few KB)."""
    lines = []
    total = 0
    n = 1
    while total < size:
        line = STEP.format(n=n) if n % 12 else f"\n## Part {n // 12} of skill {i}\n\n"
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines)


def kairox_file(i: int) -> str:
    return (
        f"---\nname: skill-{i:05d}\n"
        f"description: Use when the task involves area {i % 97} of the project; checks, fixes and reports it\n"
        f"keywords: [area{i % 97}, check, report]\n"
        f"tools:\n  - fs.read\n  - search.grep\n---\n# Skill {i}\n\n{body(i, 1000 + (i * 37) % 4000)}"
    )


def with_arguments(i: int) -> str:
    return (
        f"---\nname: skill-{i:05d}\ndescription: Render a report for component {i % 13}\n"
        f"scope: workspace\nmodel: careful\n"
        f"arguments:\n  target:\n    type: string\n    required: true\n    description: What to report on\n"
        f"  depth:\n    type: integer\n    default: 2\n---\nReport on {{{{ target }}}} to depth {{{{ depth }}}}.\n"
        f"{body(i, 1000 + (i * 53) % 3000)}"
    )


def agent_skill(i: int) -> str:
    return (
        f"---\nname: skill-{i:05d}\ndescription: |\n  Guide for working with format {i % 31}. Use this skill when users\n"
        f"  ask to create, edit or inspect such files, or to convert them.\nlicense: Complete terms in LICENSE.txt\n"
        f"metadata:\n  short-description: Format {i % 31} files\n  owner: docs-team\n---\n# Format {i % 31}\n\n"
        f"{body(i, 3000 + (i * 71) % 6000)}"
    )


def needs_pyyaml(i: int) -> str:
    if i % 2:
        head = f"description: >-\n  Folded description for skill {i}\n  that spans two lines.\n"
    else:
        head = f"description: Toolkit for skill {i}: unquoted colon in the value\n"
    return f"---\nname: skill-{i:05d}\n{head}---\n{body(i, 1000 + (i * 37) % 4000)}"


def generate(root: Path, count: int) -> list[Path]:
    """Write ``count`` skills; return the skill files (what a scan must read)."""
    files: list[Path] = []
    past = time.time() - 3600
    for i in range(count):
        group = root / f"group-{i // 100:03d}"
        kind = i % 20
        if kind < 14:
            path, text = group / f"skill-{i:05d}.md", kairox_file(i)
        elif kind < 16:
            path, text = group / f"skill-{i:05d}.md", with_arguments(i)
        elif kind < 19:
            path, text = group / f"skill-{i:05d}" / "SKILL.md", agent_skill(i)
            (group / f"skill-{i:05d}" / "scripts").mkdir(parents=True, exist_ok=True)
            (group / f"skill-{i:05d}" / "scripts" / "run.py").write_text("print('run')\n")
        else:
            path, text = group / f"skill-{i:05d}.md", needs_pyyaml(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        files.append(path)
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(dirpath, name), (past, past))
    return files


def read_every_file(root: Path) -> int:
    total = 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            if name.endswith(".md"):
                with open(os.path.join(dirpath, name), "rb") as fh:
                    total += len(fh.read())
    return total


def listing(source: DirectorySkillSource) -> int:
    return sum(1 for item in source.scan() if isinstance(item, SkillDef))


@dataclass
class Timing:
    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    cpu_ratio: list[float] = field(default_factory=list)
    wall_ratio: list[float] = field(default_factory=list)


def measure(
    root: Path,
    case: Callable[[], object] | Callable[[], tuple[float, float]],
    repeat: int,
    setup: Callable[[], object] | None = None,
    *,
    reports_own_time: bool = False,
) -> Timing:
    """Each round times the floor, then the case: ratios compare neighbours, so a
    busy machine (other processes) shifts both alike. CPU time is this process's
    user+system time; the child cases report their own."""
    timing = Timing()
    for _ in range(repeat):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        read_every_file(root)
        floor_cpu, floor_wall = time.process_time() - cpu0, time.perf_counter() - wall0
        if setup is not None:
            setup()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        result = case()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        if reports_own_time:
            cpu, wall = result  # type: ignore[misc]
        timing.cpu.append(cpu)
        timing.wall.append(wall)
        timing.cpu_ratio.append(cpu / floor_cpu)
        timing.wall_ratio.append(wall / floor_wall)
    return timing


CHILD = textwrap.dedent(
    """
    import json, sys, time
    from kairox._skills import SkillDef
    from kairox_skills import DirectorySkillSource
    from kairox_skills._cache import ScanCache
    root, cache_file = sys.argv[1], sys.argv[2]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    source = DirectorySkillSource("user", "user", [root], cache=ScanCache(None if cache_file == "-" else __import__("pathlib").Path(cache_file)))
    n = sum(1 for item in source.scan() if isinstance(item, SkillDef))
    print(json.dumps({"cpu": time.process_time() - cpu0, "wall": time.perf_counter() - wall0, "skills": n}))
    """
)


def child_scan(root: Path, cache_file: Path | None) -> tuple[float, float]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(cache_file) if cache_file else "-"],
        capture_output=True,
        text=True,
        check=True,
        start_new_session=True,
    )
    data = json.loads(proc.stdout)
    return data["cpu"], data["wall"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="Keep the generated directory.")
    args = parser.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="kairox-bench-skills-"))
    root = tmp / "skills"
    cache_file = tmp / "cache" / "skills.json"
    try:
        files = generate(root, args.count)
        expected = len(files)
        read_every_file(root)  # warm the page cache for everyone
        rows: list[tuple[str, Timing, str]] = []
        rows.append(
            ("floor: walk + read every skill file", measure(root, lambda: read_every_file(root), args.repeat), "")
        )

        def cold() -> None:
            assert listing(DirectorySkillSource("user", "user", [root], cache=ScanCache())) == expected

        rows.append(("cold: empty cache", measure(root, cold, args.repeat), "<= 3.0"))

        def cold_write() -> None:
            listing(DirectorySkillSource("user", "user", [root], cache=ScanCache(cache_file)))

        rows.append(
            ("cold + write the cache file", measure(root, cold_write, args.repeat, lambda: cache_file.unlink(True)), "")
        )

        warm_source = DirectorySkillSource("user", "user", [root], cache=ScanCache())
        listing(warm_source)
        rows.append(("warm: memory cache", measure(root, lambda: listing(warm_source), args.repeat), "< 1.0"))

        cold_write()

        def warm_disk() -> None:
            listing(DirectorySkillSource("user", "user", [root], cache=ScanCache(cache_file)))

        rows.append(("warm: disk cache, empty memory", measure(root, warm_disk, args.repeat), "< 1.0"))

        async def registry_scan() -> None:
            reg = SkillRegistry()
            await reg.scan([warm_source], None)
            assert len(reg) == expected

        rows.append(
            ("warm: SkillRegistry.scan (memory)", measure(root, lambda: anyio.run(registry_scan), args.repeat), "< 1.0")
        )
        rows.append(
            (
                "new process, no cache file",
                measure(root, lambda: child_scan(root, None), args.repeat, reports_own_time=True),
                "<= 3.0",
            )
        )
        rows.append(
            (
                "new process, cache file (next CLI run)",
                measure(root, lambda: child_scan(root, cache_file), args.repeat, reports_own_time=True),
                "< 1.0",
            )
        )

        sizes = [f.stat().st_size for f in files]
        print(
            f"{expected} skills ({sum(sizes) / 1e6:.1f} MB, mean {statistics.mean(sizes) / 1e3:.1f} KB per file); "
            f"cache file {cache_file.stat().st_size / 1e6:.1f} MB; {args.repeat} rounds; "
            f"Python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )
        print("ratios: median over rounds of (case / floor measured just before it)")
        print()
        print(f"{'case':<40} {'cpu s':>7} {'wall s':>7} {'x floor cpu':>12} {'x floor wall':>13}  {'target':>7}  ok")
        print("-" * 100)
        failed = False
        for name, t, target in rows:
            cpu_ratio = statistics.median(t.cpu_ratio)
            wall_ratio = statistics.median(t.wall_ratio)
            ok = ""
            if target:
                limit = float(target.split()[-1])
                good = cpu_ratio <= limit if target.startswith("<=") else cpu_ratio < limit
                ok = "yes" if good else "NO"
                failed |= not good
            print(
                f"{name:<40} {statistics.median(t.cpu):>7.3f} {statistics.median(t.wall):>7.3f} "
                f"{cpu_ratio:>12.2f} {wall_ratio:>13.2f}  {target:>7}  {ok}"
            )
        return 1 if failed else 0
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
