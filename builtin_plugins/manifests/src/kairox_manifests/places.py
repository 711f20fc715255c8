"""Where a plugin's own processes find things: its ``bin/`` and its data folder.

- ``bin/`` (Claude Code's): put first on the ``PATH`` of the plugin's own MCP and LSP
  servers and hook commands, so they run its tools by name. Never on anyone else's
  ``PATH``: not the runtime's environment, not ``shell.exec``, not another plugin's
  processes (a plugin's ``bin/git`` shadows ``git`` for that plugin alone).
- ``${CLAUDE_PLUGIN_DATA}`` (also ``${KAIROX_PLUGIN_DATA}``, ``${PLUGIN_DATA}``): a folder
  of the plugin's own under ``$KAIROX_HOME/plugin-data/``, kept across updates, created
  (mode 0700) the first time something uses it: a server entry that names it, a hook that
  runs (which gets it in its environment). A user plugin's folder is named after it; a
  workspace plugin's also after the workspace, so a workspace's plugin never reaches the
  data of the user's plugin of the same name.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

__all__ = ["DATA_VARIABLES", "PluginPlaces", "data_folder"]

#: variables that expand to the plugin's data folder
DATA_VARIABLES = ("KAIROX_PLUGIN_DATA", "CLAUDE_PLUGIN_DATA", "PLUGIN_DATA")
_DATA_VAR = re.compile(r"\$\{(" + "|".join(DATA_VARIABLES) + r")\}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def data_folder(home: Path, plugin: str, *, scope: str, workspace: Path) -> Path:
    """The data folder of ``plugin`` (not created): ``<home>/plugin-data/<name>`` for a user
    plugin, ``<name>@<workspace hash>`` for a workspace's. Characters other than letters,
    digits, ``_`` and ``-`` become ``-`` (as Claude Code names its folders), so no name
    reaches outside ``plugin-data``."""
    name = _UNSAFE.sub("-", plugin) or "-"
    if scope != "user":
        digest = hashlib.sha256(os.path.realpath(workspace).encode("utf-8", "surrogateescape")).hexdigest()
        name = f"{name}@{digest[:12]}"
    return home / "plugin-data" / name


@attrs.define
class PluginPlaces:
    """The ``bin/`` folder and data folder of one loaded plugin."""

    bin_dir: Path | None = None
    data_dir: Path | None = None

    def data(self) -> Path | None:
        """The data folder, created (0700) when missing; ``None`` when there is none."""
        if self.data_dir is None:
            return None
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self.data_dir

    def expand(self, value: Any) -> Any:
        """``value`` with the data variables expanded in every string (creating the folder
        when one is)."""
        if isinstance(value, str):
            if "${" not in value or not _DATA_VAR.search(value):
                return value
            folder = self.data()
            if folder is None:
                return value
            return _DATA_VAR.sub(lambda _m: str(folder), value)
        if isinstance(value, list):
            return [self.expand(v) for v in value]
        if isinstance(value, dict):
            return {k: self.expand(v) for k, v in value.items()}
        return value

    def path(self, current: str | None) -> str | None:
        """``PATH`` for the plugin's own process: ``bin/`` first, then ``current``."""
        if self.bin_dir is None:
            return current
        return os.pathsep.join([str(self.bin_dir), *([current] if current else [])])

    def server_entry(self, entry: Any, runtime_env: Mapping[str, str]) -> Any:
        """A server entry (``.mcp.json`` / ``lspServers``) as the plugin's process gets it:
        data variables expanded and, for a command it starts, ``bin/`` first on its ``PATH``
        (before the ``PATH`` the entry sets, else the runtime's)."""
        entry = self.expand(entry)
        if self.bin_dir is None or not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
            return entry
        env = dict(entry.get("env") or {}) if isinstance(entry.get("env"), dict) else {}
        declared = env.get("PATH")
        base = declared if isinstance(declared, str) and declared else runtime_env.get("PATH", os.defpath)
        env["PATH"] = self.path(base)
        return {**entry, "env": env}
