"""Writing files so that readers never see half of one.

Settings, config edits, and the catalog's, skills' and entry points' caches all go
through :func:`atomic_write_bytes`: a temp file in the same directory,
flushed and fsynced, then ``os.replace`` over the target (atomic on POSIX and on
Windows). On failure the temp file is removed and the target is untouched.
:func:`locked` is the exclusive advisory lock a read-modify-write of a shared
settings file holds.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text", "locked"]


@contextlib.contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``lock_path`` (created if missing) for the block.

    ``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows. Processes that lock the
    same path take turns, so their read-modify-write cycles never interleave.
    """
    with open(lock_path, "a+b") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            import msvcrt

            fh.seek(0)
            msvcrt.locking(fh.fileno(), msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined]
            try:
                yield
            finally:
                fh.seek(0)
                msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def atomic_write_bytes(path: Path, data: bytes, *, mode: int | None = None, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically; ``mode`` sets the file's permission bits.

    ``fsync=False`` skips the flush to disk, for caches: after a crash the file is
    the old one or the new one (or, on some file systems, empty), never a mix."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str, *, mode: int | None = None, fsync: bool = True) -> None:
    """:func:`atomic_write_bytes` of ``text`` encoded as UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode, fsync=fsync)
