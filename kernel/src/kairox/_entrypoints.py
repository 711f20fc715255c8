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

__all__ = ["ENTRY_POINT_GROUP", "EntryPointInfo", "InstalledEntryPoints", "installed_entry_points", "kernel_version"]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "kairox"
#: the index is written only when all fingerprinted times are at least this old
RACY_SECONDS = 2.0
_FORMAT = 1
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


def installed_entry_points(group: str, env: Mapping[str, str], home: Path) -> InstalledEntryPoints:
    """The entry points of ``group`` on ``sys.path``, through the index under ``home``."""
    if env.get("KAIROX_ENTRY_POINT_CACHE", "") in ("0", "false", "no", "off"):
        return _scan(group)
    paths = list(sys.path)
    fingerprint, newest = _fingerprint(paths)
    key = (group, f"{sys.executable}\0{chr(0).join(paths)}")
    memo = _memo.get(key)
    if memo is not None and memo[0] == fingerprint:
        return memo[1]
    file = home / "cache" / "entry-points" / f"{group}-{zlib.crc32(key[1].encode()):08x}.json"
    found = _read(file, key[1], fingerprint)
    if found is not None:
        _memo[key] = (fingerprint, found)
        return found
    scanned = _scan(group)
    if newest < time.time_ns() - int(RACY_SECONDS * 1e9):
        _write(file, key[1], fingerprint, scanned)
        _memo[key] = (fingerprint, scanned)
    return scanned


def _fingerprint(paths: list[str]) -> tuple[list[Any], int]:
    parts: list[Any] = []
    newest = 0
    for entry in paths:
        where = entry or "."
        try:
            st = os.stat(where)
        except OSError:
            parts.append([entry, None])
            continue
        parts.append([entry, st.st_mtime_ns])
        newest = max(newest, st.st_mtime_ns)
        if not os.path.isdir(where):
            continue
        try:
            with os.scandir(where) as children:
                infos = sorted(c.name for c in children if c.name.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
        for name in infos:
            times: list[int | None] = []
            for path in (os.path.join(where, name), os.path.join(where, name, "entry_points.txt")):
                try:
                    times.append(os.stat(path).st_mtime_ns)
                except OSError:
                    times.append(None)
            parts.append([name, *times])
            newest = max(newest, *(t for t in times if t is not None), 0)
    return parts, newest


def kernel_version(env: Mapping[str, str] | None = None) -> str | None:
    """The installed ``kairox`` distribution's version (through the index)."""
    from ._home import user_home

    env = os.environ if env is None else env
    return installed_entry_points(ENTRY_POINT_GROUP, env, user_home(env)).kernel_version


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
                dist.metadata["Name"] if dist is not None else None,
                dist.version if dist is not None else None,
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
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
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
