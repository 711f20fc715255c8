"""Writing files so that readers never see half of one.

Settings, config edits, and the catalog's, skills' and entry points' caches all go
through :func:`atomic_write_bytes`: a temp file in the same directory,
flushed and fsynced, then ``os.replace`` over the target (atomic on POSIX and on
Windows). On failure the temp file is removed and the target is untouched.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text"]


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
