"""What the hooks do: register the user and workspace sources and apply the settings files."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from kairox import SkillError, SkillScope, user_home

from ._cache import get_cache
from ._config import SkillsConfig
from ._imports import CommandSkillSource, imported_folders
from ._settings import SettingsFile, settings_path, skill_overrides
from ._sources import DirectorySkillSource

if TYPE_CHECKING:
    from kairox import Registrar, Runtime
    from kairox.protocols import SkillSource

__all__ = ["apply_settings", "home_of", "register_sources", "skills_config"]

logger = logging.getLogger(__name__)


def home_of(runtime: Runtime) -> Path:
    return runtime.home or user_home(runtime.env)


def skills_config(runtime: Runtime) -> SkillsConfig:
    try:
        value = runtime.config.section("skills")
    except KeyError:
        return SkillsConfig()
    return value if isinstance(value, SkillsConfig) else SkillsConfig()


def _resolve(base: Path, entry: str) -> Path:
    path = Path(entry).expanduser()
    return path if path.is_absolute() else base / path


def register_sources(registrar: Registrar[SkillSource], runtime: Runtime) -> None:
    config = skills_config(runtime)
    home = home_of(runtime)
    cache = get_cache(home / "cache" / "skills.json" if config.cache else None)
    user_dirs = [home / "skills", *(_resolve(home, d) for d in config.user_dirs)]
    workspace_dirs = [
        runtime.workspace / ".kairox" / "skills",
        *(_resolve(runtime.workspace, d) for d in config.workspace_dirs),
    ]
    registrar.add(DirectorySkillSource("user", SkillScope.USER, user_dirs, cache=cache))
    registrar.add(DirectorySkillSource("workspace", SkillScope.WORKSPACE, workspace_dirs, cache=cache))
    folders = imported_folders(
        config.imports, workspace=runtime.workspace, env=runtime.env, exclude=[*user_dirs, *workspace_dirs]
    )
    for folder in folders:  # after kairox's own: in one scope the first found wins a name clash
        if folder.commands:
            registrar.add(CommandSkillSource(folder.source, folder.scope, [folder.path], origin=folder.kind))
        else:
            registrar.add(
                DirectorySkillSource(folder.source, folder.scope, [folder.path], cache=cache, origin=folder.kind)
            )
    apply_settings(runtime)


def apply_settings(runtime: Runtime) -> None:
    """Load the user and workspace settings files into ``runtime.skills``."""
    for scope in (SkillScope.USER, SkillScope.WORKSPACE):
        path = settings_path(scope, workspace=runtime.workspace, home=home_of(runtime), env=runtime.env)
        try:
            data = SettingsFile(path).read()
        except SkillError as exc:
            runtime.skills.report(exc, source="settings")
            data = {}
        overrides, errors = skill_overrides(data, file=str(path))
        for error in errors:
            runtime.skills.report(error, source="settings")
        runtime.skills.set_overrides(scope, overrides)
