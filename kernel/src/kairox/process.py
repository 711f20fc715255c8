"""Child processes, the one way every feature runs them: own process group, always reaped.

Every child kairox starts (an MCP server, a language server, a debug adapter, a
hook script, a shell command) runs with ``start_new_session=True``: it leads a
new session and process group whose id is its pid, and its children (``npx`` ->
``node``, a shell's background jobs) stay in that group unless they call
``setsid``. The group's id stays reserved while any member lives, so signalling
it after the leader exited still reaches the stragglers and nothing else. A
debuggee that moves to a group of its own stays in the session:
:func:`kill_session` reaches it too.

Public API for plugins (``from kairox.process import ...``); POSIX first, with
a fallback that signals the child alone elsewhere.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

__all__ = [
    "OutputTail",
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


def _redacted(lines: list[str], secrets: Sequence[str] = ()) -> list[str]:
    from ._config import redact  # only redacting tails pay for the config module
    from ._secrets import REDACTED

    out = [str(redact(line)) for line in lines]
    for value in secrets:  # the values kairox gave the child, whatever words surround them
        out = [line.replace(value, REDACTED) for line in out]
    return out


#: a value shorter than this is not hidden by value (``1``, ``on``, ``debug``: it would blank
#: ordinary words of the server's log; a secret this short is no secret)
MIN_SECRET_LENGTH = 8


class OutputTail:
    """What a child wrote to a stream (its stderr, mostly), bounded whatever it writes.

    The first ``head_lines`` lines are kept (where a crash usually says why), then
    the last lines up to ``max_bytes`` (and ``max_lines``); lines in between are dropped and counted,
    so a server that writes 50 MB on its way out costs a few KB. A line longer
    than ``max_line`` bytes is kept as pieces of that size, and an endless line
    without a newline is cut the same way, never held whole.

    Feed it raw bytes (:meth:`feed`) or lines a reader already split (:meth:`append`).

    With ``redact=True`` (a server's stderr: it may echo a token it was given) lines
    are read back with URL passwords and secret-looking values redacted, and a line
    longer than ``max_line`` is cut (ending in ``[...]``) instead of split: pieces are
    redacted one by one, and a secret cut in two would slip through.
    """

    CUT = " [...]"

    def __init__(
        self,
        max_bytes: int = 64 * 1024,
        max_line: int = 2000,
        *,
        head_lines: int = 0,
        max_lines: int = 2000,
        redact: bool = False,
    ) -> None:
        self.redact = redact
        self._skipping = False  # the rest of a line that was cut (redact mode) is dropped
        self.max_bytes = max_bytes
        #: lines kept in the tail at most (a flood of empty lines costs entries, not bytes)
        self.max_lines = max_lines
        self.max_line = max_line
        self.head_lines = head_lines
        self._head: list[str] = []
        self._lines: collections.deque[str] = collections.deque()
        self._size = 0
        self._partial = b""
        self.dropped = 0  # lines dropped between the head and the tail
        self.total_bytes = 0
        self.total_lines = 0
        #: values hidden wherever they stand in what is read back (:meth:`hide`), longest first
        self.secrets: tuple[str, ...] = ()

    def hide(self, values: Iterable[str]) -> None:
        """Read lines back with each of ``values`` (the env values and headers kairox gave
        the child: it may print them) shown as ``<redacted>``, whatever surrounds it; values
        shorter than :data:`MIN_SECRET_LENGTH` are left, they would blank ordinary words."""
        keep = {v for v in (*self.secrets, *values) if isinstance(v, str) and len(v) >= MIN_SECRET_LENGTH}
        self.secrets = tuple(sorted(keep, key=len, reverse=True))

    def scrub(self, text: str) -> str:
        """``text`` (an error about the child, say) with the :meth:`hide` values redacted."""
        from ._secrets import REDACTED

        for value in self.secrets:
            text = text.replace(value, REDACTED)
        return text

    def feed(self, data: bytes) -> None:
        """Add bytes as they were read; a line is complete at its ``\\n``."""
        self.total_bytes += len(data)
        *lines, rest = (self._partial + data).split(b"\n")
        if self._skipping:  # what follows a cut line up to its newline is dropped
            if lines:
                lines, self._skipping = lines[1:], False
            else:
                rest = b""
        for raw in lines:  # a line ends at "\n" or "\r\n" (one "\r": more are its own)
            self._add_line(raw[:-1] if raw[-1:] == b"\r" else raw)
        # a "\r" that ends what is read so far may be the start of "\r\n": it is held back,
        # so the line is cut as it would be with its newline in the same read
        body = len(rest) - (rest[-1:] == b"\r")
        if self.redact and body > self.max_line:
            self._add_line(rest)
            rest, self._skipping, body = b"", True, 0
        while body > self.max_line:
            self._add(rest[: self.max_line])
            rest = rest[self.max_line :]
            body -= self.max_line
        self._partial = rest

    def append(self, line: str) -> None:
        """Add one line a reader already split (its line ending is dropped)."""
        raw = line.rstrip("\r\n").encode("utf-8", "replace")
        self.total_bytes += len(raw) + 1
        self._add_line(raw)

    def _add_line(self, raw: bytes) -> None:
        self.total_lines += 1
        if self.redact and len(raw) > self.max_line:
            from ._secrets import cut_at_word

            # the word the cut splits goes too: a secret's first half (``https://u:S3CR``) is
            # not recognised as a secret
            line = raw.decode("utf-8", "replace")
            kept = cut_at_word(line, len(raw[: max(0, self.max_line - len(self.CUT))].decode("utf-8", "ignore")))
            self._add((kept.rstrip() + self.CUT).encode("utf-8"))
            return
        for start in range(0, max(len(raw), 1), self.max_line):
            self._add(raw[start : start + self.max_line])

    def _add(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace")
        if len(self._head) < self.head_lines:
            self._head.append(line)
            return
        self._lines.append(line)
        self._size += len(line) + 1
        while (self._size > self.max_bytes or len(self._lines) > self.max_lines) and self._lines:
            self._size -= len(self._lines.popleft()) + 1
            self.dropped += 1

    def lines(self) -> list[str]:
        """The kept lines in order, with a marker where lines were dropped after the head."""
        marker = [f"[... {self.dropped} lines dropped ...]"] if self.dropped and self._head else []
        out = [*self._head, *marker, *self._lines]
        if self._partial:
            out.append(self._partial.decode("utf-8", "replace"))
        return _redacted(out, self.secrets) if self.redact or self.secrets else out

    def tail(self, n: int = 20) -> list[str]:
        """The last ``n`` kept lines."""
        return self.lines()[-n:] if n else []

    def text(self, max_lines: int = 40) -> str:
        """The last ``max_lines`` lines as one text, saying how many earlier ones are not shown."""
        lines = self.lines()
        if not max_lines or len(lines) <= max_lines:
            skipped = 0 if self._head else self.dropped
            shown = lines
        else:
            kept = [*self._head, *self._lines] + ([self._partial.decode("utf-8", "replace")] if self._partial else [])
            shown = kept[-max_lines:]
            skipped = self.dropped + len(kept) - len(shown)
        head = [f"[... {skipped} earlier lines not shown]"] if skipped else []
        if (self.redact or self.secrets) and shown is not lines:
            shown = _redacted(shown, self.secrets)
        return "\n".join(head + shown)


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


@functools.cache
def protect_environment() -> bool:
    """Make this process's environment unreadable to the children it starts: on Linux, mark
    the process non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``, as ``ssh-agent`` does), so its
    ``/proc/<pid>/environ``, ``mem`` and ``fd/`` belong to root and a child running as the
    same user cannot read them. Whether it took effect (``False`` elsewhere).

    The ``kairox`` command does this first thing. A host that embeds kairox decides for its
    own process (it also stops same-user debuggers and core dumps): call it at start-up.
    What it does not stop: a child reading files the user can read, or the environment
    kairox hands it (:func:`server_env` filters that); a process running as root."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_dumpable = 4
        return bool(libc.prctl(pr_set_dumpable, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # no libc symbol: nothing to do it with
        return False


def scripts_dir() -> str:
    """The directory of the console scripts installed next to kairox (a venv's ``bin/``).

    Asked once per interpreter (``sysconfig`` expands its install scheme on every call,
    about 0.1 ms: 10 ms for each 100 servers started)."""
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
