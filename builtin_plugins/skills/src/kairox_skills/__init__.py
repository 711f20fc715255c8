"""Filesystem skill sources: kairox skill files and Agent Skills folders.

The public API (imported lazily, so loading the plugin stays cheap):
:class:`DirectorySkillSource`, :func:`bundle_skill_source` (for plugin
loaders), :class:`CommandSkillSource` / :func:`parse_command` (Claude commands),
:func:`parse_skill` / :func:`dump_skill` (the file format),
:func:`render_claude` / :func:`template_for` (Claude's ``$ARGUMENTS`` syntax),
:class:`SettingsFile`, :class:`ScanCache`.
"""

from __future__ import annotations

from kairox.declare import stub_exports

__getattr__, __dir__ = stub_exports(__name__, __file__)
