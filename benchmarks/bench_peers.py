"""Kairox against the MCP client libraries users pick today, side by side on this machine.

    uv run --group bench python benchmarks/bench_peers.py [--quick]

Scenarios (issue 9), each run interleaved across libraries and repeated; the
table shows medians and ratios (never pass/fail):

1. cold start: a process connects to 5 stdio servers, lists every tool and exits;
2. per-call latency (median, p99) on one server, with a raw JSON-lines pipe as the floor;
3. parallel start of 1, 10 and 20 servers that each take 0.5 s to start (low CPU);
4. failure isolation: 5 servers of which one crashes on start;
5. scale (kairox and the raw SDK only): 100 servers of 50 tools each, open (every
   server's tools listed) and close, and the client process's RSS growth per server
   (issue 17 targets: open <= 1.2x, close <= 1.5x, RSS per server <= 1.5x the raw SDK).

Servers are the raw JSON-lines fixtures in ``tests/fixtures/mcp_servers/``
(start in milliseconds, so the client's own cost shows). ``langchain-mcp-adapters``
requires ``mcp<2``: it runs from a venv of its own built under ``.cache/bench/``.

Every kairox run uses one ``KAIROX_HOME`` (``.cache/bench/home``), kept between runs
as a user's home is, so the index of installed entry points kairox keeps there is
read as on any run after a user's first; ``--fresh-home`` gives each run a new empty
home instead (a first run ever: the installed packages are scanned).
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
import time
from pathlib import Path
from typing import Any

from _common import last_json, run_child, without_contrib

REPO = Path(__file__).resolve().parent.parent
RUNNER = REPO / "benchmarks" / "_peer_runner.py"
SERVERS = REPO / "tests" / "fixtures" / "mcp_servers"
CACHE = Path(os.environ.get("KAIROX_TEST_CACHE") or REPO / ".cache") / "bench"


def server(name: str, script: str = "well_behaved.py", *extra: str) -> dict[str, Any]:
    return {"name": name, "command": sys.executable, "args": [str(SERVERS / script), "--name", name, *extra]}


def langchain_python() -> str | None:
    """A venv with langchain-mcp-adapters (and the mcp 1.x it requires), built once."""
    venv = CACHE / "langchain-venv"
    python = venv / "bin" / "python"
    if python.exists():
        return str(python)
    uv = shutil.which("uv")
    if uv is None:
        return None
    print("building the langchain-mcp-adapters venv (once) ...", file=sys.stderr)
    CACHE.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([uv, "venv", "-q", str(venv)], check=True)
        subprocess.run(
            [uv, "pip", "install", "-q", "--python", str(python), "langchain-mcp-adapters", "anyio"], check=True
        )
    except subprocess.CalledProcessError as exc:
        print(f"langchain venv failed: {exc}", file=sys.stderr)
        shutil.rmtree(venv, ignore_errors=True)
        return None
    return str(python)


def have_fastmcp() -> bool:
    try:
        import fastmcp  # noqa: F401
    except ImportError:
        return False
    return True


def run(library: str, scenario: str, args: dict[str, Any], python: str) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    # a PYTHONPATH given to the harness comes first (to measure a copy of the sources)
    paths = [p for p in (os.environ.get("PYTHONPATH", ""), str(REPO / "benchmarks")) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    proc = run_child([python, str(RUNNER), library, scenario, json.dumps(args)], timeout=300, env=env, cwd=REPO)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return wall, {
            "failed": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        }
    return wall, last_json(proc)


def run_cli(servers: list[dict[str, Any]]) -> float:
    """``kairox tools list`` over a workspace declaring the servers: wall seconds."""
    with tempfile.TemporaryDirectory() as ws, tempfile.TemporaryDirectory() as fresh:
        home = os.environ.get("KAIROX_BENCH_HOME") or fresh
        lines = []
        for s in servers:
            lines += [
                f"[mcp_servers.{s['name']}]",
                f"command = {json.dumps(s['command'])}",
                f"args = {json.dumps(s['args'])}",
                "",
            ]
        Path(ws, "kairox.toml").write_text("\n".join(lines))
        kairox = str(Path(sys.executable).parent / "kairox")
        env = without_contrib({**os.environ, "KAIROX_HOME": home})
        # a workspace's servers run once the user trusts it (untimed, as a user does it once)
        subprocess.run([kairox, "trust", ws], capture_output=True, check=True, timeout=60, env=env)
        t0 = time.perf_counter()
        proc = subprocess.run(
            [kairox, "-w", ws, "tools", "list", "--json"],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        wall = time.perf_counter() - t0
        # the home is kept between runs: no trust record of a scratch workspace left in it
        subprocess.run([kairox, "trust", "--revoke", ws], capture_output=True, timeout=60, env=env)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-500:])
        names = {s["name"] for s in servers}
        count = len([t for t in json.loads(proc.stdout)["tools"] if t["id"].split(".", 1)[0] in names])
        assert count == 6 * len(servers), count
        return wall


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:9.2f} ms"


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(f"\n## {title}\n")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument(
        "--only",
        choices=["coldstart", "latency", "parallel", "isolation", "scale"],
        action="append",
        help="run only these scenarios (repeatable)",
    )
    parser.add_argument(
        "--no-peers",
        action="store_true",
        help="no third-party client library (fastmcp, langchain): kairox, the raw SDK and, for latency, "
        "kairox with the example guard and a raw pipe",
    )
    parser.add_argument(
        "--fresh-home",
        action="store_true",
        help="a new empty KAIROX_HOME for every kairox run (its first run ever: no entry-point index yet)",
    )
    parser.add_argument("--servers", type=int, default=100, help="servers in the scale scenario")
    parser.add_argument("--tools", type=int, default=50, help="tools per server in the scale scenario")
    opts = parser.parse_args()
    only = set(opts.only or ["coldstart", "latency", "parallel", "isolation", "scale"])
    reps = opts.reps or (2 if opts.quick else 5)
    if not opts.fresh_home:
        # one KAIROX_HOME for every kairox run, kept as a user's is: what kairox caches there
        # (the index of installed entry points) is read as it would be on a user's second run
        home = CACHE / "home"
        home.mkdir(parents=True, exist_ok=True)
        os.environ["KAIROX_BENCH_HOME"] = str(home)
    py = sys.executable
    libs: dict[str, str] = {"kairox": py, "sdk": py}
    # per-call latency only: kairox with contrib/kairox-example's pre_tool_call guard installed
    guarded = ["kairox-guard"]
    if opts.no_peers:
        pass
    elif have_fastmcp():
        libs["fastmcp"] = py
    else:
        print("fastmcp not installed: run with `uv run --group bench`", file=sys.stderr)
    lc = None if opts.no_peers else langchain_python()
    if lc:
        libs["langchain"] = lc
        libs["langchain-session"] = lc
    rounds = max(1, reps // 2)
    print(
        f"# kairox vs MCP client libraries ({reps} repetitions, interleaved; latency and parallel: "
        f"{rounds} round{'s' if rounds != 1 else ''}; {os.cpu_count()} CPUs)"
    )

    if "coldstart" in only:
        cold_start(libs, reps)
    if "latency" in only:
        latency(libs, reps, opts.calls, guarded)
    if "parallel" in only:
        parallel(libs, reps)
    if "isolation" in only:
        isolation(libs)
    if "scale" in only:
        scale(reps, opts.servers, opts.tools)


def cold_start(libs: dict[str, str], reps: int) -> None:
    five = [server(f"s{i}") for i in range(5)]
    cold: dict[str, list[float]] = {name: [] for name in [*libs, "kairox-cli"] if name != "langchain-session"}
    for _ in range(reps):
        for lib, python in libs.items():
            if lib == "langchain-session":
                continue
            wall, out = run(lib, "coldstart", {"servers": five}, python)
            if "failed" in out or out.get("tools", 0) < 30:
                print(f"cold start {lib}: {out}", file=sys.stderr)
                continue
            cold[lib].append(wall)
        cold["kairox-cli"].append(run_cli(five))
    base = statistics.median(cold["sdk"])
    table(
        "1. cold start: connect to 5 stdio servers, list all tools, exit (process wall time)",
        ["library", "median", "vs raw SDK"],
        [[lib, fmt_ms(statistics.median(v)), f"{statistics.median(v) / base:.2f}x"] for lib, v in cold.items() if v],
    )


def latency(libs: dict[str, str], reps: int, n_calls: int, guarded: list[str]) -> None:
    py = sys.executable
    one = [server("s0")]
    lat: dict[str, list[float]] = {}
    #: per round, each library's median over the SDK's median of the same round: the machine's
    #: speed drifts between processes, a ratio within one round mostly cancels it
    paired: dict[str, list[float]] = {}
    paired_p99: dict[str, list[float]] = {}  # the same, of each round's p99
    order = ["pipe", "sdk", "kairox", *guarded, *(lib for lib in libs if lib not in ("sdk", "kairox"))]
    for round_no in range(max(1, reps // 2)):
        medians: dict[str, float] = {}
        p99s: dict[str, float] = {}
        # every other round in reverse: no library is always the one right after the SDK
        for lib in order if round_no % 2 == 0 else order[::-1]:
            python = libs.get(lib, py)
            calls = n_calls if lib != "langchain" else max(20, n_calls // 10)
            _, out = run(lib, "latency", {"servers": one, "calls": calls}, python)
            if "failed" in out:
                print(f"latency {lib}: {out}", file=sys.stderr)
                continue
            lat.setdefault(lib, []).extend(out["times"])
            medians[lib] = statistics.median(out["times"])
            p99s[lib] = pct(out["times"], 0.99)
        if "sdk" in medians:
            for lib, med in medians.items():
                paired.setdefault(lib, []).append(med / medians["sdk"])
                paired_p99.setdefault(lib, []).append(p99s[lib] / p99s["sdk"])
    sdk_med = statistics.median(lat["sdk"])
    sdk_p99 = pct(lat["sdk"], 0.99)
    pipe_med = statistics.median(lat["pipe"])
    rows = []
    for lib, times in lat.items():
        med, p99 = statistics.median(times), pct(times, 0.99)
        # of one round, a paired ratio is the pooled one again: shown only from two rounds (--reps 4)
        pair = f"{statistics.median(paired[lib]):.2f}x" if len(paired.get(lib, ())) > 1 else "-"
        pair_p99 = f"{statistics.median(paired_p99[lib]):.2f}x" if len(paired_p99.get(lib, ())) > 1 else "-"
        rows.append(
            [
                lib,
                fmt_ms(med),
                fmt_ms(p99),
                f"{med / sdk_med:.2f}x",
                pair,
                f"{p99 / sdk_p99:.2f}x",
                pair_p99,
                f"{med / pipe_med:.1f}x",
            ]
        )
    table(
        "2. per-call latency, one stdio server (echo)",
        ["library", "median", "p99", "median vs SDK", "paired vs SDK", "p99 vs SDK", "paired p99", "median vs pipe"],
        rows,
    )
    print(
        "\npaired vs SDK: the median over rounds of the library's median over the SDK's median in the"
        "\nsame round (each round runs every library once; the machine's speed drifts between rounds);"
        "\npaired p99 the same of each round's p99 (p99 vs SDK pools every round's calls, so one round"
        "\ndisturbed by something else on the machine decides it). Paired columns need two rounds or more."
    )


def parallel(libs: dict[str, str], reps: int) -> None:
    rows = []
    for n in (1, 10, 20):
        slow = [server(f"slow{i}", "slow_start.py", "--delay", "0.5") for i in range(n)]
        results: dict[str, list[float]] = {}
        for _ in range(max(1, reps // 2)):
            for lib, python in libs.items():
                if lib == "langchain-session":
                    continue
                _, out = run(lib, "parallel", {"servers": slow}, python)
                if "failed" in out or out.get("tools", 0) < 2 * n:
                    print(f"parallel {n} {lib}: {out}", file=sys.stderr)
                    continue
                results.setdefault(lib, []).append(out["seconds"])
        for lib, secs in results.items():
            med = statistics.median(secs)
            rows.append([str(n), lib, f"{med:.3f} s", f"{med / 0.5:.2f}x"])
    table(
        "3. parallel start: N servers that each take 0.5 s to start",
        ["N", "library", "all tools listed", "vs 0.5 s"],
        rows,
    )


def isolation(libs: dict[str, str]) -> None:
    mixed = [server(f"s{i}") for i in range(4)] + [
        {"name": "crasher", "command": sys.executable, "args": [str(SERVERS / "crash_on_start.py")]}
    ]
    rows = []
    for lib, python in libs.items():
        if lib == "langchain-session":
            continue
        _, out = run(lib, "isolation", {"servers": mixed}, python)
        if "failed" in out:
            rows.append([lib, "0 / 24", "-", out["failed"][:60]])
            continue
        note = "; ".join(out.get("errors", []))[:60]
        rows.append([lib, f"{out['tools']} / 24", f"{out['seconds']:.3f} s", note])
    table(
        "4. failure isolation: 5 servers, one crashes on start", ["library", "tools available", "time", "errors"], rows
    )


def scale(reps: int, n_servers: int, n_tools: int) -> None:
    """Scenario 5: ``n_servers`` raw servers of ``n_tools`` tools each; kairox against the raw SDK.

    Two runs of each library per repetition: a cold one (the open includes what the library
    imports on first use) and a warm one, after one server was opened and closed untimed
    (its RSS growth is the memory the servers themselves cost the client).
    """
    names = [f"tool_{i:02d}" for i in range(n_tools)]
    script = str(SERVERS / "named_tools.py")
    servers = [
        {"name": f"s{i:03d}", "command": sys.executable, "args": [script, f"s{i:03d}", *names]}
        for i in range(n_servers)
    ]
    warm = {"name": "warm", "command": sys.executable, "args": [script, "warm", "tool_00"]}
    keys = ("open", "close", "cpu", "warm open", "warm close", "rss")
    started_load = os.getloadavg()[0]
    results: dict[str, dict[str, list[float]]] = {lib: {k: [] for k in keys} for lib in ("sdk", "kairox")}
    for _ in range(reps):
        for mode in ("cold", "warm"):
            for lib, runs in results.items():
                args: dict[str, Any] = {"servers": servers, **({"warm": warm} if mode == "warm" else {})}
                _, out = run(lib, "scale", args, sys.executable)
                if "failed" in out or out.get("tools") != n_servers * n_tools or out.get("errors"):
                    print(f"scale {lib} ({mode}): {str(out)[:300]}", file=sys.stderr)
                    continue
                if mode == "cold":
                    runs["open"].append(out["open"])
                    runs["close"].append(out["close"])
                    runs["cpu"].append(out["cpu"])
                else:
                    runs["warm open"].append(out["open"])
                    runs["warm close"].append(out["close"])
                    runs["rss"].append(out["rss_kib"] / n_servers)
    if not all(v for lib in results for v in results[lib].values()):
        print("scale: no complete run of both libraries", file=sys.stderr)
        return
    base = {key: statistics.median(v) for key, v in results["sdk"].items()}
    load = f"{started_load:.1f} -> {os.getloadavg()[0]:.1f}"
    units = {"rss": ("KiB", "{:.0f}"), "cpu": ("s", "{:.2f}")}
    rows = []
    for lib, runs in results.items():
        row = [lib]
        for key in keys:
            med = statistics.median(runs[key])
            unit, form = units.get(key, ("s", "{:.3f}"))
            row += [f"{form.format(med)} {unit}", f"{med / base[key]:.2f}x"]
        rows.append(row)
    header = ["library"]
    labels = {"open": "cold open", "close": "cold close", "cpu": "client CPU (cold run)", "rss": "RSS / server (warm)"}
    for key in keys:
        header += [labels.get(key, key), "vs SDK"]
    table(
        f"5. scale: {n_servers} servers x {n_tools} tools, open (all tools listed) and close, "
        f"median of {len(results['sdk']['open'])} (load average {load})",
        header,
        rows,
    )
    print(
        "\ncold: the open includes what the library imports on first use; warm: after one server was"
        "\nopened and closed. client CPU: the cold run's process from before the open to after the close."
    )


if __name__ == "__main__":
    main()
