"""Running the MCP conformance suite (``peers.conformance_cli()``) against kairox and the SDK.

- client side: ``conformance client --command "python client.py WHO" --scenario S
  --spec-version REV`` per scenario (``client.py``: WHO is ``kairox`` or ``sdk``);
- server side: ``conformance server --url URL --requirements REV`` once per revision, against
  ``kairox serve --http`` over a workspace whose backend is ``tests/fixtures/mcp_servers/
  conformance.py`` (:func:`gateway`), or against that backend served by the SDK directly
  (:func:`fixture_direct`, the reference).

A scenario passes as the suite's own summary says: no check ``FAILURE`` and none ``WARNING``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import attrs
import peers

HERE = Path(__file__).resolve().parent
CLIENT = HERE / "client.py"
REVISIONS = ("2025-11-25", "2026-07-28")
KAIROX = Path(sys.executable).parent / "kairox"
#: how long the suite gives one client run (its default 30 s is tight for a fresh interpreter
#: importing kairox while other test workers share the cores)
CLIENT_TIMEOUT_MS = 60_000


@attrs.frozen
class Verdict:
    passed: bool
    failures: tuple[str, ...]  # "check-id: message" of each FAILURE / WARNING


def verdict(checks_json: Path) -> Verdict:
    checks = json.loads(checks_json.read_text(encoding="utf-8"))
    bad = []
    for check in checks:
        if check.get("status") in ("FAILURE", "WARNING"):
            details = check.get("details") or {}
            message = check.get("errorMessage") or (details.get("message") if isinstance(details, dict) else "") or ""
            bad.append(f"{check['id']} ({check['status'].lower()}): {message}".rstrip(": "))
    return Verdict(not bad, tuple(bad))


def _results(out: Path, prefix: str = "") -> dict[str, Path]:
    """``scenario -> checks.json`` of a results folder (``<scenario>-<timestamp>/checks.json``;
    ``auth/x`` scenarios one folder deeper)."""
    found = {}
    for checks in out.rglob("checks.json"):
        name = checks.parent.relative_to(out).as_posix()
        name = name.rsplit("-", 6)[0]  # drop -YYYY-MM-DDTHH-MM-SS-mmmZ
        found[name.removeprefix(prefix)] = checks
    return found


def scored(side: str, revision: str) -> list[str]:
    """What ``conformance list --requirements REV`` names as required of ``side``."""
    out = subprocess.run(
        [*peers.conformance_cli(), "list", "--requirements", revision],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    names: list[str] = []
    section = ""
    for line in out.splitlines():
        if line.startswith("Run and reported"):
            break
        if line.endswith("scenarios (test against a server):"):
            section = "server"
        elif line.endswith("scenarios (test against a client):"):
            section = "client"
        elif line.startswith("  - ") and section == side:
            names.append(line[4:].split(" ")[0])
    return names


def extensions(side: str) -> list[str]:
    """The scenarios ``conformance list`` marks ``[extension]`` (on no revision's timeline,
    scored by none) for ``side``."""
    out = subprocess.run(
        [*peers.conformance_cli(), "list"], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    names: list[str] = []
    section = ""
    for line in out.splitlines():
        if line.endswith("scenarios (test against a server):"):
            section = "server"
        elif line.endswith("scenarios (test against a client):"):
            section = "client"
        elif line.startswith("  - ") and line.endswith(" [extension]") and section == side:
            names.append(line[4:].split(" ")[0])
    return names


def run_client(who: str, scenario: str, revision: str | None, out: Path) -> tuple[Verdict, str]:
    """One client scenario at ``revision``'s wire (``None``: an extension scenario, which is on
    no revision's timeline: the suite's default); the verdict and the suite's output."""
    proc = peers.run_to_end(
        [
            *peers.conformance_cli(),
            "client",
            "--command",
            f"{sys.executable} {CLIENT} {who}",
            "--scenario",
            scenario,
            *(["--spec-version", revision] if revision else []),
            "--timeout",
            str(CLIENT_TIMEOUT_MS),
            "-o",
            str(out),
        ],
        timeout=CLIENT_TIMEOUT_MS / 1000 + 120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    results = _results(out)
    if scenario not in results:
        raise RuntimeError(
            f"no results for {scenario} ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
        )
    return verdict(results[scenario]), proc.stdout


def run_server_scenario(url: str, scenario: str, out: Path) -> tuple[Verdict, dict[str, str]]:
    """One server scenario (an extension's, on no revision's timeline) against ``url``: the
    verdict, and each check's status by id (an extension the server does not declare is all
    SKIPPED, which the verdict alone would pass)."""
    proc = peers.run_to_end(
        [*peers.conformance_cli(), "server", "--url", url, "--scenario", scenario, "-o", str(out)], timeout=600
    )
    results = _results(out, prefix="server-")
    if scenario not in results:
        raise RuntimeError(
            f"no results for {scenario} ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
        )
    checks = json.loads(results[scenario].read_text(encoding="utf-8"))
    return verdict(results[scenario]), {str(c.get("id")): str(c.get("status")) for c in checks}


def run_server(url: str, revision: str, out: Path) -> dict[str, Verdict]:
    """Every server scenario of ``revision``'s requirement set (scored or not) against ``url``."""
    proc = peers.run_to_end(
        [*peers.conformance_cli(), "server", "--url", url, "--requirements", revision, "-o", str(out)], timeout=1800
    )
    results = {name: verdict(path) for name, path in _results(out, prefix="server-").items()}
    if not results:
        raise RuntimeError(f"no server results ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
    return results


# -- the servers under test --------------------------------------------------------------------

FIXTURE = peers.FIXTURE_SERVERS / "conformance.py"

#: the user's policy: the fixture's tools run, and its sampling and elicitation requests go to
#: the gateway's client without kairox's approval question first (the suite answers the
#: backend's request, not kairox's form)
USER_CONFIG = textwrap.dedent(
    """\
    [policy.rules]
    "test.*" = "allow"
    "mcp.test.sampling" = "allow"
    "mcp.test.elicitation" = "allow"
    """
)


#: the workspace skill the skills extension's scenarios find (sep-2640-*): a folder with a file beside
SKILL_FILES = {
    "SKILL.md": "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n"
    "Fill the form in references/FORMS.md.\n",
    "references/FORMS.md": "Fields: name, date.\n",
}


@contextlib.contextmanager
def gateway(tmp: Path) -> Iterator[str]:
    """``kairox serve --http`` over a trusted workspace whose one backend (``test``) is the
    fixture, its tools named so that the gateway exports the suite's names
    (``test.simple_text`` -> ``test_simple_text``), and whose one skill is ``pdf-processing``;
    yields the endpoint URL."""
    ws, home = tmp / "ws", tmp / "home"
    ws.mkdir(parents=True)
    home.mkdir()
    for rel, text in SKILL_FILES.items():
        path = ws / ".kairox" / "skills" / "pdf-processing" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (ws / "kairox.toml").write_text(
        f"[mcp_servers.test]\ncommand = {sys.executable!r}\nargs = [{str(FIXTURE)!r}, '--prefix', 'test']\n\n"
        '[serve]\ntools = ["test.*"]\n',
        encoding="utf-8",
    )
    (home / "kairox.toml").write_text(USER_CONFIG, encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "KAIROX_HOME": str(home)}
    subprocess.run([str(KAIROX), "-w", str(ws), "trust"], env=env, check=True, capture_output=True, timeout=120)
    port = peers.free_port()
    argv = [str(KAIROX), "-w", str(ws), "serve", "--http", "--port", str(port)]
    with peers.http_peer(argv, port, env=env) as url:
        yield url


@contextlib.contextmanager
def fixture_direct() -> Iterator[str]:
    """The fixture served by the SDK itself (the reference), tools under their own names."""
    port = peers.free_port()
    with peers.http_peer([sys.executable, str(FIXTURE), "--http", str(port)], port) as url:
        yield url
