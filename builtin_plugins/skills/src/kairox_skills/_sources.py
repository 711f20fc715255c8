"""Skill sources that read directories: kairox skill files and Agent Skills folders.

Every folder is read inside a contained root (:class:`kairox.files.Root`): the
workspace for the workspace's folders, the bundle for a bundle's, the folder itself
for one the user chose. The root's walk goes to depth :data:`MAX_DEPTH` (``.git``,
``node_modules`` and ``__pycache__`` skipped), follows links that stay inside the root
and enters each folder once: a link to ``.`` or to an ancestor is not a loop, and a
folder linked twice is read once. A link leading outside the root, a device, a file
over the size cap is a :class:`~kairox.ext.SkillError` where the skill would have been.

A folder holding ``SKILL.md`` is one Agent Skills skill (its other files and folders
are its resources, never skills of their own: the walk lists them, the scan passes
them by); any other ``*.md`` file is a kairox skill file. Listing reads only the frontmatter, through the
:class:`~kairox_skills._cache.ScanCache`; the body is read when the skill is used,
inside the same root (:attr:`kairox.ext.SkillDef.contained`).
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import attrs

from kairox.ext import SkillArgument, SkillDef, SkillError, SkillScope, SkillWarning
from kairox.files import Entry, Refused, Root

from ._cache import Parsed, ScanCache, get_cache
from ._folders import own_root
from ._template import ARGUMENTS, template_for

if TYPE_CHECKING:
    from kairox import Runtime

    from ._format import TransientSkillError, parse_frontmatter, read_frontmatter

__all__ = [
    "CLAUDE_ARGUMENTS",
    "IGNORED_FILES",
    "MAX_DEPTH",
    "SKIP_DIRS",
    "DirectorySkillSource",
    "bundle_skill_source",
    "is_skill_file",
    "skill_files",
]

logger = logging.getLogger(__name__)

MAX_DEPTH = 6
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__"})
#: markdown files in a skills directory that are documentation, not skills
IGNORED_FILES = frozenset({"readme.md", "changelog.md", "license.md", "contributing.md", "agents.md", "claude.md"})

Item = Union[SkillDef, SkillError, SkillWarning]
#: what a Claude command or skill is given: the text after ``/name`` (``$ARGUMENTS`` in its body)
CLAUDE_ARGUMENTS = SkillArgument(ARGUMENTS, description="the text after the command ($ARGUMENTS)")

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


def _read(root: Root, entry: Entry | str, path: str) -> tuple[str, list[SkillWarning]] | SkillError:
    try:
        with root.open(entry) as fh:
            block = read_frontmatter(fh, file=path)
    except SkillError as exc:
        return exc
    except Refused as exc:  # changed since the walk looked at it (a link now, a device)
        return TransientSkillError(exc.reason, file=path)
    except OSError as exc:
        return TransientSkillError(f"cannot read: {exc.strerror or exc}", file=path)
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


def parse_file(path: str, *, folder: str | None, root: Root | None = None) -> Parsed:
    """Read and parse one skill file's frontmatter, inside ``root`` (default: the
    file's own folder); never raises for bad content or a refused file."""
    _load_format()
    root = root if root is not None else Root(os.path.dirname(os.path.abspath(path)), label="its folder")
    return _parse(_read(root, path, path), path, folder)


class FolderSource:
    """What a source of skills in folders keeps: the folders, the root each is read inside, its
    ``namespace`` and ``origin`` (as :class:`DirectorySkillSource` says)."""

    def __init__(
        self,
        name: str,
        scope: SkillScope | str,
        dirs: Sequence[str | os.PathLike[str] | Root],
        *,
        namespace: str | None,
        origin: str | None,
        root: Root | None,
    ) -> None:
        self.name = name
        self.scope = SkillScope(scope)
        self.dirs = [d.path if isinstance(d, Root) else Path(d) for d in dirs]
        self._roots = [d if isinstance(d, Root) else root for d in dirs]
        self.root = root
        self.namespace = namespace
        self.origin = origin

    def folder_roots(self, runtime: Runtime | None) -> Iterator[tuple[Path, Root]]:
        """Each folder with the root it is read inside (without one given, a root of its own)."""
        for folder, root in zip(self.dirs, self._roots, strict=True):
            yield folder, root if root is not None else own_root(folder, runtime)


class DirectorySkillSource(FolderSource):
    """Every skill under ``dirs``, all of one ``scope``.

    ``namespace`` makes names ``<namespace>:<name>`` (plugin bundles);
    ``origin`` names the tool whose folder this is (``"claude"``, ...; see
    :mod:`kairox_skills._imports`): a Claude skill with no declared arguments
    takes Claude's ``$ARGUMENTS``. A missing directory is not an error (nobody
    has to create ``~/.kairox/skills``).

    ``root`` is the contained root the folders are read inside (the workspace, a
    bundle's folder); a folder given as a :class:`~kairox.files.Root` is read inside
    itself. Without either, each folder is a root of its own (one the user chose:
    ``runtime.contained(folder)``, which honours the user's ``[files] readable_roots``).
    """

    def __init__(
        self,
        name: str,
        scope: SkillScope | str,
        dirs: Sequence[str | os.PathLike[str] | Root],
        *,
        namespace: str | None = None,
        cache: ScanCache | None = None,
        max_depth: int = MAX_DEPTH,
        origin: str | None = None,
        root: Root | None = None,
    ) -> None:
        super().__init__(name, scope, dirs, namespace=namespace, origin=origin, root=root)
        self.cache = cache if cache is not None else get_cache(None)
        self.max_depth = max_depth

    def __repr__(self) -> str:
        return f"DirectorySkillSource({self.name!r}, {self.scope.value}, {[str(d) for d in self.dirs]})"

    def scan(self, runtime: Runtime | None = None) -> Iterator[Item]:
        """A :class:`SkillDef` per skill, a :class:`SkillError` per skipped or refused
        file, and a :class:`SkillWarning` per directory that is not one."""
        items: list[Item] = []
        # A scan allocates many small objects that all live on: cyclic garbage
        # collection passes over them find nothing and cost a fifth of a cold scan.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            for folder, root in self.folder_roots(runtime):
                items.extend(self._scan_root(folder, root))
        finally:
            if gc_was_enabled:
                gc.enable()
            self.cache.save()
        return iter(items)

    def _scan_root(self, folder: Path, root: Root) -> Iterator[Item]:
        top = os.path.abspath(folder)
        try:
            kind = root.kind(top)
        except Refused as exc:  # the folder itself leads outside its root
            yield SkillError(exc.reason, file=top)
            return
        if kind != "dir":
            if kind != "missing":
                yield SkillWarning("not a directory; no skills read from it", file=top)
            return
        cache = self.cache
        # In stages (walk, cache lookups, reads, parses): each loop stays hot in
        # the CPU caches, which makes a cold scan markedly faster than one pass.
        found = list(skill_files(root, top, self.max_depth))
        files = [f for f in found if not isinstance(f, SkillError)]
        results = cache.get_many([(p, st.st_size, st.st_mtime_ns) for p, _f, st, _e in files])
        misses = [i for i, parsed in enumerate(results) if parsed is None]
        if misses:
            _load_format()
        blocks = [_read(root, files[i][3], files[i][0]) for i in misses]
        for i, block in zip(misses, blocks, strict=True):
            path, skill_folder, stat, _entry = files[i]
            fresh = results[i] = _parse(block, path, skill_folder)
            if not isinstance(fresh, TransientSkillError):
                cache.put(path, stat.st_size, stat.st_mtime_ns, fresh)
        parsed = iter(results)
        for item in found:
            if isinstance(item, SkillError):
                yield item
                continue
            result = next(parsed)
            if isinstance(result, SkillError):
                yield result
            elif result is not None:
                yield self._skill(item[0], *result, root)
        cache.prune(top, {f[0] for f in files})

    def _skill(self, path: str, fm: Any, warnings: tuple[SkillWarning, ...], root: Root) -> SkillDef:
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
            fm,
            self.scope,
            source=self.name,
            path=path,
            namespace=self.namespace,
            warnings=warnings,
            origin=self.origin,
            contained=root,
            template=template_for(fm),
        )


#: what :func:`skill_files` yields for a skill file: ``(path, folder name of a SKILL.md
#: else None, stat, the walk's entry)``
Found = tuple[str, Union[str, None], os.stat_result, Entry]


def skill_files(root: Root, top: str, max_depth: int) -> Iterator[Found | SkillError]:
    """Every skill file under ``top`` (a folder inside ``root``), in the walk's order
    (depth first, sorted by name), and a :class:`SkillError` where a skill file or a
    folder is refused.

    A folder holding ``SKILL.md`` yields that file alone, and the walk does not enter
    it further: its other files and folders are the skill's resources.
    """
    cap = root.limits.max_bytes
    for folder, entries in root.folders(top, max_depth=max_depth, skip=SKIP_DIRS):
        skill_md = [e for e in entries if e.name == "SKILL.md" and e.kind != "dir"]
        if skill_md:
            entries[:] = []  # a skill folder's subfolders are its resources: not entered
        name = (os.path.basename(folder) or folder) if skill_md else None
        for entry in skill_md or entries:
            if entry.refused:
                if entry.kind == "dir" or name is not None or is_skill_file(entry.name):
                    yield SkillError(entry.refused, file=entry.text)
                continue
            if entry.kind != "file" or (name is None and not is_skill_file(entry.name)):
                continue
            try:
                stat = entry.stat()
            except OSError:
                continue  # vanished since it was listed
            if stat.st_size > cap:
                yield SkillError(f"larger than {cap:,} bytes; not read", file=entry.text)
                continue
            yield entry.text, name, stat, entry


def is_skill_file(name: str) -> bool:
    """Whether a file of this name in a skills folder is a kairox skill file (or a command)."""
    return name.endswith(".md") and name.lower() not in IGNORED_FILES


def bundle_skill_source(
    plugin: str, directory: str | os.PathLike[str], *, cache: ScanCache | None = None, root: Root | None = None
) -> DirectorySkillSource:
    """The skills a plugin bundles (``<plugin>:<name>``), for a plugin loader, read inside
    ``root`` (the bundle's folder: ``runtime.contained(bundle, label=...)``):

    ``await runtime.skills.add_source(bundle_skill_source("foo", bundle / "skills", root=root), runtime)``
    """
    return DirectorySkillSource(
        f"plugin:{plugin}", SkillScope.PLUGIN, [directory], namespace=plugin, cache=cache, root=root
    )
