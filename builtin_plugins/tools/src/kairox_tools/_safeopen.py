"""Writing a file at a resolved path without following a symbolic link on the way.

:func:`directory` reaches a directory from ``/`` one component at a time, each
opened with ``O_DIRECTORY | O_NOFOLLOW`` relative to the descriptor of the one
before (missing ones made with ``mkdir(dir_fd=)`` when asked), so a component
swapped for a link after the path was checked fails the walk instead of
redirecting it. The file is then opened, created or atomically replaced
relative to that descriptor, also with no-follow.

Where the platform has no ``dir_fd`` support (``os.supports_dir_fd``), the same
calls work on paths: the last component is still never followed, the others are.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from kairox.files import STALE_TEMP_AGE

__all__ = [
    "DIR_FD",
    "Directory",
    "LinkOnPath",
    "MissingDirectory",
    "NotADirectory",
    "NotRegular",
    "SharedFile",
    "UnsafePath",
    "directory",
]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
#: O_PATH where there is one: a directory we may search but not read can still be walked
_DIR_FLAGS = _O_DIRECTORY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)

#: whether directories are walked by descriptor (Linux, the BSDs, macOS); else by path
DIR_FD = bool(_NOFOLLOW and _O_DIRECTORY) and all(
    f in os.supports_dir_fd for f in (os.open, os.mkdir, os.stat, os.rename, os.unlink)
)


class UnsafePath(Exception):
    """The path could not be written as checked; ``path`` is the component at fault."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = path


class LinkOnPath(UnsafePath):
    """A component is a symbolic link now (it was not when the path was resolved)."""


class MissingDirectory(UnsafePath):
    """A directory on the path does not exist, and creating it was not asked for."""


class NotADirectory(UnsafePath):
    """A component that should be a directory is something else."""


class NotRegular(UnsafePath):
    """The file opened is not a regular file (a device, socket or pipe)."""


class SharedFile(UnsafePath):
    """The file has more than one hard link: another name, maybe outside, shares its content."""

    def __init__(self, path: Path, links: int) -> None:
        super().__init__(path)
        self.links = links


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class Directory:
    """A directory reached without following links; files are named relative to it."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        #: its descriptor; ``None`` on a platform without ``dir_fd`` support (paths are used)
        self.fd = fd

    def _at(self, name: str) -> str:
        return name if self.fd is not None else os.path.join(self.path, name)

    def lstat(self, name: str) -> os.stat_result | None:
        """``name`` in this directory, not followed; ``None`` when there is none."""
        try:
            return os.stat(self._at(name), dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def append(self, name: str, data: bytes, *, single_link: bool) -> None:
        """Append to ``name`` (created if missing). With ``single_link``, a file with
        more than one hard link is refused (:class:`SharedFile`) before anything is written."""
        # O_NONBLOCK: a pipe swapped in after the check fails at once instead of hanging
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC | _NONBLOCK
        fd = os.open(self._at(name), flags, 0o666, dir_fd=self.fd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise NotRegular(self.path / name)
            if single_link and st.st_nlink > 1:
                raise SharedFile(self.path / name, st.st_nlink)
            if _NONBLOCK:
                os.set_blocking(fd, True)
            _write_all(fd, data)
        finally:
            os.close(fd)

    def create(self, name: str, data: bytes) -> None:
        """Create ``name``, which must not exist (not even as a link)."""
        fd = os.open(self._at(name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666, dir_fd=self.fd)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)

    def replace(self, name: str, data: bytes, mode: int) -> None:
        """Write a temporary file here and rename it over ``name`` (permissions ``mode``):
        readers see the old or the new file, never half; a link that appeared
        meanwhile is replaced, never written through."""
        stem = name
        while len(os.fsencode(stem)) > 100:  # room for the rest within a name's 255 bytes
            stem = stem[:-1]
        prefix = f".{stem}."
        self._remove_stale(prefix)
        if self.fd is None:
            fd, tmp = tempfile.mkstemp(dir=self.path, prefix=prefix, suffix=".kairox-tmp")
        else:
            fd, tmp = self._temp(prefix)
        try:
            try:
                _write_all(fd, data)
                os.fchmod(fd, stat.S_IMODE(mode))
            finally:
                os.close(fd)
            os.replace(self._at(tmp), self._at(name), src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(self._at(tmp), dir_fd=self.fd)
            raise

    def _remove_stale(self, prefix: str) -> None:
        """Remove ``<prefix>*.kairox-tmp`` files older than a minute: a write that was killed
        left them (a live write's exists for milliseconds). Best effort, never following links."""
        cutoff = time.time() - STALE_TEMP_AGE
        listing: int | None = None
        try:
            if self.fd is not None:  # the walk's descriptor may be O_PATH: open one that reads
                listing = os.open(".", os.O_RDONLY | _O_DIRECTORY | _CLOEXEC, dir_fd=self.fd)
            with os.scandir(listing if listing is not None else self.path) as it:
                stale = [
                    e.name
                    for e in it
                    if e.name.startswith(prefix)
                    and e.name.endswith(".kairox-tmp")
                    and e.is_file(follow_symlinks=False)
                    and e.stat(follow_symlinks=False).st_mtime < cutoff
                ]
        except OSError:
            return
        finally:
            if listing is not None:
                os.close(listing)
        for name in stale:
            with contextlib.suppress(OSError):
                os.unlink(self._at(name), dir_fd=self.fd)

    def _temp(self, prefix: str) -> tuple[int, str]:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
        for _ in range(100):
            tmp = f"{prefix}{secrets.token_hex(6)}.kairox-tmp"
            try:
                return os.open(tmp, flags, 0o600, dir_fd=self.fd), tmp
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "no free temporary name", str(self.path / prefix))


@contextlib.contextmanager
def directory(path: Path, *, create: bool) -> Iterator[Directory]:
    """The directory at ``path`` (absolute and resolved: no ``..``, no links), reached
    from ``/`` with no-follow on every component; with ``create``, missing ones are made.

    Raises :class:`LinkOnPath`, :class:`NotADirectory` or :class:`MissingDirectory`
    naming the component at fault, or the ``OSError`` of a step.
    """
    if not DIR_FD:
        if not path.is_dir():
            if not create:
                raise MissingDirectory(path)
            path.mkdir(parents=True, exist_ok=True)
        yield Directory(path, None)
        return
    anchor, *names = path.parts
    fd = os.open(anchor, _DIR_FLAGS)
    try:
        current = Path(anchor)
        for name in names:
            current = current / name
            step = _step(fd, name, current, create)
            os.close(fd)
            fd = step
        yield Directory(path, fd)
    finally:
        os.close(fd)


def _step(parent: int, name: str, path: Path, create: bool) -> int:
    """Open the directory ``name`` under the descriptor ``parent``, not following a link."""
    try:
        return _open_dir(parent, name, path)
    except FileNotFoundError:
        if not create:
            raise MissingDirectory(path) from None
    with contextlib.suppress(FileExistsError):  # made meanwhile: opening it decides
        os.mkdir(name, 0o777, dir_fd=parent)
    return _open_dir(parent, name, path)


def _open_dir(parent: int, name: str, path: Path) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        # Linux says ENOTDIR for a link opened with O_DIRECTORY | O_NOFOLLOW
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except OSError:
            raise exc from None
        if stat.S_ISLNK(st.st_mode):
            raise LinkOnPath(path) from None
        raise NotADirectory(path) from None
