"""The ``kairox`` entry points, read through a small index on disk.

Finding entry points means importing :mod:`importlib.metadata` (which imports the
``email`` package) and reading the metadata of every installed distribution: about
half of the start-up time of ``kairox plugins``. The result only changes when
distributions are installed, removed or re-installed, so it is kept in
``$KAIROX_HOME/cache/entry-points/<interpreter and sys.path>.json`` with a
*fingerprint* of what is installed, and read from there while the fingerprint
still matches.

The fingerprint has, for each ``sys.path`` entry, its modification time, and for
each ``*.dist-info`` / ``*.egg-info`` directory in it, the modification times of
the directory and of its ``entry_points.txt``. Installing, removing or
re-installing a distribution (editable ones included) changes one of them.
Timestamps have the resolution of the kernel's clock tick, so, as git does for
its index, the index is only written when everything in the fingerprint is at
least :data:`RACY_SECONDS` old: a change made later gets a later time.

``KAIROX_ENTRY_POINT_CACHE=0`` turns the index off (every start scans).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from .files import atomic_write_text

__all__ = [
    "ENTRY_POINT_GROUP",
    "EntryPointInfo",
    "InstalledEntryPoints",
    "index_home",
    "installed_entry_points",
    "kernel_version",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "kairox"
#: the index is written only when all fingerprinted times are at least this old
RACY_SECONDS = 2.0
_FORMAT = 2
#: index files of other interpreters / sys.paths unused for this long are removed
PRUNE_DAYS = 30
# importlib.metadata.EntryPoint.pattern: "module.path:attr.path [extras]"
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


@attrs.frozen
class EntryPointInfo:
    """One entry point and the distribution that declares it."""

    name: str
    value: str
    dist_name: str | None
    version: str | None

    def load(self) -> Any:
        """Import the object the entry point names (``EntryPoint.load`` semantics)."""
        import importlib

        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"entry point {self.name!r} has an invalid value {self.value!r}")
        obj: Any = importlib.import_module(match.group("module"))
        for part in filter(None, (match.group("attr") or "").split(".")):
            obj = getattr(obj, part)
        return obj


@attrs.frozen
class InstalledEntryPoints:
    """The entry points of one group, and the kernel's own version."""

    entry_points: tuple[EntryPointInfo, ...]
    kernel_version: str | None
    #: ``"index"`` when read from the index, ``"scan"`` when read from the metadata
    source: str


_memo: dict[tuple[str, str], tuple[list[Any], InstalledEntryPoints]] = {}


def installed_entry_points(group: str, env: Mapping[str, str], home: Path | None) -> InstalledEntryPoints:
    """The entry points of ``group`` on ``sys.path``, through the index under ``home``
    (``None``: no index, scan). The index is only ever a shortcut: any trouble with it
    (a damaged file, an unwritable or unknown home, an odd path) means a scan."""
    global _kernel_version
    if home is None or env.get("KAIROX_ENTRY_POINT_CACHE", "").strip().lower() in ("0", "false", "no", "off"):
        found = _scan(group)
    else:
        try:
            found = _through_index(group, home)
        except Exception as exc:  # a shortcut that fails is not taken
            logger.debug("entry point index under %s not used: %s", home, exc, exc_info=True)
            found = _scan(group)
    _kernel_version = (found.kernel_version,)
    return found


def _through_index(group: str, home: Path) -> InstalledEntryPoints:
    paths = list(sys.path)
    fingerprint, newest = _fingerprint(paths)
    key = (group, f"{sys.executable}\0{chr(0).join(paths)}")
    memo = _memo.get(key)
    if memo is not None and memo[0] == fingerprint:
        return memo[1]
    crc = zlib.crc32(key[1].encode("utf-8", "surrogatepass"))
    file = home / "cache" / "entry-points" / f"{group}-{crc:08x}.json"
    found = _read(file, key[1], fingerprint)
    if found is not None:
        _memo[key] = (fingerprint, found)
        return found
    scanned = _scan(group)
    if newest < time.time_ns() - int(RACY_SECONDS * 1e9):
        _write(file, key[1], fingerprint, scanned)
        _memo[key] = (fingerprint, scanned)
    return scanned


def _stamp(path: str) -> list[int] | None:
    """What changes when a file or directory is replaced, edited or copied over: its
    modification and status-change times (``cp -a``, ``rsync -a`` and ``tar`` keep the
    first but not the second), inode and size."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_size]


def _fingerprint(paths: list[str]) -> tuple[list[Any], int]:
    parts: list[Any] = []
    newest = 0
    for entry in paths:
        where = entry or "."
        stamp = _stamp(where)
        parts.append([entry, stamp])
        if stamp is None:
            continue
        newest = max(newest, stamp[0], stamp[1])
        if not os.path.isdir(where):
            continue
        try:
            with os.scandir(where) as children:
                infos = sorted(c.name for c in children if c.name.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
        for name in infos:
            stamps = [_stamp(os.path.join(where, name)), _stamp(os.path.join(where, name, "entry_points.txt"))]
            parts.append([name, *stamps])
            newest = max(newest, *(t for s in stamps if s is not None for t in s[:2]), 0)
    return parts, newest


#: the kernel's version as the last look at the installed entry points found it
_kernel_version: tuple[str | None] | None = None


def kernel_version() -> str | None:
    """The installed ``kairox`` distribution's version: known once a plugin host was
    built in this process, else read from its metadata (never through the index)."""
    global _kernel_version
    if _kernel_version is None:
        from importlib import metadata as importlib_metadata

        try:
            _kernel_version = (importlib_metadata.version("kairox"),)
        except importlib_metadata.PackageNotFoundError:  # pragma: no cover - a source tree
            _kernel_version = (None,)
    return _kernel_version[0]


def index_home(env: Mapping[str, str] | None) -> Path | None:
    """Where the index lives for ``env``: ``$KAIROX_HOME``, else ``~/.kairox``; ``None``
    when neither can be found (no ``HOME``, a user without a passwd entry)."""
    from ._home import user_home

    try:
        return user_home(env)
    except (RuntimeError, KeyError, OSError):
        return None


def _dist_field(dist: Any, field: str) -> str | None:
    try:
        value = dist.metadata.get(field)
    except Exception:  # unreadable metadata names no distribution
        return None
    return value if isinstance(value, str) else None


def _scan(group: str) -> InstalledEntryPoints:
    # The standard library's importlib.metadata has everything we need from 3.10 on
    # (entry_points(group=...), EntryPoint.dist) and is ~15x faster to import and
    # scan than the importlib-metadata backport.
    from importlib import metadata as importlib_metadata

    found = []
    for ep in importlib_metadata.entry_points(group=group):
        dist = getattr(ep, "dist", None)
        found.append(
            EntryPointInfo(
                ep.name,
                ep.value,
                _dist_field(dist, "Name") if dist is not None else None,
                _dist_field(dist, "Version") if dist is not None else None,
            )
        )
    try:
        kernel_version: str | None = importlib_metadata.version("kairox")
    except importlib_metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        kernel_version = None
    return InstalledEntryPoints(tuple(found), kernel_version, "scan")


def _read(file: Path, key: str, fingerprint: list[Any]) -> InstalledEntryPoints | None:
    """The index in ``file`` if it is for ``key`` and ``fingerprint``; anything else is a miss."""
    try:
        data = json.loads(file.read_bytes())
        if data.get("format") != _FORMAT or data.get("key") != key or data.get("fingerprint") != fingerprint:
            return None
        eps = tuple(
            EntryPointInfo(_str(e["name"]), _str(e["value"]), _opt_str(e["dist"]), _opt_str(e["version"]))
            for e in data["entry_points"]
        )
        return InstalledEntryPoints(eps, _opt_str(data["kernel_version"]), "index")
    except FileNotFoundError:
        return None
    except Exception as exc:  # damaged in any way (even nested too deep): a miss
        logger.debug("entry point index %s is unreadable (%s); scanning", file, exc)
        return None


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _opt_str(value: object) -> str | None:
    return None if value is None else _str(value)


def _write(file: Path, key: str, fingerprint: list[Any], found: InstalledEntryPoints) -> None:
    data = {
        "format": _FORMAT,
        "key": key,
        "fingerprint": fingerprint,
        "kernel_version": found.kernel_version,
        "entry_points": [
            {"name": e.name, "value": e.value, "dist": e.dist_name, "version": e.version} for e in found.entry_points
        ],
    }
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(file, json.dumps(data), fsync=False)
    except OSError as exc:  # a read-only home only costs the next start a scan
        logger.debug("cannot write the entry point index %s: %s", file, exc)
        return
    _prune(file)


def _prune(keep: Path) -> None:
    """Remove index files not written for :data:`PRUNE_DAYS` (one exists per interpreter
    and ``sys.path``, and ``sys.path[0]`` is the script's directory)."""
    cutoff = time.time() - PRUNE_DAYS * 86400
    try:
        for other in keep.parent.glob("*.json"):
            if other != keep and other.stat().st_mtime < cutoff:
                other.unlink()
    except OSError as exc:
        logger.debug("pruning %s: %s", keep.parent, exc)
