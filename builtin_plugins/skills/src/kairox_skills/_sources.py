"""Skill sources that read directories: kairox skill files and Agent Skills folders.

A directory is walked to depth :data:`MAX_DEPTH` (``.git`` and ``node_modules``
skipped), following symbolic links but entering each directory once, by
``(st_dev, st_ino)``: a link to ``.`` or to an ancestor is not a loop, and a
folder linked twice is read once. A folder holding ``SKILL.md`` is one Agent Skills skill (its other
files are its resources, never skills of their own); any other ``*.md`` file
is a kairox skill file. Listing reads only the frontmatter, through the
:class:`~kairox_skills._cache.ScanCache`; the body is read when the skill is used.
"""

from __future__ import annotations

import gc
import logging
import operator
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import attrs

from kairox import SkillArgument, SkillDef, SkillError, SkillScope, SkillWarning

from ._cache import Parsed, ScanCache, get_cache

if TYPE_CHECKING:
    from kairox import Runtime

    from ._format import TransientSkillError, parse_frontmatter, read_frontmatter

__all__ = ["CLAUDE_ARGUMENTS", "IGNORED_FILES", "MAX_DEPTH", "SKIP_DIRS", "DirectorySkillSource", "bundle_skill_source"]

logger = logging.getLogger(__name__)

MAX_DEPTH = 6
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__"})
#: markdown files in a skills directory that are documentation, not skills
IGNORED_FILES = frozenset({"readme.md", "changelog.md", "license.md", "contributing.md", "agents.md", "claude.md"})

Item = Union[SkillDef, SkillError, SkillWarning]
#: what a Claude command or skill is given: the text after ``/name`` (``$ARGUMENTS`` in its body)
CLAUDE_ARGUMENTS = SkillArgument("ARGUMENTS", description="the text after the command ($ARGUMENTS)")
_NAME = operator.attrgetter("name")

#: bound from ._format the first time a file is read (:func:`_load_format`)
_FORMAT_NAMES = ("TransientSkillError", "parse_frontmatter", "read_frontmatter")


def _load_format() -> None:
    """Bind the frontmatter reader and parser of :mod:`._format` (and with it the skill
    structure) here, the first time a skill file is read: a source whose folders hold no
    file never imports them. A name already bound (a test's stand-in) stays."""
    g = globals()
    if all(name in g for name in _FORMAT_NAMES):
        return
    from . import _format

    for name in _FORMAT_NAMES:
        g.setdefault(name, getattr(_format, name))


def __getattr__(name: str) -> object:
    if name in _FORMAT_NAMES:
        _load_format()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _read(path: str) -> tuple[str, list[SkillWarning]] | SkillError:
    try:
        block = read_frontmatter(path)
    except SkillError as exc:
        return exc
    except OSError as exc:
        return SkillError(f"cannot read: {exc.strerror or exc}", file=path)
    if block is None:
        return SkillError("no frontmatter: a skill file starts with a --- line", file=path, line=1)
    return block


def _parse(block: tuple[str, list[SkillWarning]] | SkillError, path: str, folder: str | None) -> Parsed:
    if isinstance(block, SkillError):
        return block
    text, warnings = block
    fallback = folder if folder is not None else os.path.basename(path)[:-3]
    try:
        fm, more = parse_frontmatter(text, file=path, folder=folder, fallback_name=fallback)
    except SkillError as exc:
        return exc
    except Exception as exc:  # a parser bug or a hostile value: this file's error, never the source's
        return SkillError(f"cannot read the frontmatter: {type(exc).__name__}: {exc}", file=path)
    return fm, tuple(warnings + more) if warnings or more else ()


def parse_file(path: str, *, folder: str | None) -> Parsed:
    """Read and parse one skill file's frontmatter (never raises for bad content)."""
    _load_format()
    return _parse(_read(path), path, folder)


class DirectorySkillSource:
    """Every skill under ``dirs``, all of one ``scope``.

    ``namespace`` makes names ``<namespace>:<name>`` (plugin bundles);
    ``origin`` names the tool whose folder this is (``"claude"``, ...; see
    :mod:`kairox_skills._imports`): a Claude skill with no declared arguments
    takes Claude's ``$ARGUMENTS``. A missing directory is not an error (nobody
    has to create ``~/.kairox/skills``).
    """

    def __init__(
        self,
        name: str,
        scope: SkillScope | str,
        dirs: Sequence[str | os.PathLike[str]],
        *,
        namespace: str | None = None,
        cache: ScanCache | None = None,
        max_depth: int = MAX_DEPTH,
        origin: str | None = None,
    ) -> None:
        self.name = name
        self.scope = SkillScope(scope)
        self.dirs = [Path(d) for d in dirs]
        self.namespace = namespace
        self.origin = origin
        self.cache = cache if cache is not None else get_cache(None)
        self.max_depth = max_depth

    def __repr__(self) -> str:
        return f"DirectorySkillSource({self.name!r}, {self.scope.value}, {[str(d) for d in self.dirs]})"

    def scan(self, runtime: Runtime | None = None) -> Iterator[Item]:
        """A :class:`SkillDef` per skill, a :class:`SkillError` per skipped file, and a
        :class:`SkillWarning` per directory that could not be read."""
        items: list[Item] = []
        # A scan allocates many small objects that all live on: cyclic garbage
        # collection passes over them find nothing and cost a fifth of a cold scan.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            for root in self.dirs:
                items.extend(self._scan_root(root))
        finally:
            if gc_was_enabled:
                gc.enable()
            self.cache.save()
        return iter(items)

    def _scan_root(self, root: Path) -> Iterator[Item]:
        root_str = os.path.abspath(root)
        if not os.path.isdir(root_str):
            if os.path.exists(root_str):
                yield SkillWarning("not a directory; no skills read from it", file=root_str)
            return
        cache = self.cache
        # In stages (walk, cache lookups, reads, parses): each loop stays hot in
        # the CPU caches, which makes a cold scan markedly faster than one pass.
        found = list(_walk(root_str, self.max_depth))
        results = cache.get_many([(p, st.st_size, st.st_mtime_ns) if st else (p, -1, -1) for p, _f, st in found])
        misses = [i for i, parsed in enumerate(results) if parsed is None and found[i][2] is not None]
        if misses:
            _load_format()
        blocks = [_read(found[i][0]) for i in misses]
        for i, block in zip(misses, blocks, strict=True):
            path, folder, stat = found[i]
            fresh = results[i] = _parse(block, path, folder)
            if stat is not None and not isinstance(fresh, TransientSkillError):  # stat: always, for a miss
                cache.put(path, stat.st_size, stat.st_mtime_ns, fresh)
        for (path, _folder, stat), result in zip(found, results, strict=True):
            if stat is None:
                yield SkillWarning("cannot list this directory", file=path)
            elif isinstance(result, SkillError):
                yield result
            elif result is not None:
                yield self._skill(path, *result)
        cache.prune(root_str, {path for path, _folder, stat in found if stat is not None})

    def _skill(self, path: str, fm: Any, warnings: tuple[SkillWarning, ...]) -> SkillDef:
        if fm.scope is not None and fm.scope is not self.scope and self.namespace is None:
            warnings = (
                *warnings,
                SkillWarning(
                    f"declares scope {fm.scope.value} but was found in a {self.scope.value} directory; "
                    f"its scope is {self.scope.value}",
                    file=path,
                    field="scope",
                ),
            )
        if self.origin == "claude" and not fm.arguments:
            fm = attrs.evolve(fm, arguments=(CLAUDE_ARGUMENTS,))
        return SkillDef(
            fm, self.scope, source=self.name, path=path, namespace=self.namespace, warnings=warnings, origin=self.origin
        )


def _walk(root: str, max_depth: int) -> Iterator[tuple[str, str | None, os.stat_result | None]]:
    """``(path, folder name for SKILL.md else None, stat)`` for every skill file, in a stable order.

    Each directory is entered once, the first time the (depth-first, sorted)
    walk reaches it, whatever links lead to it again.
    """
    stack: list[tuple[str, int]] = [(root, 0)]
    seen: set[tuple[int, int]] = set()
    while stack:
        directory, depth = stack.pop()
        try:
            st = os.stat(directory)
            if st.st_ino:  # 0: a file system without inode numbers; nothing to compare
                key = (st.st_dev, st.st_ino)
                if key in seen:
                    continue
                seen.add(key)
            with os.scandir(directory) as it:
                entries = sorted(it, key=_NAME)
        except OSError:
            yield directory, None, None
            continue
        files: list[os.DirEntry[str]] = []
        subdirs: list[str] = []
        skill_md: os.DirEntry[str] | None = None
        for entry in entries:
            name = entry.name
            try:
                if entry.is_dir():
                    if name not in SKIP_DIRS:
                        subdirs.append(entry.path)
                elif not entry.is_file():
                    continue  # a FIFO or socket would block or fail on open
                elif name == "SKILL.md":
                    skill_md = entry
                elif name.endswith(".md") and name.lower() not in IGNORED_FILES:
                    files.append(entry)
            except OSError:
                continue
        if skill_md is not None:
            folder = os.path.basename(directory.rstrip(os.sep)) or directory
            yield from _with_stat([skill_md], folder)
            continue
        yield from _with_stat(files, None)
        if depth < max_depth:
            stack.extend((d, depth + 1) for d in reversed(subdirs))


def _with_stat(
    entries: list[os.DirEntry[str]], folder: str | None
) -> Iterator[tuple[str, str | None, os.stat_result | None]]:
    for entry in entries:
        try:
            stat = entry.stat()
        except OSError:
            continue  # vanished or a dangling symlink
        yield entry.path, folder, stat


def bundle_skill_source(
    plugin: str, directory: str | os.PathLike[str], *, cache: ScanCache | None = None
) -> DirectorySkillSource:
    """The skills a plugin bundles (``<plugin>:<name>``), for a plugin loader:

    ``await runtime.skills.add_source(bundle_skill_source("foo", root / "skills"), runtime)``
    """
    return DirectorySkillSource(f"plugin:{plugin}", SkillScope.PLUGIN, [directory], namespace=plugin, cache=cache)
