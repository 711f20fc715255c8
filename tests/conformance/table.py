"""Run every scored scenario of the conformance suite (both revisions, both sides) against
kairox and the SDK, and write the conformance table into docs/mcp.md (client side) and
docs/serve.md (server side), between their ``conformance-table`` markers.

    uv run python tests/conformance/table.py [--json results.json] [--from results.json]

kairox's client is ``tests/conformance/client.py kairox``, the SDK's ``... sdk``; kairox's
server is ``kairox serve --http`` over the fixture backend, the SDK's the fixture served
directly. ``--from`` rewrites the tables from a saved run instead of running the suite.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import peers  # noqa: E402
import suite  # noqa: E402
from scenarios import KNOWN_FAILURES, SCORED  # noqa: E402

DOCS = peers.REPO / "docs"
START, END = "<!-- conformance-table:start -->", "<!-- conformance-table:end -->"


def run_all(tmp: Path) -> dict[str, dict[str, object]]:
    """``"side revision scenario" -> {"kairox": (passed, failures), "sdk": ...}``."""
    results: dict[str, dict[str, object]] = {}
    jobs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for revision in suite.REVISIONS:
            for scenario in SCORED[("client", revision)]:
                for who in ("kairox", "sdk"):
                    out = tmp / f"client-{who}-{revision}-{scenario.replace('/', '_')}"
                    jobs.append(
                        (
                            (f"client {revision} {scenario}", who),
                            pool.submit(suite.run_client, who, scenario, revision, out),
                        )
                    )
        for revision in suite.REVISIONS:
            with suite.gateway(tmp / f"gw-{revision}") as url:
                for name, v in suite.run_server(url, revision, tmp / f"server-kairox-{revision}").items():
                    results.setdefault(f"server {revision} {name}", {})["kairox"] = [v.passed, list(v.failures)]
            with suite.fixture_direct() as url:
                for name, v in suite.run_server(url, revision, tmp / f"server-sdk-{revision}").items():
                    results.setdefault(f"server {revision} {name}", {})["sdk"] = [v.passed, list(v.failures)]
        for (key, who), job in jobs:
            v, _ = job.result()
            results.setdefault(key, {})[who] = [v.passed, list(v.failures)]
    return results


def _cell(entry: object) -> str:
    if not isinstance(entry, list):
        return "not run"
    return "pass" if entry[0] else "**fail**"


def _why(entry: object) -> str:
    if not isinstance(entry, list) or entry[0]:
        return ""
    text = "; ".join(entry[1])[:300].replace("|", "\\|").replace("\n", " ")
    return text


def table(results: dict[str, dict[str, object]], side: str) -> str:
    lines = [
        f"| revision | scenario | kairox | SDK ({'client' if side == 'client' else 'server'}) | why kairox fails |",
        "|---|---|---|---|---|",
    ]
    for revision in suite.REVISIONS:
        for scenario in SCORED[(side, revision)]:
            entry = results.get(f"{side} {revision} {scenario}", {})
            reason = KNOWN_FAILURES.get((side, revision, scenario)) or _why(entry.get("kairox"))
            lines.append(
                f"| {revision} | `{scenario}` | {_cell(entry.get('kairox'))} | {_cell(entry.get('sdk'))} | {reason} |"
            )
    passed = sum(
        1
        for revision in suite.REVISIONS
        for s in SCORED[(side, revision)]
        if (e := results.get(f"{side} {revision} {s}", {}).get("kairox")) and isinstance(e, list) and e[0]
    )
    total = sum(len(SCORED[(side, r)]) for r in suite.REVISIONS)
    return (
        f"kairox passes {passed} of the {total} scored {side} scenarios "
        f"(`@modelcontextprotocol/conformance@{peers.CONFORMANCE_VERSION}`, `--requirements` per revision).\n\n"
        + "\n".join(lines)
    )


def write(doc: Path, body: str) -> None:
    text = doc.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(f"{head}{START}\n{body}\n{END}{tail}", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also save the results here")
    parser.add_argument("--from", dest="source", type=Path, help="write the tables from saved results")
    opts = parser.parse_args()
    if opts.source:
        results = json.loads(opts.source.read_text(encoding="utf-8"))
    else:
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            results = run_all(Path(tmp))
        print(f"suite run in {time.monotonic() - started:.0f} s", file=sys.stderr)
    if opts.json:
        opts.json.write_text(json.dumps(results, indent=1, sort_keys=True), encoding="utf-8")
    write(DOCS / "mcp.md", table(results, "client"))
    write(DOCS / "serve.md", table(results, "server"))


if __name__ == "__main__":
    main()
