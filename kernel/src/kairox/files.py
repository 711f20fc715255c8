"""Reading what a workspace contains, and writing files so that readers never see half of one.

:class:`Root` is the contained reader: every file a workspace, bundle, skill source,
instruction setting, catalog or config names or contains is opened, and every such
folder walked, through one (see :mod:`kairox._contained`, and docs/trust.md).

:func:`resolve_path` and :func:`is_inside` are how every check of "is this path
inside that root" is made, by the policy engine and by the tools that write.

Settings, config edits, and the catalog's, skills' and entry points' caches all go
through :func:`atomic_write_bytes`: a temp file in the same directory,
flushed and fsynced, then ``os.replace`` over the target (atomic on POSIX and on
Windows). On failure the temp file is removed and the target is untouched.
:func:`locked` is the exclusive advisory lock a read-modify-write of a shared
settings file holds, on the file's :func:`lock_path`; :func:`update_text` is that
whole cycle (lock, read, change, write atomically) for a text file such as ``kairox.toml``.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ._contained import Entry, Limits, Refused, Root, read_user_file, relative_text
from ._text import glob_match
from .errors import ConfigError

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_DOCUMENT_DEPTH",
    "STALE_TEMP_AGE",
    "Entry",
    "Limits",
    "Refused",
    "Root",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_depth",
    "check_toml_keys",
    "glob_match",
    "is_inside",
    "loads_bounded",
    "loads_toml",
    "lock_path",
    "locked",
    "missing",
    "read_document",
    "read_user_file",
    "relative_text",
    "resolve_path",
    "update_text",
]


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

    _remove_stale_temp_files(path)
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


#: a temp file of ours this old belongs to a write that died (kill -9): the next write removes it
STALE_TEMP_AGE = 60.0


def _remove_stale_temp_files(path: Path) -> None:
    """Remove ``.<name>.*.tmp`` files left next to ``path`` by writes that were killed.

    A live write's temp file exists for milliseconds; one older than :data:`STALE_TEMP_AGE`
    seconds is a leftover. Best effort: a file another process removes first is fine."""
    import time

    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    prefix, cutoff = f".{path.name}.", time.time() - STALE_TEMP_AGE
    for entry in entries:
        if entry.name.startswith(prefix) and entry.name.endswith(".tmp"):
            try:
                if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)
            except OSError:
                continue


def atomic_write_text(path: Path, text: str, *, mode: int | None = None, fsync: bool = True) -> None:
    """:func:`atomic_write_bytes` of ``text`` encoded as UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode, fsync=fsync)


def lock_path(path: Path) -> Path:
    """The lock every read-modify-write of ``path`` holds (:func:`locked`): ``<name>.lock``
    beside it. A lock on ``path`` itself would not do: the atomic replace swaps its inode."""
    return path.with_name(path.name + ".lock")


def update_text(path: Path, change: Callable[[str | None], str | None], *, mode: int = 0o644) -> str | None:
    """Read-modify-write the UTF-8 text file ``path`` so that concurrent writers never lose an update.

    Under :func:`locked` on :func:`lock_path` (the directory is created first): ``change`` gets
    the file's text (``None`` when it does not exist), read as a contained file of its own folder
    (a link there that leads elsewhere is :class:`Refused`, never copied into the file written),
    and returns the new text, which is
    written with :func:`atomic_write_text` keeping the file's permission bits (``mode`` for a
    new file), or ``None`` to leave the file as it is. What ``change`` raises propagates and
    nothing is written; so does a read error (``OSError``, ``UnicodeDecodeError``). Returns what
    was written. Blocks while another process holds the lock: async callers run it in a thread.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(lock_path(path)):
        try:
            text: str | None = Root(path.parent, label=str(path.parent)).read_text(path.name)
        except FileNotFoundError:
            text = None
        new = change(text)
        if new is None:
            return None
        try:
            keep = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            keep = mode
        atomic_write_text(path, new, mode=keep)
        return new


def resolve_path(value: str, base: Path) -> Path:
    """Resolve a path argument the way the OS would: ``~``, relative to ``base``, ``..`` and symlinks.

    Tools that write must resolve their path arguments with this same function,
    so that the engine checks exactly the file the tool writes.
    """
    expanded = os.path.expanduser(value)
    path = Path(expanded)
    if not path.is_absolute():
        path = base / path
    return Path(os.path.realpath(path))


def is_inside(path: Path, root: Path) -> bool:
    """``path`` is ``root`` or below it, compared as given: resolve both first
    (:func:`resolve_path`) to compare the files the OS would reach."""
    try:
        return os.path.commonpath([str(path), str(root)]) == str(root)
    except ValueError:
        return False


def missing(path: Path) -> bool:
    """Whether ``path`` names no file: what :func:`read_document` reads as absent, not as an
    error. A path it cannot look at (a permission, a bad name) is not missing: reading it
    says why. One ``stat``, no read: a cheap check of whether there is anything to parse."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    return False


#: collections nested in a document from outside (a config file, a manifest, a catalog or
#: marketplace document, frontmatter); real ones stay under ten. What is parsed is walked
#: recursively afterwards (structured, copied, written as JSON) within Python's recursion
#: limit of about 1,000 frames, so depth is refused where the document is read.
MAX_DOCUMENT_DEPTH = 64
#: bytes of a document :func:`read_document` reads (config files and manifests are a few KB)
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024


def check_depth(value: Any, *, max_depth: int = MAX_DOCUMENT_DEPTH) -> None:
    """Raise ``ValueError("nested deeper than N levels")`` when the lists and dicts of
    ``value`` (a parsed document) nest deeper than ``max_depth``. Iterative, so any depth
    is measured without recursion; it stops at the first level too deep."""
    level: list[Any] = [value]
    for depth in range(max_depth + 1):
        deeper: list[Any] = []
        for item in level:
            if isinstance(item, dict):
                deeper.extend(v for v in item.values() if isinstance(v, (dict, list)))
            elif isinstance(item, list):
                deeper.extend(v for v in item if isinstance(v, (dict, list)))
        if not deeper:
            return
        if depth >= max_depth - 1:
            raise ValueError(f"nested deeper than {max_depth} levels")
        level = deeper


def loads_bounded(text: str | bytes, loads: Callable[[Any], Any], *, max_depth: int = MAX_DOCUMENT_DEPTH) -> Any:
    """``loads(text)`` (``json.loads``, ``tomllib.loads``) for a document from outside:
    ``ValueError("nested deeper than N levels")`` when it nests deeper than ``max_depth``,
    however deep (the parser's own ``RecursionError`` says the same), and the parser's
    ``ValueError`` when it is invalid. Never ``RecursionError``."""
    try:
        value = loads(text)
    except RecursionError:
        raise ValueError(f"nested deeper than {max_depth} levels") from None
    check_depth(value, max_depth=max_depth)
    return value


#: what in a TOML text can hold a dot that is not a key's (a string, a comment) or end a
#: key (``=``, a new line, a bracket, a brace, a comma), and the dots. Each alternative
#: starts with a character of its own and cannot fail once started (a string's closing
#: quote is optional), so a search reads each character once.
_TOML_TOKEN = re.compile(
    "|".join(
        [
            '"""',  # a multi-line basic string starts
            "'''",  # a multi-line literal string starts
            r'"(?:[^"\\\n]|\\.)*"?',  # a basic string
            r"'[^'\n]*'?",  # a literal string
            r"#[^\n]*",  # a comment
            r"[=\n\[\]{},]",  # the end of a key
            r"\.",
        ]
    )
)
#: in a multi-line basic string: an escape (skipped), or the closing quotes
_ML_BASIC_END = re.compile(r'\\[\s\S]|"""')


def _multiline_end(text: str, pos: int, quotes: str) -> int:
    """Where the multi-line string opened by ``quotes`` (ending at ``pos``) ends: after its
    closing quotes and the one or two quotes of content TOML allows right before them."""
    if quotes == "'''":
        end = text.find("'''", pos)
    else:
        end = next((m.start() for m in _ML_BASIC_END.finditer(text, pos) if m.group() == '"""'), -1)
    if end < 0:
        return len(text)
    run = text[end + 3 : end + 5]
    return end + 3 + len(run) - len(run.lstrip(quotes[0]))


def check_toml_keys(text: str, *, max_parts: int = MAX_DOCUMENT_DEPTH) -> None:
    """Raise ``ValueError("line N: a dotted key of more than M parts ...")`` when a key or
    table name of the TOML ``text`` has more than ``max_parts`` parts.

    Python's TOML reader takes time quadratic in a key's parts (``a.a.a....a = 1``: 0.8 s
    at 8,000 parts, minutes at 100,000), so a document from outside is checked first, in
    one linear pass: dots are counted between the characters that end a key, outside
    strings and comments (a value there holds at most one dot: ``1.5``, a time's
    fraction). A key of more than ``max_parts`` parts nests deeper than ``max_parts``
    levels, which :func:`check_depth` refuses after parsing anyway: no document it
    accepts is refused."""
    dots, pos = 0, 0
    while (m := _TOML_TOKEN.search(text, pos)) is not None:
        token, pos = m.group(), m.end()
        if token == ".":
            dots += 1
            if dots >= max_parts:
                line = text.count("\n", 0, m.start()) + 1
                raise ValueError(
                    f"line {line}: a dotted key of more than {max_parts} parts "
                    f"(it would nest deeper than {max_parts} levels)"
                )
        elif token in ('"""', "'''"):
            pos = _multiline_end(text, pos, token)
        elif token[0] not in "\"'#":  # a quoted part or a comment does not end a key (a."b".c)
            dots = 0


def loads_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads(text)`` for a document from outside, after :func:`check_toml_keys`."""
    from ._compat import tomllib  # with the first TOML document: a bare workspace has none

    check_toml_keys(text)
    data: dict[str, Any] = tomllib.loads(text)
    return data


def read_document(
    path: Path,
    errors: list[ConfigError],
    loads: Callable[[str], Any],
    kind: str,
    *,
    max_bytes: int = MAX_DOCUMENT_BYTES,
    max_depth: int = MAX_DOCUMENT_DEPTH,
    root: Root | None = None,
) -> Any | None:
    """A config document (``kind``: ``"TOML"``, ``"JSON"``) parsed by ``loads``, or ``None``:
    missing is ``None`` alone; refused, unreadable, not UTF-8, larger than ``max_bytes``,
    invalid or nested deeper than ``max_depth`` (:func:`loads_bounded`) adds a
    :class:`ConfigError` naming the file to ``errors`` (the caller goes on without it).

    The file is read inside ``root`` (a workspace's file inside the workspace); without
    one it is a file of the user's own, read where its links lead (:func:`read_user_file`).
    Either way only a regular file is read."""
    try:
        if root is not None:
            raw = root.read_bytes(path, max_bytes=max_bytes)
        else:
            raw = read_user_file(path, max_bytes=max_bytes)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        return None
    except Refused as exc:
        errors.append(ConfigError(exc.reason, file=str(path)))
        return None
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(ConfigError(f"cannot read: {exc}", file=str(path)))
        return None
    try:
        return loads_bounded(text, loads, max_depth=max_depth)
    except ValueError as exc:  # json.JSONDecodeError and TOMLDecodeError are ValueErrors
        errors.append(ConfigError(f"invalid {kind}: {exc}", file=str(path)))
        return None
