"""Compatibility: the kairox version range, platforms and required binaries.

Version ranges accept PEP 440 specifiers (``>=0.1,<1``) and the npm forms
plugin authors write (``>=0.1 <1``, ``^0.2``, ``~1.4``, ``1.x``, ``*``).
A required binary is looked up on ``PATH`` and, when a range is given, its
``--version`` output is checked (first dotted number in it).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from .model import Compatibility, Requirement

__all__ = [
    "KNOWN_PLATFORMS",
    "check_compatibility",
    "current_platform",
    "kairox_version",
    "parse_range",
    "parse_requirement",
]

#: platform words a manifest may use, mapped to ``sys.platform`` prefixes
KNOWN_PLATFORMS = {
    "linux": "linux",
    "darwin": "darwin",
    "macos": "darwin",
    "mac": "darwin",
    "win32": "win32",
    "windows": "win32",
    "freebsd": "freebsd",
    "openbsd": "openbsd",
    "cygwin": "cygwin",
}
_VERSION_IN_TEXT = re.compile(r"(\d+(?:\.\d+){0,3})")
_PARTIAL = re.compile(r"^(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?\Z")
VERSION_TIMEOUT = 5.0


def _npm_term(term: str) -> list[str]:
    """One npm comparator as PEP 440 specifiers."""
    if term in ("*", "x", "X", ""):
        return []
    op = ""
    for candidate in ("^", "~", ">=", "<=", "==", "!=", "~=", ">", "<", "="):
        if term.startswith(candidate):
            op, term = candidate, term[len(candidate) :].strip()
            break
    if term.startswith("v"):
        term = term[1:]
    m = _PARTIAL.match(term)
    if op in ("^", "~", "", "=") and m:
        major = int(m.group(1))
        minor = m.group(2)
        patch = m.group(3)
        minor_n = int(minor) if minor and minor.isdigit() else None
        patch_n = int(patch) if patch and patch.isdigit() else None
        base = ".".join(str(p) for p in (major, minor_n, patch_n) if p is not None)
        if op == "^":
            if major > 0 or minor_n is None:
                upper = f"{major + 1}"
            elif minor_n > 0 or patch_n is None:
                upper = f"0.{minor_n + 1}"
            else:
                upper = f"0.0.{patch_n + 1}"
            return [f">={base}", f"<{upper}"]
        if op == "~" or minor_n is None or patch_n is None:
            if minor_n is None:
                return [f">={major}", f"<{major + 1}"]
            if op == "~" or patch_n is None:
                return [f">={base}", f"<{major}.{minor_n + 1}"]
        return [f"=={base}"]
    if op == "=":
        op = "=="
    return [f"{op}{term}"]


def parse_range(text: str) -> SpecifierSet:
    """Parse a version range; raise ``ValueError`` with a readable message when it is not one."""
    if not isinstance(text, str):
        raise ValueError("expected a version range string")
    stripped = text.strip()
    try:
        return SpecifierSet(stripped)
    except InvalidSpecifier:
        pass
    if "||" in stripped:
        raise ValueError(f"{text!r}: alternatives (||) are not supported; write one range")
    parts: list[str] = []
    for chunk in re.split(r"[\s,]+", stripped):
        if chunk:
            parts.extend(_npm_term(chunk))
    try:
        return SpecifierSet(",".join(parts))
    except InvalidSpecifier:
        raise ValueError(f"{text!r} is not a version range (examples: >=0.2,<1  ^0.2  >=20)") from None


def parse_requirement(text: str) -> Requirement:
    """``"node >=20"`` -> ``Requirement("node", ">=20")``; ``ValueError`` when malformed."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("expected a binary name, optionally followed by a version range")
    binary, _, spec = text.strip().partition(" ")
    if not re.fullmatch(r"[A-Za-z0-9._+-]+", binary):
        raise ValueError(f"{binary!r} is not a program name")
    spec = spec.strip()
    if spec:
        parse_range(spec)
    return Requirement(binary, spec)


def kairox_version() -> str:
    from kairox.ext import kernel_version

    return kernel_version() or "0.0.0"  # "0.0.0": a source tree without metadata


def current_platform() -> str:
    return sys.platform


def _platform_ok(platforms: tuple[str, ...], here: str) -> bool:
    if not platforms:
        return True
    return any(here.startswith(KNOWN_PLATFORMS.get(p.lower(), p.lower())) for p in platforms)


@functools.lru_cache(maxsize=64)
def _binary_version(path: str) -> str | None:
    try:
        proc = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    m = _VERSION_IN_TEXT.search(proc.stdout or "") or _VERSION_IN_TEXT.search(proc.stderr or "")
    return m.group(1) if m else None


def check_compatibility(
    compat: Compatibility,
    *,
    env: Mapping[str, str] | None = None,
    version: str | None = None,
    platform: str | None = None,
) -> list[str]:
    """Every reason the plugin cannot run here (empty when it can)."""
    reasons: list[str] = []
    if compat.kairox_version:
        ours = version or kairox_version()
        try:
            ok = parse_range(compat.kairox_version).contains(Version(ours), prereleases=True)
        except (ValueError, InvalidVersion) as exc:
            reasons.append(f"kairoxVersion: {exc}")
        else:
            if not ok:
                reasons.append(f"needs kairox {compat.kairox_version}, this is {ours}")
    here = platform or current_platform()
    if not _platform_ok(compat.platforms, here):
        reasons.append(f"supports {', '.join(compat.platforms)}, not {here}")
    # only absolute PATH entries: an empty or relative one ("", ".") would find (and the
    # version probe would run) a program the current directory, a workspace, ships
    raw_path = (env if env is not None else os.environ).get("PATH", os.defpath)
    search_path = os.pathsep.join(p for p in raw_path.split(os.pathsep) if p and os.path.isabs(p))
    for req in compat.requires:
        found = shutil.which(req.binary, path=search_path)
        if found is None:
            reasons.append(f"requires {req.binary}, which is not on PATH")
            continue
        if not req.spec:
            continue
        got = _binary_version(found)
        if got is None:
            reasons.append(f"requires {req}: could not read the version of {found}")
            continue
        try:
            if not parse_range(req.spec).contains(Version(got), prereleases=True):
                reasons.append(f"requires {req}, found {req.binary} {got}")
        except (ValueError, InvalidVersion) as exc:
            reasons.append(f"requires {req}: {exc}")
    return reasons
