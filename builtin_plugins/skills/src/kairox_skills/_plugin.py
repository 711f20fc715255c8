"""What the hooks do: register the user and workspace sources and apply the settings files.

Light on purpose: the sources are registered as :class:`FolderSource` stand-ins that
import their reader (:class:`~kairox_skills.DirectorySkillSource`, or
:class:`~kairox_skills.CommandSkillSource` for Claude commands), the scan cache, the
``[skills]`` schema and the settings reader only when one of their folders (or a
settings file, or a ``[skills]`` table) is there. A workspace with none of them
registers the same source names and opens without importing any of it.

Each folder is read contained (:class:`kairox.files.Root`): the workspace's folders
inside the workspace (``runtime.workspace_root``), the user's inside themselves
(``runtime.contained``). A folder a workspace's own ``kairox.toml`` adds (``[skills]
workspace_dirs`` or ``user_dirs``) must be inside the workspace, or in a folder the
user's ``[files] readable_roots`` names: one outside is refused with the file and field,
shown among the source's errors.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kairox.ext import SkillError, SkillScope, user_home
from kairox.files import Refused, Root

from ._folders import imported_rows, own_root

if TYPE_CHECKING:
    from kairox import Runtime
    from kairox.ext import Registrar
    from kairox.protocols import SkillSource

    from ._config import SkillsConfig

__all__ = ["FolderSource", "apply_settings", "home_of", "register_sources", "skills_config"]

#: what :class:`~kairox_skills._config.SkillsConfig` is when no file sets ``[skills]``
#: (tests/skills check that the two agree)
DEFAULT_IMPORTS = ("claude", "codex", "agents")
SETTINGS_FILE = "settings.json"


def home_of(runtime: Runtime) -> Path:
    return runtime.home or user_home(runtime.env)


def skills_config(runtime: Runtime) -> SkillsConfig:
    from ._config import SkillsConfig

    try:
        value = runtime.config.section("skills")
    except KeyError:
        return SkillsConfig()
    return value if isinstance(value, SkillsConfig) else SkillsConfig()


def _settings_of(runtime: Runtime) -> tuple[list[str], list[str], bool, Sequence[str]]:
    """``(user_dirs, workspace_dirs, cache, import kinds)`` of ``[skills]``: the defaults,
    without importing the schema, when no file (or distribution) set the section."""
    if "skills" not in runtime.config.values:
        return [], [], True, DEFAULT_IMPORTS
    config = skills_config(runtime)
    return list(config.user_dirs), list(config.workspace_dirs), config.cache, config.imports


def _resolve(base: Path, entry: str) -> Path:
    path = Path(entry).expanduser()
    return path if path.is_absolute() else base / path


class FolderSource:
    """A skill source that reads folders, registered before its reader is imported.

    It has its ``name``, ``scope`` and ``dirs`` at once; a scan of folders none of
    which exists finds nothing without importing anything (what the reader would find
    too: a missing folder is not an error); otherwise, and for anything else asked of
    it (``isinstance`` included), the reader is built (:meth:`resolve`) and answers.
    ``dirs`` and ``root`` are the reader's (see :class:`~kairox_skills.DirectorySkillSource`);
    ``problems`` are the folders refused before reading (yielded by every scan)."""

    def __init__(
        self,
        name: str,
        scope: SkillScope,
        dirs: Sequence[Path | Root],
        *,
        root: Root | None = None,
        problems: Sequence[SkillError] = (),
        commands: bool = False,
        origin: str | None = None,
        cache_file: Path | None = None,
    ) -> None:
        self.name = name
        self.scope = scope
        self._given = list(dirs)
        self.dirs = [d.path if isinstance(d, Root) else d for d in dirs]
        self._root = root
        self._problems = list(problems)
        self._commands = commands
        self._origin = origin
        self._cache_file = cache_file
        self._source: Any = None

    @property
    def resolved(self) -> bool:
        """Whether the reader has been imported and built."""
        return self._source is not None

    def resolve(self) -> Any:
        """The reader this stands for (imported and built once)."""
        if self._source is None:
            if self._commands:
                from ._imports import CommandSkillSource

                self._source = CommandSkillSource(
                    self.name, self.scope, self._given, origin=self._origin, root=self._root
                )
            else:
                from ._cache import get_cache
                from ._sources import DirectorySkillSource

                self._source = DirectorySkillSource(
                    self.name,
                    self.scope,
                    self._given,
                    cache=get_cache(self._cache_file),
                    origin=self._origin,
                    root=self._root,
                )
        return self._source

    def _nothing_there(self) -> bool:
        return not any(os.path.lexists(d) for d in self.dirs)

    def quick_scan(self, runtime: Runtime | None = None) -> list[Any] | None:
        """What :meth:`scan` yields when that is known without reading (no folder is
        there: nothing but the refused ones), else ``None`` (the kernel then scans in a
        worker thread)."""
        return list(self._problems) if self._nothing_there() else None

    def scan(self, runtime: Runtime | None = None) -> Iterator[Any]:
        if self._nothing_there():
            return iter(list(self._problems))
        return iter([*self._problems, *self.resolve().scan(runtime)])

    def __repr__(self) -> str:
        return repr(self.resolve()) if self._source is not None else f"FolderSource({self.name!r}, {self.dirs})"


def _configured(
    runtime: Runtime, key: str, entries: Sequence[str], base: Path
) -> tuple[list[Path], list[Root], list[SkillError]]:
    """The folders ``[skills] <key>`` adds, as ``(inside the workspace, roots of their
    own, refused)``: the user's own file may name any folder (its root is that folder); a
    workspace's file only folders inside the workspace (or the user's ``readable_roots``)."""
    file = runtime.config.source_of("skills", key)
    paths = [_resolve(base, entry) for entry in entries]
    if runtime.config.scope_of(file) != "workspace":
        return [], [own_root(p, runtime) for p in paths], []
    inside: list[Path] = []
    refused: list[SkillError] = []
    for i, (entry, path) in enumerate(zip(entries, paths, strict=True)):
        try:
            runtime.workspace_root.locate(path)
        except Refused as exc:
            refused.append(SkillError(f"{entry}: {exc.reason}", file=file, field=f"skills.{key}[{i}]"))
            continue
        inside.append(path)
    return inside, [], refused


def register_sources(registrar: Registrar[SkillSource], runtime: Runtime) -> None:
    user_extra, workspace_extra, cache, kinds = _settings_of(runtime)
    home = home_of(runtime)
    cache_file = home / "cache" / "skills.json" if cache else None
    workspace = runtime.workspace_root
    user_inside, user_roots, user_refused = _configured(runtime, "user_dirs", user_extra, home)
    ws_inside, ws_roots, ws_refused = _configured(runtime, "workspace_dirs", workspace_extra, runtime.workspace)
    # a folder of the workspace read as the user's is read inside itself: never outside the workspace
    user_dirs: list[Path | Root] = [
        own_root(home / "skills", runtime),
        *user_roots,
        *(own_root(p, runtime) for p in user_inside),
    ]
    workspace_dirs: list[Path | Root] = [runtime.workspace / ".kairox" / "skills", *ws_inside, *ws_roots]
    registrar.add(FolderSource("user", SkillScope.USER, user_dirs, problems=user_refused, cache_file=cache_file))
    registrar.add(
        FolderSource(
            "workspace",
            SkillScope.WORKSPACE,
            workspace_dirs,
            root=workspace,
            problems=ws_refused,
            cache_file=cache_file,
        )
    )
    read = [d.path if isinstance(d, Root) else d for d in (*user_dirs, *workspace_dirs)]
    folders = imported_rows(kinds, workspace=runtime.workspace, env=runtime.env, exclude=read)
    for kind, scope, source, path, commands in folders:  # after kairox's own: in one scope the first found wins
        if scope is SkillScope.WORKSPACE:
            dirs: list[Path | Root] = [path]
            root: Root | None = workspace
        else:
            dirs, root = [own_root(path, runtime)], None
        registrar.add(
            FolderSource(source, scope, dirs, root=root, commands=commands, origin=kind, cache_file=cache_file)
        )
    apply_settings(runtime)


def apply_settings(runtime: Runtime) -> None:
    """Load the user and workspace settings files into ``runtime.skills`` (a file that is
    not there is no settings, and imports no reader). The workspace's file is read inside
    the workspace; the user's as the user's own (a regular file, wherever its links lead)."""
    home = home_of(runtime)
    for scope, path, root in (
        (SkillScope.USER, home / SETTINGS_FILE, None),
        (SkillScope.WORKSPACE, runtime.workspace / ".kairox" / SETTINGS_FILE, runtime.workspace_root),
    ):
        if not os.path.lexists(path):
            runtime.skills.set_overrides(scope, {})
            continue
        from ._settings import SettingsFile, skill_overrides

        try:
            data = SettingsFile(path, root=root).read()
        except SkillError as exc:
            runtime.skills.report(exc, source="settings")
            data = {}
        overrides, errors = skill_overrides(data, file=str(path))
        for error in errors:
            runtime.skills.report(error, source="settings")
        runtime.skills.set_overrides(scope, overrides)
