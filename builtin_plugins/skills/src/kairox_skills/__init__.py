"""Filesystem skill sources: kairox skill files and Agent Skills folders.

The public API (imported lazily, so loading the plugin stays cheap):
:class:`DirectorySkillSource`, :func:`plugin_skill_source` (for plugin
loaders), :func:`parse_skill` / :func:`dump_skill` (the file format),
:class:`SettingsFile`, :class:`ScanCache`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.lazy import lazy_exports

if TYPE_CHECKING:
    from ._cache import ScanCache, get_cache
    from ._config import SkillsConfig
    from ._format import dump_skill, parse_frontmatter, parse_skill
    from ._settings import SettingsFile, settings_path
    from ._sources import DirectorySkillSource, plugin_skill_source
    from ._structure import frontmatter_from_mapping, frontmatter_to_mapping

_EXPORTS = {
    "ScanCache": "_cache",
    "get_cache": "_cache",
    "SkillsConfig": "_config",
    "dump_skill": "_format",
    "frontmatter_from_mapping": "_structure",
    "frontmatter_to_mapping": "_structure",
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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
