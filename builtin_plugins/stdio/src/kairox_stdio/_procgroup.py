"""Signalling and watching a server's process group (POSIX).

Every server starts with ``start_new_session=True``: it leads a new session and
process group whose id is its pid, and its children (``npx`` -> ``node``,
a shell's background jobs) stay in that group unless they call ``setsid``
themselves. The group's id stays reserved while any member lives, so
signalling it after the leader exited still reaches the stragglers and
nothing else.
"""

from __future__ import annotations

import os
import signal

__all__ = ["describe_exit", "group_alive", "signal_group"]

_PROC = "/proc"


def _live_members_linux(pgid: int) -> bool | None:
    """Whether a non-zombie process with process group ``pgid`` exists; ``None`` without /proc."""
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return None
    if "self" not in entries:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"{_PROC}/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        # "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2 :].split(b" ", 3)
        if len(fields) < 3:
            continue
        if fields[0] in (b"Z", b"X"):
            continue  # zombies hold no resources and cannot be signalled away
        if fields[2] == str(pgid).encode():
            return True
    return False


def group_alive(pgid: int) -> bool:
    """True while a live (non-zombie) member of the process group exists."""
    alive = _live_members_linux(pgid)
    if alive is not None:
        return alive
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the whole group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member changed its uid; nothing more we can do
        return False
    return True


def describe_exit(returncode: int) -> str:
    """``"exited with code 3"`` / ``"was killed by SIGKILL"``."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"
