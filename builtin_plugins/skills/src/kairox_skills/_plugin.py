"""What the hooks do: register the user and workspace sources and apply the settings files.

Light on purpose: the sources are registered as :class:`FolderSource` stand-ins that
import their reader (:class:`~kairox_skills.DirectorySkillSource`, or
:class:`~kairox_skills.CommandSkillSource` for Claude commands), the scan cache, the
``[skills]`` schema and the settings reader only when one of their folders (or a
settings file, or a ``[skills]`` table) is there. A workspace with none of them
registers the same source names and opens without importing any of it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kairox import SkillScope, user_home

from ._folders import imported_rows

if TYPE_CHECKING:
    from kairox import Registrar, Runtime
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
    it (``isinstance`` included), the reader is built (:meth:`resolve`) and answers."""

    def __init__(
        self,
        name: str,
        scope: SkillScope,
        dirs: Sequence[Path],
        *,
        commands: bool = False,
        origin: str | None = None,
        cache_file: Path | None = None,
    ) -> None:
        self.name = name
        self.scope = scope
        self.dirs = list(dirs)
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

                self._source = CommandSkillSource(self.name, self.scope, self.dirs, origin=self._origin)
            else:
                from ._cache import get_cache
                from ._sources import DirectorySkillSource

                self._source = DirectorySkillSource(
                    self.name, self.scope, self.dirs, cache=get_cache(self._cache_file), origin=self._origin
                )
        return self._source

    def _nothing_there(self) -> bool:
        return not any(os.path.lexists(d) for d in self.dirs)

    def quick_scan(self, runtime: Runtime | None = None) -> list[Any] | None:
        """What :meth:`scan` yields when that is known without reading (no folder is
        there: nothing), else ``None`` (the kernel then scans in a worker thread)."""
        return [] if self._nothing_there() else None

    def scan(self, runtime: Runtime | None = None) -> Iterator[Any]:
        if self._nothing_there():
            return iter(())
        scanned: Iterator[Any] = self.resolve().scan(runtime)
        return scanned

    def __getattr__(self, attribute: str) -> Any:  # what the stand-in does not have itself
        if attribute.startswith("__") or attribute == "_source":
            raise AttributeError(attribute)
        return getattr(self.resolve(), attribute)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(source, DirectorySkillSource) holds
        return type(self.resolve())

    def __repr__(self) -> str:
        return repr(self.resolve()) if self._source is not None else f"FolderSource({self.name!r}, {self.dirs})"


def register_sources(registrar: Registrar[SkillSource], runtime: Runtime) -> None:
    user_extra, workspace_extra, cache, kinds = _settings_of(runtime)
    home = home_of(runtime)
    cache_file = home / "cache" / "skills.json" if cache else None
    user_dirs = [home / "skills", *(_resolve(home, d) for d in user_extra)]
    workspace_dirs = [
        runtime.workspace / ".kairox" / "skills",
        *(_resolve(runtime.workspace, d) for d in workspace_extra),
    ]
    registrar.add(FolderSource("user", SkillScope.USER, user_dirs, cache_file=cache_file))
    registrar.add(FolderSource("workspace", SkillScope.WORKSPACE, workspace_dirs, cache_file=cache_file))
    folders = imported_rows(kinds, workspace=runtime.workspace, env=runtime.env, exclude=[*user_dirs, *workspace_dirs])
    for kind, scope, source, path, commands in folders:  # after kairox's own: in one scope the first found wins
        registrar.add(FolderSource(source, scope, [path], commands=commands, origin=kind, cache_file=cache_file))
    apply_settings(runtime)


def apply_settings(runtime: Runtime) -> None:
    """Load the user and workspace settings files into ``runtime.skills`` (a file that is
    not there is no settings, and imports no reader)."""
    home = home_of(runtime)
    for scope, path in (
        (SkillScope.USER, home / SETTINGS_FILE),
        (SkillScope.WORKSPACE, runtime.workspace / ".kairox" / SETTINGS_FILE),
    ):
        if not os.path.lexists(path):
            runtime.skills.set_overrides(scope, {})
            continue
        from kairox import SkillError

        from ._settings import SettingsFile, skill_overrides

        try:
            data = SettingsFile(path).read()
        except SkillError as exc:
            runtime.skills.report(exc, source="settings")
            data = {}
        overrides, errors = skill_overrides(data, file=str(path))
        for error in errors:
            runtime.skills.report(error, source="settings")
        runtime.skills.set_overrides(scope, overrides)
