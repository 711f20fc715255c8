"""The contained reader: the one way kairox reads what a workspace, bundle or catalog contains.

A :class:`Root` is a folder whose files are read *contained*:

- every path is resolved with its symbolic links, and must land inside the root
  (the root itself may be a link: the user or the code that made the root chose it);
- only regular files are read (a device, FIFO or socket is refused before a byte is read);
- a file is read up to a size cap, checked before reading and while reading (``/proc``
  files say size 0);
- a walk is bounded in depth, in entries visited, and enters each folder once, whatever
  links lead to it again.

A refusal is a :class:`Refused` naming the file and the reason, and a walk yields a
refused entry where the item would have been, so the caller can show it there.

This guards against what a repository *contains* (a link planted in a clone, a device
node, a huge file), read by a kairox process. It does not guard against another process
of the same user changing the tree while kairox reads it: such a process runs as the
user already. The last component is opened with ``O_NOFOLLOW`` all the same, so a file
swapped for a link after it was resolved is refused rather than followed.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path, PurePath
from typing import Any, BinaryIO, Literal

import attrs

from .errors import KairoxError

__all__ = ["Entry", "Limits", "Refused", "Root", "read_user_file", "relative_text"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


@attrs.frozen
class Limits:
    """How much one root may cost to read."""

    #: bytes read of one file; a larger one is refused (or cut, where the caller asks for a prefix)
    max_bytes: int = 4 * 1024 * 1024
    #: folder levels a walk goes below its start
    max_depth: int = 16
    #: entries (files and folders) one walk looks at before it stops with a refusal
    max_entries: int = 100_000


DEFAULT_LIMITS = Limits()


class Refused(KairoxError, OSError):
    """A file or folder the contained reader did not read: :attr:`file` and :attr:`reason`.

    An ``OSError`` too, so code that already treats an unreadable file as an error
    (``except OSError``) treats a refused one the same way."""

    def __init__(self, file: str | os.PathLike[str], reason: str) -> None:
        self.file = os.fspath(file)
        self.reason = reason
        super().__init__(f"{self.file}: {reason}")


class Entry:
    """One thing a walk met.

    ``path`` is where the walk found it (under the root as given), ``real`` where it is
    (resolved; ``None`` when refused), ``kind`` what it is, ``depth`` how many folders
    below the walk's start, and ``refused`` why it may not be read ("" when it may).
    ``text`` and ``real_text`` are the same paths as strings.

    A plain class with ``__slots__`` whose paths are strings until asked for as
    :class:`~pathlib.Path`: a walk makes one per entry (benchmarks/bench_skills.py:
    a warm scan of 10,000 skills spent a third of its time building attrs entries
    with two ``Path`` objects each)."""

    __slots__ = ("depth", "kind", "name", "real_text", "refused", "text")

    def __init__(
        self,
        path: str | os.PathLike[str],
        real: str | os.PathLike[str] | None,
        kind: Literal["file", "dir", "other", "missing"],
        depth: int,
        refused: str = "",
        *,
        name: str | None = None,
    ) -> None:
        self.text = os.fspath(path)
        #: the last part of :attr:`path`
        self.name = os.path.basename(self.text) if name is None else name
        self.real_text = None if real is None else os.fspath(real)
        self.kind = kind
        self.depth = depth
        self.refused = refused

    @property
    def path(self) -> Path:
        return Path(self.text)

    @property
    def real(self) -> Path | None:
        return None if self.real_text is None else Path(self.real_text)

    def stat(self) -> os.stat_result:
        """The ``stat`` of what the entry leads to (its target, for a link inside the root)."""
        if self.real_text is None:
            raise Refused(self.text, self.refused or "not found")
        return os.stat(self.real_text)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Entry):
            return NotImplemented
        mine = (self.text, self.real_text, self.kind, self.depth, self.refused)
        return mine == (other.text, other.real_text, other.kind, other.depth, other.refused)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Entry({self.text!r}, {self.real_text!r}, {self.kind!r}, {self.depth}, {self.refused!r})"


def relative_text(path: PurePath | str, root: PurePath | str) -> str | None:
    """``path`` relative to ``root`` as ``/``-separated text (``"."`` for ``root`` itself), or
    ``None`` when it is not below ``root``. Both compared as given, like :func:`kairox.files.is_inside`;
    :meth:`Root.contains` asks it of resolved paths.

    Plain string work, linear in the path: ``PurePath.relative_to`` walks every parent of the
    path, quadratic in its depth on Python 3.13, and a path argument is outside input."""
    text, base = os.fspath(path), os.fspath(root).rstrip(os.sep) or os.sep
    if text == base:
        return "."
    prefix = base if base.endswith(os.sep) else base + os.sep
    if not text.startswith(prefix):
        return None
    rest = text[len(prefix) :]
    return rest.replace(os.sep, "/") if os.sep != "/" else rest


class Root:
    """A folder whose files are read contained (see the module's docstring).

    ``label`` says what the root is in refusals (``"the workspace"``, ``"bundle guard"``).
    ``also`` are further folders that links from inside may reach: folders the user's own
    config names (``[files] readable_roots``), never ones a workspace names.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        label: str = "",
        limits: Limits = DEFAULT_LIMITS,
        also: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        self.path = Path(os.path.abspath(os.fspath(path)))
        self.real = Path(os.path.realpath(self.path))
        self.label = label or str(self.path)
        self.limits = limits
        self._reals = (str(self.real), *(os.path.realpath(os.fspath(p)) for p in also))

    def __repr__(self) -> str:
        return f"Root({str(self.path)!r}, label={self.label!r})"

    # -- where a path leads -----------------------------------------------------------

    def _absolute(self, path: str | os.PathLike[str]) -> Path:
        p = Path(os.fspath(path))
        return p if p.is_absolute() else self.path / p

    def contains(self, real: str | os.PathLike[str]) -> bool:
        """Whether the resolved path ``real`` is inside this root (or a folder of :attr:`also`)."""
        text = os.fspath(real)
        return any(relative_text(text, r) is not None for r in self._reals)

    def locate(self, path: str | os.PathLike[str]) -> Path:
        """The resolved path of ``path`` (relative to the root, or absolute), or :class:`Refused`
        when it leads outside the root. A path that does not exist is located as far as it resolves."""
        given = self._absolute(path)
        try:
            real = os.path.realpath(given)
        except (OSError, ValueError) as exc:  # a NUL byte, a loop
            raise Refused(given, f"cannot be resolved ({exc})") from None
        if not self.contains(real):
            raise Refused(given, self._outside_reason(given, real))
        return Path(real)

    def _outside_reason(self, given: Path, real: str) -> str:
        if os.path.islink(given) or real != os.path.abspath(given):
            return f"leads to {real}, outside {self.label}; not read"
        return f"outside {self.label}; not read"

    # -- reading ----------------------------------------------------------------------

    def open(self, path: str | os.PathLike[str] | Entry) -> BinaryIO:
        """The regular file at ``path`` (or a walk's :class:`Entry`), open for binary reading.
        :class:`Refused` when it leads outside, is not a regular file, or is larger than
        :attr:`Limits.max_bytes`; ``FileNotFoundError`` when there is none."""
        given, real = self._resolved(path)
        return self._open(given, real, self.limits.max_bytes)

    def read_bytes(self, path: str | os.PathLike[str] | Entry, *, max_bytes: int | None = None) -> bytes:
        """The whole file; :class:`Refused` when it is larger than ``max_bytes`` (default
        :attr:`Limits.max_bytes`) or may not be read (see :meth:`open`)."""
        cap = self.limits.max_bytes if max_bytes is None else max_bytes
        given, real = self._resolved(path)
        with self._open(given, real, cap) as fh:
            data = _read_upto(fh, cap + 1)
        if len(data) > cap:
            raise Refused(given, f"larger than {cap:,} bytes; not read")
        return data

    def read_text(
        self, path: str | os.PathLike[str] | Entry, *, max_bytes: int | None = None, errors: str = "strict"
    ) -> str:
        """:meth:`read_bytes` decoded as UTF-8 (a leading BOM dropped); ``errors`` as for ``bytes.decode``."""
        data = self.read_bytes(path, max_bytes=max_bytes)
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        return data.decode("utf-8", errors)

    def read_prefix(self, path: str | os.PathLike[str] | Entry, max_bytes: int) -> tuple[bytes, int]:
        """At most ``max_bytes`` of the file, and how many bytes it has beyond them (0 when
        it was read whole; for a file whose size ``stat`` does not tell, at least 1)."""
        given, real = self._resolved(path)
        with self._open(given, real, None) as fh:
            data = _read_upto(fh, max_bytes + 1)
            size = os.fstat(fh.fileno()).st_size
        if len(data) <= max_bytes:
            return data, 0
        return data[:max_bytes], max(size - max_bytes, 1)

    def _resolved(self, path: str | os.PathLike[str] | Entry) -> tuple[str, str]:
        if isinstance(path, Entry):
            if path.refused or path.real_text is None:
                raise Refused(path.text, path.refused or "not found")
            return path.text, path.real_text
        given = self._absolute(path)
        return os.fspath(given), os.fspath(self.locate(given))

    def _open(self, given: str, real: str, cap: int | None) -> BinaryIO:
        try:
            fd = os.open(real, _READ_FLAGS)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # swapped for a link after it was resolved
                raise Refused(given, "is a symbolic link now; not read") from None
            if exc.errno == errno.ENXIO:  # a FIFO with no writer, a socket
                raise Refused(given, "not a regular file; not read") from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Refused(given, _not_regular(st.st_mode))
            if cap is not None and st.st_size > cap:
                raise Refused(given, f"larger than {cap:,} bytes; not read")
            # a regular file: O_NONBLOCK changes nothing for it, and its reads need no buffer
            return os.fdopen(fd, "rb", buffering=0)
        except BaseException:
            os.close(fd)
            raise

    # -- looking without reading ----------------------------------------------------

    def kind(self, path: str | os.PathLike[str]) -> Literal["file", "dir", "other", "missing"]:
        """What ``path`` is (following links); :class:`Refused` when it leads outside."""
        real = self.locate(path)
        try:
            return _mode_kind(os.stat(real).st_mode)
        except (OSError, ValueError):
            return "missing"

    def is_file(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` is a regular file inside the root (a link leading outside is not)."""
        try:
            return self.kind(path) == "file"
        except Refused:
            return False

    def is_dir(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` is a folder inside the root (a link leading outside is not)."""
        try:
            return self.kind(path) == "dir"
        except Refused:
            return False

    # -- walking ----------------------------------------------------------------------

    def entries(self, folder: str | os.PathLike[str] = ".") -> list[Entry]:
        """The entries of one folder, sorted by name, as :meth:`walk` yields them at depth 1;
        :class:`Refused` when the folder leads outside. A missing folder has none."""
        return list(self.walk(folder, max_depth=0))

    def walk(
        self,
        start: str | os.PathLike[str] = ".",
        *,
        max_depth: int | None = None,
        skip: Iterable[str] | Callable[[str], bool] = (),
    ) -> Iterator[Entry]:
        """Every entry below ``start`` (a folder under the root), depth first, sorted by name:
        :meth:`folders`, one entry at a time."""
        for _folder, entries in self.folders(start, max_depth=max_depth, skip=skip):
            yield from entries

    def folders(
        self,
        start: str | os.PathLike[str] = ".",
        *,
        max_depth: int | None = None,
        skip: Iterable[str] | Callable[[str], bool] = (),
    ) -> Iterator[tuple[str, list[Entry]]]:
        """Each folder below ``start`` (a folder under the root) with its entries, sorted by
        name, depth first, top down: as :func:`os.walk`, a caller that removes a folder's
        entry from the list before asking for the next folder keeps the walk out of it.

        Folders named in ``skip`` (or whose name ``skip(name)`` is true for) are left out of
        the lists. A link is followed when it leads inside the root; one that leads outside
        is listed refused, with the reason, and never entered. Each folder is entered once,
        whatever links lead to it again. Folders deeper than ``max_depth`` levels below
        ``start`` (default :attr:`Limits.max_depth`; 0: ``start``'s own entries only) are
        listed but not entered; past :attr:`Limits.max_entries` entries the walk lists one
        refused entry for ``start`` saying so, and stops. A folder that cannot be listed is
        one refused entry of its own.

        A missing ``start`` yields nothing; a ``start`` that leads outside raises :class:`Refused`."""
        given = os.fspath(self._absolute(start))
        real = os.fspath(self.locate(given))
        if not os.path.isdir(real):
            return
        levels = self.limits.max_depth if max_depth is None else max_depth
        skipped = skip if callable(skip) else frozenset(skip).__contains__
        budget = self.limits.max_entries
        seen: set[tuple[int, int]] = set()
        sep = os.sep
        # iterative, so a deep tree costs no recursion: (path as found, resolved, depth)
        stack: list[tuple[str, str, int]] = [(given, real, 0)]
        while stack:
            folder, folder_real, depth = stack.pop()
            try:
                st = os.stat(folder_real)
                if st.st_ino:  # 0: no inode numbers on this file system; nothing to compare
                    key = (st.st_dev, st.st_ino)
                    if key in seen:
                        continue
                    seen.add(key)
                with os.scandir(folder_real) as it:
                    listed = sorted(it, key=lambda item: item.name)
            except OSError as exc:
                yield folder, [Entry(folder, None, "dir", depth, f"cannot be listed ({exc.strerror or exc})")]
                continue
            entries: list[Entry] = []
            for item in listed:
                budget -= 1
                if budget < 0:
                    reason = f"has more than {self.limits.max_entries} entries; the rest not read"
                    yield folder, [*entries, Entry(given, None, "dir", 0, reason)]
                    return
                entry = self._entry(folder + sep + item.name, item, folder_real + sep + item.name, depth + 1)
                if entry.kind == "dir" and skipped(item.name):
                    continue
                entries.append(entry)
            yield folder, entries
            if depth < levels:  # what the caller left in the list
                below = [e for e in entries if e.kind == "dir" and e.real_text is not None and not e.refused]
                stack.extend((e.text, e.real_text, depth + 1) for e in reversed(below))  # type: ignore[misc]

    def _entry(self, path: str, item: os.DirEntry[str], real: str, depth: int) -> Entry:
        name = item.name
        try:
            if not item.is_symlink():  # the common case: the type from the listing, no stat
                if item.is_file(follow_symlinks=False):
                    return Entry(path, real, "file", depth, name=name)
                if item.is_dir(follow_symlinks=False):
                    return Entry(path, real, "dir", depth, name=name)
                reason = _not_regular(item.stat(follow_symlinks=False).st_mode)
                return Entry(path, None, "other", depth, reason, name=name)
            real = os.path.realpath(path)
        except (OSError, ValueError) as exc:
            return Entry(path, None, "missing", depth, f"cannot be read ({exc})", name=name)
        try:
            mode = os.stat(real).st_mode
        except OSError:
            return Entry(path, None, "missing", depth, "a link to nothing (dangling)", name=name)
        kind = _mode_kind(mode)
        if not self.contains(real):
            return Entry(path, None, kind, depth, f"a link to {real}, outside {self.label}; not read", name=name)
        if kind == "other":
            return Entry(path, None, kind, depth, _not_regular(mode), name=name)
        return Entry(path, real, kind, depth, name=name)


def _read_upto(fh: BinaryIO, limit: int) -> bytes:
    """At most ``limit`` bytes of ``fh``, read in chunks that grow with the file (one
    ``read(limit)`` would allocate ``limit`` bytes for a file of a few hundred)."""
    chunks: list[bytes] = []
    total, want = 0, 16384
    while total < limit:
        chunk = fh.read(min(want, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        want = min(want * 4, 1 << 22)
    return b"".join(chunks)  # one chunk: that chunk itself, not a copy


def _mode_kind(mode: int) -> Literal["file", "dir", "other"]:
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def _not_regular(mode: int) -> str:
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind = "a device"
    elif stat.S_ISFIFO(mode):
        kind = "a pipe"
    elif stat.S_ISSOCK(mode):
        kind = "a socket"
    elif stat.S_ISDIR(mode):
        kind = "a folder"
    else:
        kind = "not a file"
    return f"not a regular file ({kind}); not read"


def read_user_file(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_LIMITS.max_bytes) -> bytes:
    """A file the user's own config names, read as a contained file of its own folder:
    wherever the user's links lead, it must be a regular file within ``max_bytes``."""
    real = os.path.realpath(os.path.abspath(os.fspath(path)))
    return Root(os.path.dirname(real), label="its folder").read_bytes(os.path.basename(real), max_bytes=max_bytes)


# -- [files] readable_roots: the user's own say on where links may lead ---------------------


@attrs.frozen
class FilesConfig:
    """The ``[files]`` section: ``readable_roots`` are folders outside a root (the workspace,
    a skills or agents folder, a bundle) that links inside it may reach: a monorepo's shared
    ``AGENTS.md``, skills kept in a dotfiles checkout. Only the user's own files may set it."""

    readable_roots: list[str] = attrs.field(factory=list)


def merge_files(layers: Any) -> tuple[FilesConfig, list[Any], list[Any]]:
    """The user's layers, key by key; a workspace's own ``[files]`` never applies
    (a repository cannot widen what it may read)."""
    from ._config import NotApplied
    from ._convert import structure
    from .errors import ConfigError

    roots: list[str] = []
    not_applied: list[NotApplied] = []
    errors: list[ConfigError] = []
    for layer in layers:
        if layer.scope != "user":
            for key in layer.table:
                reason = "only your own kairox.toml may name folders outside the workspace"
                not_applied.append(NotApplied(section="files", key=key, file=layer.file, reason=reason))
            continue
        try:
            value: FilesConfig = structure(dict(layer.table), FilesConfig, path="files", file=layer.file)
        except ConfigError as exc:
            errors.extend(exc.errors)
            continue
        base = os.path.dirname(layer.file) if os.path.isabs(layer.file) else os.getcwd()
        for raw in value.readable_roots:
            path = os.path.join(base, os.path.expanduser(raw))
            if path not in roots:
                roots.append(path)
    return FilesConfig(readable_roots=roots), not_applied, errors
