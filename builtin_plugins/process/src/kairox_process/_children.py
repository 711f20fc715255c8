"""Starting and ending children: the environment they get, their process groups, reaping.

The Python 3.10 backport below is applied when this module loads: every module that starts
a child imports one of its names.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

__all__ = [
    "protect_environment",
    "scripts_dir",
    "server_env",
    "describe_exit",
    "group_alive",
    "kill_group",
    "kill_session",
    "open_group",
    "reap",
    "session_members",
    "wait_group_gone",
    "wait_session_gone",
]

logger = logging.getLogger(__name__)

_PROC = "/proc"


def _backport_stdin_close_fix() -> None:
    """Python 3.10: a child's stdin pipe that breaks (the child died while kairox wrote to
    it) leaves its close future holding the BrokenPipeError, and nobody waits for it, so
    asyncio reports "Future exception was never retrieved" through the loop's exception
    handler. CPython 3.11 marks that future as handled in
    ``SubprocessStreamProtocol.pipe_connection_lost``; this does the same on 3.10."""
    import asyncio.subprocess as asyncio_subprocess

    protocol: Any = asyncio_subprocess.SubprocessStreamProtocol
    original = protocol.pipe_connection_lost
    if getattr(original, "_kairox_backport", False):
        return

    def pipe_connection_lost(self: Any, fd: int, exc: BaseException | None) -> None:
        original(self, fd, exc)
        if fd == 0 and exc is not None:
            self._stdin_closed._log_traceback = False

    pipe_connection_lost._kairox_backport = True  # type: ignore[attr-defined]
    protocol.pipe_connection_lost = pipe_connection_lost


if sys.version_info < (3, 11):  # pragma: no cover - exercised by CI's 3.10 run
    _backport_stdin_close_fix()


def scripts_dir() -> str:
    """The directory of the console scripts installed next to kairox (a venv's ``bin/``).

    Asked for each server started: ``sysconfig`` expands its install scheme on every call,
    about 0.1 ms (10 ms for each 100 servers, under 1% of bench_peers' 100-server open,
    too little for a cache to earn its place)."""
    import sysconfig

    return sysconfig.get_path("scripts")


def server_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a server kairox starts: its ``PATH`` ends with :func:`scripts_dir`.

    A server command installed into kairox's own environment (``mcp-server-time`` beside
    ``kairox`` in a venv's ``bin/``) is found although that environment is not activated:
    the user's ``PATH`` comes first, so a command found there still wins. Without ``PATH``,
    the system's default path comes first."""
    out = dict(env)
    extra = scripts_dir()
    path = out.get("PATH")
    entries = (path if path is not None else os.defpath).split(os.pathsep)
    if extra and os.path.normcase(os.path.normpath(extra)) not in {
        os.path.normcase(os.path.normpath(e)) for e in entries if e
    }:
        out["PATH"] = os.pathsep.join([*(e for e in entries if e), extra]) if any(entries) else extra
    return out


def describe_exit(returncode: int | None) -> str:
    """``"exited with code 3"`` / ``"was killed by SIGKILL"`` / ``"is still running"``."""
    if returncode is None:
        return "is still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` to the process group ``pgid``; False when the group is gone (or not ours)."""
    if not hasattr(os, "killpg"):  # pragma: no cover - not POSIX: the leader alone
        with contextlib.suppress(OSError):
            os.kill(pgid, signal.SIGTERM if sys.platform == "win32" else sig)
            return True
        return False
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member changed its uid; nothing more we can do
        logger.debug("no permission to signal process group %s", pgid)
        return False
    return True


def _proc_stats() -> list[tuple[int, bytes]] | None:
    """``(pid, the fields after "(comm)")`` of every process, from ``/proc``; ``None`` without it."""
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return None
    if "self" not in entries:
        return None
    out = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"{_PROC}/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        # "pid (comm) state ppid pgrp session ..."; comm may hold spaces and parentheses
        out.append((int(entry), stat[stat.rfind(b")") + 2 :]))
    return out


def _members(index: int, wanted: int) -> list[int] | None:
    """Live (not zombie) processes whose stat field ``index`` (2: pgrp, 3: session) is ``wanted``."""
    stats = _proc_stats()
    if stats is None:
        return None
    key = str(wanted).encode()
    found = []
    for pid, rest in stats:
        fields = rest.split(b" ", index + 1)
        if len(fields) > index and fields[0] not in (b"Z", b"X") and fields[index] == key:
            found.append(pid)
    return found


def group_alive(pgid: int) -> bool:
    """True while a live (non-zombie) member of process group ``pgid`` exists."""
    try:  # no member at all, zombies included: nothing to scan /proc for (the common case at close)
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    members = _members(2, pgid)
    if members is not None:
        return bool(members)
    try:  # pragma: no cover - without /proc: the group exists (zombies count)
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def session_members(sid: int) -> list[int]:
    """Live processes of session ``sid`` (from ``/proc``; empty where there is none)."""
    return _members(3, sid) or []


def kill_session(sid: int) -> None:
    """Kill the process group ``sid`` and every other process of session ``sid``."""
    kill_group(sid, signal.SIGKILL)
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _session_alive(sid: int) -> bool:
    members = _members(3, sid)
    return bool(members) if members is not None else group_alive(sid)


async def wait_group_gone(pgid: int, timeout: float = 1.0) -> bool:
    """Wait (bounded) until no live member of the killed group is left: SIGKILL is
    delivered asynchronously, and a caller may check right after we return."""
    with anyio.move_on_after(timeout):
        delay = 0.001
        while group_alive(pgid):
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.05)
        return True
    return False


async def wait_session_gone(sid: int, timeout: float) -> bool:
    """Wait until no process of session (and group) ``sid`` runs, killing again meanwhile."""
    with anyio.move_on_after(timeout):
        delay = 0.001
        while _session_alive(sid):
            kill_session(sid)
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.05)
        return True
    logger.warning("processes of session %s are still running after they were killed", sid)
    return False


async def reap(process: anyio.abc.Process, *, grace: float = 2.0) -> int | None:
    """Make sure ``process`` and its group are gone: SIGTERM, wait ``grace``, SIGKILL,
    wait for it and (bounded) for the rest of its group; its pipes are closed.
    Shielded: it finishes even when cancelled."""
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            kill_group(process.pid, signal.SIGTERM)
            with anyio.move_on_after(grace):
                await process.wait()
        kill_group(process.pid, signal.SIGKILL)
        if process.returncode is None:
            with anyio.move_on_after(grace):
                await process.wait()
        await wait_group_gone(process.pid, timeout=grace)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(Exception):
                    await stream.aclose()
    return process.returncode


@asynccontextmanager
async def open_group(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: bool = False,
    reap_timeout: float = 5.0,
    **kwargs: Any,
) -> AsyncIterator[anyio.abc.Process]:
    """A child in its own process group, stdout and stderr piped; on exit (normal,
    error or cancel) the group is killed, the child reaped and the group waited out."""
    process = await anyio.open_process(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        **kwargs,
    )
    try:
        yield process
    finally:
        with anyio.CancelScope(shield=True):
            kill_group(process.pid)
            with anyio.move_on_after(reap_timeout):
                await process.wait()
            await wait_group_gone(process.pid)
            await process.aclose()


@functools.cache
def protect_environment() -> bool:
    """Make this process's environment unreadable to the children it starts: on Linux, mark
    the process non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``, as ``ssh-agent`` does), so its
    ``/proc/<pid>/environ``, ``mem`` and ``fd/`` belong to root and a child running as the
    same user cannot read them. Whether it took effect (``False`` elsewhere).

    The ``kairox`` command does this first thing. A host that embeds kairox decides for its
    own process (it also stops same-user debuggers and core dumps): call it at start-up.
    What it does not stop: a child reading files the user can read, or the environment
    kairox hands it (``kairox_process.server_env`` filters that); a process running as root."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_dumpable = 4
        return bool(libc.prctl(pr_set_dumpable, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # no libc symbol: nothing to do it with
        return False
