"""Filesystem skill sources: kairox skill files and Agent Skills folders.

The public API (imported lazily, so loading the plugin stays cheap):
:class:`DirectorySkillSource`, :func:`plugin_skill_source` (for plugin
loaders), :func:`parse_skill` / :func:`dump_skill` (the file format),
:class:`SettingsFile`, :class:`ScanCache`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._cache import ScanCache, get_cache
    from ._config import SkillsConfig
    from ._format import dump_skill, frontmatter_from_mapping, frontmatter_to_mapping, parse_frontmatter, parse_skill
    from ._settings import SettingsFile, settings_path
    from ._sources import DirectorySkillSource, plugin_skill_source

_EXPORTS = {
    "ScanCache": "_cache",
    "get_cache": "_cache",
    "SkillsConfig": "_config",
    "dump_skill": "_format",
    "frontmatter_from_mapping": "_format",
    "frontmatter_to_mapping": "_format",
    "parse_frontmatter": "_format",
    "parse_skill": "_format",
    "SettingsFile": "_settings",
    "settings_path": "_settings",
    "DirectorySkillSource": "_sources",
    "plugin_skill_source": "_sources",
}

__all__ = [
    "DirectorySkillSource",
    "ScanCache",
    "SettingsFile",
    "SkillsConfig",
    "dump_skill",
    "frontmatter_from_mapping",
    "frontmatter_to_mapping",
    "get_cache",
    "parse_frontmatter",
    "parse_skill",
    "plugin_skill_source",
    "settings_path",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kairox_skills' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
