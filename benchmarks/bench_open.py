"""``Runtime.open`` of an empty workspace: every built-in plugin against ``tools`` alone.

    uv run python benchmarks/bench_open.py [--runs 15] [--warmup 2]

A plugin with nothing to do in a workspace (no servers, bundles, skill folders
or imports declared) should cost next to nothing when the runtime opens: its
hooks import only cheap modules, and the heavy ones (PyYAML, the manifest
model, the server lifecycles and their event classes) load on the path that has
something to do. Each run is a fresh interpreter (after ``--warmup`` runs that
also write the bytecode and entry-point caches) that opens an empty workspace
with a ``KAIROX_HOME`` holding only that entry-point cache (as a user's does after a
first run), timing ``Runtime.open`` alone (the interpreter
start and ``import kairox`` are not in the figure). The two configurations run
interleaved, so a change in the machine's load touches both alike:

- ``all plugins``: every installed plugin package of kairox's own (``philont`` too); the
  dev environment's contrib plugins (``_common.CONTRIB_PLUGINS``: ``example`` registers tools
  in every workspace, so it has something to do) only with ``--with-contrib``;
- ``tools only``: ``KAIROX_DISABLE_PLUGINS`` lists every package but ``tools``.

Prints the median, min and max of each with the ratio to ``tools only`` (the
target: at most 1.10; on a busy machine also read the median of the paired ratios,
each run against its neighbour in the other configuration, and the fastest against
the fastest). Then how the difference splits: what any installed plugin pays however
little it does (importing its package and hooks module, the entry point, and pluggy's
registration of it) and the rest, what the plugins' hooks and providers do; and the
time spent in each plugin's registration hooks with every plugin loaded (medians over
the runs), slowest first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _common import CONTRIB_PLUGINS, last_json, run_child

TARGET = 1.10


def child(workspace: str) -> None:
    """One measurement in this interpreter: print ``{"open": s, "hooks": {"plugin hook": s}}``."""
    import anyio

    import kairox
    from kairox import _dispatch, _entrypoints, _host

    hooks: dict[str, float] = defaultdict(float)
    call = _dispatch.Dispatcher._call
    # what every installed plugin pays however little it does: importing its package and
    # hooks module (the entry point), and pluggy's registration of that module
    floor = [0.0]
    load, register = _entrypoints.EntryPointInfo.load, _host.PluginHost.register

    def timed_load(self: _entrypoints.EntryPointInfo) -> object:
        start = time.perf_counter()
        try:
            return load(self)
        finally:
            floor[0] += time.perf_counter() - start

    def timed_register(self: _host.PluginHost, *args: object, **kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return register(self, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            floor[0] += time.perf_counter() - start

    _entrypoints.EntryPointInfo.load = timed_load  # type: ignore[method-assign]
    _host.PluginHost.register = timed_register  # type: ignore[method-assign,assignment]

    def timed(self: _dispatch.Dispatcher, hook: str, target: _dispatch._Target, kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return call(self, hook, target, kwargs)  # type: ignore[arg-type]
        finally:
            hooks[f"{target.source} {hook.removeprefix('kairox_')}"] += time.perf_counter() - start

    _dispatch.Dispatcher._call = timed  # type: ignore[assignment,method-assign]

    async def main() -> float:
        start = time.perf_counter()
        async with kairox.Runtime.open(workspace=workspace):
            return time.perf_counter() - start

    opened = anyio.run(main)
    print(json.dumps({"open": opened, "hooks": hooks, "modules": len(sys.modules), "floor": floor[0]}))


def plugin_names(env: dict[str, str]) -> list[str]:
    code = "from importlib.metadata import entry_points; print(*sorted({e.name for e in entry_points(group='kairox')}))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    return out.split()


def run_once(workspace: str, env: dict[str, str]) -> dict[str, object]:
    proc = run_child([sys.executable, __file__, "--child", workspace], env=env)
    if proc.returncode != 0:
        raise SystemExit(f"the measuring process failed:\n{proc.stderr}")
    result: dict[str, object] = last_json(proc)
    return result


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f}ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--top", type=int, default=20, help="hook rows to print")
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="PLUGIN",
        help="leave this plugin out of 'all plugins' too (repeatable)",
    )
    parser.add_argument(
        "--with-contrib",
        action="store_true",
        help=f"keep the contrib plugins ({', '.join(CONTRIB_PLUGINS)}) in 'all plugins'",
    )
    parser.add_argument("--child", metavar="WORKSPACE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    if not args.with_contrib:
        args.exclude += [p for p in CONTRIB_PLUGINS if p not in args.exclude]

    # the warm-up runs write the bytecode caches (a PYTHONDONTWRITEBYTECODE=1 shell would
    # leave every edited module compiled from source in each run, and in one configuration only)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_") and k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        workspace, home = Path(tmp, "workspace"), Path(tmp, "home")
        workspace.mkdir()
        home.mkdir()
        base_env["KAIROX_HOME"] = str(home)
        installed = plugin_names(base_env)
        others = [name for name in installed if name != "tools"]
        unknown = [name for name in args.exclude if name not in installed]
        if unknown:
            print(f"not installed, so not left out: {', '.join(unknown)}", file=sys.stderr)
        args.exclude = [name for name in args.exclude if name in installed]
        everything = dict(base_env)
        if args.exclude:
            everything["KAIROX_DISABLE_PLUGINS"] = ",".join(args.exclude)
        configs = {
            "all plugins": everything,
            "tools only": {**base_env, "KAIROX_DISABLE_PLUGINS": ",".join(others)},
        }
        for env in configs.values():
            for _ in range(args.warmup):
                run_once(str(workspace), env)
        opens: dict[str, list[float]] = {name: [] for name in configs}
        floors: dict[str, list[float]] = {name: [] for name in configs}
        modules: dict[str, int] = {}
        hooks: dict[str, list[float]] = defaultdict(list)
        for _ in range(args.runs):
            for name, env in configs.items():  # interleaved
                result = run_once(str(workspace), env)
                opens[name].append(float(result["open"]))  # type: ignore[arg-type]
                floors[name].append(float(result["floor"]))  # type: ignore[arg-type]
                modules[name] = int(result["modules"])  # type: ignore[call-overload]
                if name == "all plugins":
                    for key, seconds in result["hooks"].items():  # type: ignore[attr-defined]
                        hooks[key].append(seconds)

    baseline = statistics.median(opens["tools only"])
    print(f"Runtime.open of an empty workspace, {args.runs} interleaved runs each (fresh interpreters)")
    if args.exclude:
        print(f"'all plugins' leaves out: {', '.join(args.exclude)}")
    print()
    print(f"{'configuration':<13}  {'median':>9}  {'min':>9}  {'max':>9}  {'x tools':>7}  {'modules':>7}")
    for name, times in opens.items():
        median = statistics.median(times)
        print(
            f"{name:<13}  {ms(median)}  {ms(min(times))}  {ms(max(times))}  {median / baseline:7.2f}  {modules[name]:7d}"
        )
    ratio = statistics.median(opens["all plugins"]) / baseline
    verdict = "within" if ratio <= TARGET else "over"
    print(f"\nall plugins / tools only: {ratio:.2f} ({verdict} the target of {TARGET:.2f})")
    # each run of one configuration is next to one of the other: their ratio drifts less with the load
    paired = statistics.median(a / t for a, t in zip(opens["all plugins"], opens["tools only"], strict=True))
    fastest = min(opens["all plugins"]) / min(opens["tools only"])
    print(f"(median of the {args.runs} paired ratios {paired:.2f}; fastest against fastest {fastest:.2f})")
    extra = statistics.median(opens["all plugins"]) - baseline
    floor = statistics.median(floors["all plugins"]) - statistics.median(floors["tools only"])
    plugins = len(others) + 1 - len(args.exclude)
    print(
        f"\nthe {plugins - 1} other plugins add {extra * 1000:.1f} ms, of which {floor * 1000:.1f} ms is what any "
        f"installed plugin pays (importing its package and hooks module, pluggy registering it: "
        f"{floor * 1000 / max(plugins - 1, 1):.2f} ms each) and {(extra - floor) * 1000:.1f} ms what their hooks "
        "and providers do"
    )

    rows = sorted(((statistics.median(v), k) for k, v in hooks.items() if len(v) == args.runs), reverse=True)
    print(f"\nregistration hooks with every plugin loaded (median of {args.runs})\n")
    width = max((len(k) for _, k in rows[: args.top]), default=10)
    print(f"{'plugin hook':<{width}}  {'median':>9}")
    for median, key in rows[: args.top]:
        print(f"{key:<{width}}  {ms(median)}")
    per_plugin: dict[str, float] = defaultdict(float)
    for median, key in rows:
        per_plugin[key.split(" ")[0]] += median
    print(
        "\nper plugin (sum of its hook medians): "
        + ", ".join(
            f"{name} {seconds * 1000:.1f}" for name, seconds in sorted(per_plugin.items(), key=lambda kv: -kv[1])
        )
        + " ms"
    )


if __name__ == "__main__":
    main()
