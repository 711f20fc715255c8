"""Is each runtime an entry needs present here (binary on PATH, version), and what to do if not."""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import attrs

from .model import CatalogEntry, Requirement

__all__ = [
    "RUNTIMES",
    "RequirementCheck",
    "RuntimeInfo",
    "check_entry",
    "check_requirement",
    "parse_version",
    "resolve_command",
    "version_satisfies",
]

logger = logging.getLogger(__name__)

VERSION_TIMEOUT = 15.0


@attrs.frozen
class RuntimeInfo:
    binaries: tuple[str, ...]  # the first one found is used
    version_args: tuple[str, ...] = ("--version",)
    fix: str = ""


RUNTIMES: dict[str, RuntimeInfo] = {
    "node": RuntimeInfo(
        ("node",),
        fix="install Node.js {spec} (https://nodejs.org/ or your package manager, e.g. apt install nodejs npm)",
    ),
    "npm": RuntimeInfo(("npm",), fix="install npm (it comes with Node.js: https://nodejs.org/)"),
    "npx": RuntimeInfo(("npx",), fix="install npx (it comes with Node.js: https://nodejs.org/)"),
    "uv": RuntimeInfo(
        ("uvx", "uv"), fix="install uv {spec}: pip install uv  (or see https://docs.astral.sh/uv/getting-started/)"
    ),
    "uvx": RuntimeInfo(("uvx", "uv"), fix="install uv: pip install uv  (uvx is uv tool run)"),
    "python": RuntimeInfo(("python3", "python"), fix="install Python {spec} (https://www.python.org/downloads/)"),
    "docker": RuntimeInfo(
        ("docker",), fix="install Docker {spec} (https://docs.docker.com/get-docker/) and start its daemon"
    ),
    "podman": RuntimeInfo(("podman",), fix="install Podman {spec} (https://podman.io/)"),
    "git": RuntimeInfo(("git",), fix="install git {spec} (https://git-scm.com/ or apt install git)"),
    "dotnet": RuntimeInfo(("dotnet",), fix="install the .NET SDK {spec} (https://dotnet.microsoft.com/download)"),
}
#: a launch command -> the runtime that provides it
COMMAND_RUNTIME = {"npx": "node", "node": "node", "uvx": "uv", "uv": "uv", "dnx": "dotnet"}

_VERSION = re.compile(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?")
#: one clause of a version spec, matched against the clause stripped of its blanks (a spec
#: is remote catalog data): the one run of blanks left, after the operator, is read once
#: (``\s*`` gives back blanks only to ``v?\d``, which fails at once on a blank). With
#: ``^\s*`` and ``\s*$`` around it, a clause of blanks was split between two ``\s*``
#: every way there is: quadratic.
_CLAUSE = re.compile(r"(>=|<=|==|!=|~=|>|<|\^)?\s*v?(\d+(?:\.\d+){0,2})(?:\.\*)?")


@attrs.frozen
class RequirementCheck:
    """The outcome for one requirement: ``ok``, what was found, and ``fix`` when not ok."""

    requirement: Requirement
    ok: bool
    path: str = ""
    version: str = ""
    problem: str = ""
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        """This outcome as JSON-ready data (``kairox catalog show --json``, the dashboard)."""
        return {**attrs.asdict(self, recurse=False), "requirement": str(self.requirement)}

    def describe(self) -> str:
        if self.ok:
            found = f"{self.version} at {self.path}" if self.version else self.path
            return f"{self.requirement}: ok ({found})"
        return f"{self.requirement}: {self.problem}; {self.fix}"


def parse_version(text: str) -> tuple[int, ...] | None:
    m = _VERSION.search(text)
    if m is None:
        return None
    return tuple(int(g) for g in m.groups() if g is not None)


def version_satisfies(version: tuple[int, ...], spec: str) -> bool:
    """``spec`` is comma-separated clauses (``>=18``, ``>=3.10,<4``, ``==20.*``, ``^20``); a bare
    version means at least that version. Raises ``ValueError`` for a spec it cannot read."""
    for clause in (c for c in spec.split(",") if c.strip()):
        m = _CLAUSE.fullmatch(clause.strip())
        if m is None:
            raise ValueError(f"cannot read the version spec {clause.strip()!r}")
        op = m.group(1) or ">="
        want = tuple(int(p) for p in m.group(2).split("."))
        width = max(len(want), len(version))
        have = version + (0,) * (width - len(version))
        padded = want + (0,) * (width - len(want))
        prefix = version[: len(want)] + (0,) * (len(want) - len(version[: len(want)]))
        ok = {
            ">=": have >= padded,
            ">": have > padded,
            "<=": have <= padded,
            "<": have < padded,
            "==": prefix == want,
            "!=": prefix != want,
            "~=": have >= padded and prefix[: max(1, len(want) - 1)] == want[: max(1, len(want) - 1)],
            "^": have >= padded and have[:1] == padded[:1],
        }[op]
        if not ok:
            return False
    return True


def _which(binary: str, env: Mapping[str, str]) -> str | None:
    return shutil.which(binary, path=env.get("PATH"))


async def _version_of(path: str, args: Sequence[str], env: Mapping[str, str]) -> str:
    try:
        with anyio.fail_after(VERSION_TIMEOUT):
            result = await anyio.run_process(
                [path, *args],
                check=False,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
    except (OSError, TimeoutError) as exc:
        logger.debug("%s %s failed: %s", path, " ".join(args), exc)
        return ""
    out = (result.stdout or b"").decode("utf-8", "replace") + (result.stderr or b"").decode("utf-8", "replace")
    for line in out.splitlines():
        if _VERSION.search(line):
            return line.strip()[:120]
    return ""


async def check_requirement(req: Requirement, env: Mapping[str, str]) -> RequirementCheck:
    info = RUNTIMES.get(req.runtime, RuntimeInfo((req.runtime,), fix=f"install {req.runtime} {{spec}}"))
    fix = info.fix.replace("{spec}", req.version).replace("  ", " ").strip()
    path = next((p for p in (_which(b, env) for b in info.binaries) if p), None)
    if path is None:
        names = " or ".join(info.binaries)
        return RequirementCheck(req, False, problem=f"{names} not found on PATH", fix=fix)
    if not req.version:
        return RequirementCheck(req, True, path=path)
    line = await _version_of(path, info.version_args, env)
    version = parse_version(line) if line else None
    if version is None:
        return RequirementCheck(req, False, path=path, problem=f"cannot tell the version of {path}", fix=fix)
    shown = ".".join(map(str, version))
    try:
        ok = version_satisfies(version, req.version)
    except ValueError as exc:
        return RequirementCheck(req, False, path=path, version=shown, problem=str(exc), fix="fix the catalog entry")
    if ok:
        return RequirementCheck(req, True, path=path, version=shown)
    return RequirementCheck(req, False, path=path, version=shown, problem=f"found {shown}", fix=fix)


def resolve_command(command: str, args: Sequence[str], env: Mapping[str, str]) -> tuple[str, tuple[str, ...]]:
    """The recipe as it can run here: ``uvx X`` becomes ``uv tool run X`` when only ``uv`` is on PATH."""
    if command == "uvx" and _which("uvx", env) is None and _which("uv", env) is not None:
        return "uv", ("tool", "run", *args)
    return command, tuple(args)


async def check_entry(entry: CatalogEntry, env: Mapping[str, str]) -> list[RequirementCheck]:
    """Every requirement of ``entry``, plus the launch command itself when no requirement covers it."""
    reqs = list(entry.requirements)
    launch = entry.launch
    if launch is not None and launch.transport == "stdio":
        command = launch.command
        covered = {COMMAND_RUNTIME.get(command, command)} & {r.runtime for r in reqs}
        if not covered and "/" not in command:
            reqs.append(Requirement(command))
        elif command in ("npx",):
            reqs.append(Requirement("npx"))
    results: list[RequirementCheck] = [RequirementCheck(Requirement(""), True)] * len(reqs)

    async def one(i: int, req: Requirement) -> None:
        results[i] = await check_requirement(req, env)

    async with anyio.create_task_group() as tg:
        for i, req in enumerate(reqs):
            tg.start_soon(one, i, req)
    return results
