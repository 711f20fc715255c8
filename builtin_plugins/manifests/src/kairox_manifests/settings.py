"""Plugin settings: enable/disable plugins and single contributions, trust, override paths.

Two files, merged (the workspace file wins key by key):
``$KAIROX_HOME/plugin-settings.json`` (user) and
``<workspace>/.kairox/plugin-settings.json`` (workspace)::

    {
      "version": 1,
      "plugins": {
        "code-review": {"enabled": false},
        "docs-helper": {"contributions": {"hook/pre_turn.inject-context": false}},
        "dev-plugin": {"path": "/home/me/src/dev-plugin"}
      },
      "paths": ["/home/me/more-plugins"],
      "trusted_roots": ["/home/me/src/project/.kairox/plugins/docs-helper"],
      "user_config": {
        "/home/me/.kairox/plugins/tracker": {"plugin": "tracker", "values": {"endpoint": "https://t.example"}}
      }
    }

``trusted_roots`` (workspace plugins the user agreed to load, by resolved
directory) is read from the user file only: a workspace cannot vouch for itself,
and trust follows the directory, not a name another plugin could take. The same holds
for ``user_config``, the values a plugin asked for (its ``userConfig``), by resolved
directory: a sensitive one is never here but in the system keychain
(:mod:`kairox_manifests.userconfig`).

Every change is a read-modify-write under an exclusive lock on a sibling
``.lock`` file, written to a temporary file and moved into place with
``os.replace`` so readers never see half a file.

The workspace's file is read inside the workspace (a link leading outside it, or a
device, is refused and named in :attr:`BundleSettings.errors`); the user's own is
read wherever its links lead, as a regular file within a size cap.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from kairox.errors import ConfigError
from kairox.files import Refused, Root, atomic_write_text, loads_bounded, locked, read_user_file

from .location import SETTINGS_NAME as SETTINGS_NAME
from .location import settings_file

__all__ = ["BundleSettings", "SettingsStore", "settings_file"]

logger = logging.getLogger(__name__)

VERSION = 1
#: a settings file larger than this is not read
MAX_BYTES = 4 * 1024 * 1024


@attrs.define
class BundleSettings:
    """The merged settings of one runtime."""

    plugins: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    #: the user settings' entries alone (what applies to the user's own bundles)
    user_plugins: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    paths: list[tuple[str, str]] = attrs.field(factory=list)  # (path, scope it came from)
    trusted_roots: set[str] = attrs.field(factory=set)
    #: ``userConfig`` values by resolved plugin directory (the user file's alone)
    user_config: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    override_scopes: dict[str, str] = attrs.field(factory=dict)
    problems: list[str] = attrs.field(factory=list)
    #: settings files that were not read (a link leading outside the workspace, a device)
    errors: list[ConfigError] = attrs.field(factory=list)

    def _entry(self, plugin: str) -> dict[str, Any]:
        return self.plugins.get(plugin, {})

    def entry(self, plugin: str, scope: str = "workspace") -> dict[str, Any]:
        """The settings of ``plugin`` that apply to a bundle of ``scope``: a workspace's
        settings file never changes one of the user's own bundles."""
        return self.user_plugins.get(plugin, {}) if scope == "user" else self._entry(plugin)

    def bundle_enabled(self, plugin: str, default: bool = True, scope: str = "workspace") -> bool:
        value = self.entry(plugin, scope).get("enabled")
        return value if isinstance(value, bool) else default

    def contribution_enabled(self, plugin: str, key: str, scope: str = "workspace") -> bool:
        contributions = self.entry(plugin, scope).get("contributions")
        if isinstance(contributions, dict):
            value = contributions.get(key)
            if isinstance(value, bool):
                return value
        return True

    def trusted(self, root: Path) -> bool:
        return str(Path(os.path.realpath(root))) in self.trusted_roots

    def user_config_values(self, root: Path) -> dict[str, Any]:
        """The stored ``userConfig`` values of the plugin in ``root`` (non-sensitive ones only)."""
        entry = self.user_config.get(str(Path(os.path.realpath(root))), {})
        values = entry.get("values") if isinstance(entry, dict) else None
        return dict(values) if isinstance(values, dict) else {}

    def override_path(self, plugin: str) -> str | None:
        value = self._entry(plugin).get("path")
        return value if isinstance(value, str) and value else None

    @classmethod
    def merged(cls, documents: list[tuple[str, dict[str, Any]]]) -> BundleSettings:
        """Merge ``(scope, document)`` pairs, lowest precedence first."""
        out = cls()
        for scope, doc in documents:
            plugins = doc.get("plugins", {})
            if isinstance(plugins, dict):
                for name, entry in plugins.items():
                    if not isinstance(entry, dict):
                        out.problems.append(f"{scope} settings: plugins.{name} is not a table; ignored")
                        continue
                    merged = dict(out.plugins.get(name, {}))
                    for key, value in entry.items():
                        if key == "contributions" and isinstance(value, dict):
                            merged["contributions"] = {**merged.get("contributions", {}), **value}
                        else:
                            merged[key] = value
                            if key == "path":
                                out.override_scopes[name] = scope
                    out.plugins[name] = merged
                    if scope == "user":
                        out.user_plugins[name] = merged
            paths = doc.get("paths", [])
            if isinstance(paths, list):
                out.paths.extend((p, scope) for p in paths if isinstance(p, str) and p)
            roots = doc.get("trusted_roots", [])
            if scope == "user" and isinstance(roots, list):
                out.trusted_roots.update(r for r in roots if isinstance(r, str))
            elif roots:
                out.problems.append(f"{scope} settings: trusted_roots is only read from the user settings")
            configs = doc.get("user_config", {})
            if scope == "user" and isinstance(configs, dict):
                out.user_config.update((k, v) for k, v in configs.items() if isinstance(v, dict))
            elif configs:
                out.problems.append(f"{scope} settings: user_config is only read from the user settings")
        return out


class SettingsStore:
    """Reads and atomically updates the settings files of one workspace.

    ``root`` is the workspace's contained root (:attr:`kairox.Runtime.workspace_root`;
    default: the workspace itself) the workspace's settings file is read inside."""

    def __init__(self, workspace: Path, env: Mapping[str, str] | None = None, *, root: Root | None = None) -> None:
        self.workspace = workspace
        self.env = env
        self.root = root if root is not None else Root(workspace, label="the workspace")
        #: why a settings file was not read (a refused link, invalid JSON), since the last :meth:`load`
        self.errors: list[ConfigError] = []

    def file(self, scope: str) -> Path:
        return settings_file(scope, workspace=self.workspace, env=self.env)

    def read(self, scope: str) -> dict[str, Any]:
        path = self.file(scope)
        try:
            raw = self.root.read_bytes(path, max_bytes=MAX_BYTES) if scope == "workspace" else read_user_file(path)
            data = loads_bounded(raw.decode("utf-8"), json.loads)
        except FileNotFoundError:
            return {}
        except Refused as exc:
            self.errors.append(ConfigError(f"{exc.reason}; the {scope} plugin settings are ignored", file=str(path)))
            return {}
        except (OSError, ValueError, RecursionError) as exc:
            logger.warning("cannot read plugin settings %s: %s", path, exc)
            return {}
        return data if isinstance(data, dict) else {}

    def load(self) -> BundleSettings:
        self.errors = []
        settings = BundleSettings.merged([("user", self.read("user")), ("workspace", self.read("workspace"))])
        settings.errors = list(self.errors)
        return settings

    def update(self, scope: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Apply ``change`` to the scope's document under the lock and write it atomically."""
        path = self.file(scope)
        path.parent.mkdir(parents=True, exist_ok=True)
        with locked(path.with_name(path.name + ".lock")):
            data = self.read(scope)
            data.setdefault("version", VERSION)
            data.setdefault("plugins", {})
            change(data)
            atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
        return data

    # -- common changes -----------------------------------------------------
    def set_enabled(self, scope: str, plugin: str, enabled: bool, contribution: str | None = None) -> None:
        def change(data: dict[str, Any]) -> None:
            entry = data["plugins"].setdefault(plugin, {})
            if contribution is None:
                entry["enabled"] = enabled
            else:
                entry.setdefault("contributions", {})[contribution] = enabled

        self.update(scope, change)

    def set_trusted(self, root: Path, trusted: bool = True) -> None:
        """Trust (or stop trusting) the plugin in ``root``; always recorded in the user file."""
        key = str(Path(os.path.realpath(root)))

        def change(data: dict[str, Any]) -> None:
            roots = [r for r in data.get("trusted_roots", []) if isinstance(r, str) and r != key]
            if trusted:
                roots.append(key)
            data["trusted_roots"] = sorted(roots)

        self.update("user", change)

    def set_user_config(self, root: Path, plugin: str, values: Mapping[str, Any], unset: Iterable[str] = ()) -> None:
        """Store (or, for ``unset``, remove) non-sensitive ``userConfig`` values of the plugin in
        ``root``; always in the user file. The caller keeps sensitive values out of here."""
        key = str(Path(os.path.realpath(root)))

        def change(data: dict[str, Any]) -> None:
            configs = data.get("user_config")
            if not isinstance(configs, dict):
                configs = data["user_config"] = {}
            entry = configs.get(key)
            if not isinstance(entry, dict) or not isinstance(entry.get("values"), dict):
                entry = configs[key] = {"values": {}}
            entry["plugin"] = plugin
            entry["values"].update(values)
            for name in unset:
                entry["values"].pop(name, None)
            if not entry["values"]:
                configs.pop(key)

        self.update("user", change)

    def forget(self, scope: str, plugin: str) -> None:
        def change(data: dict[str, Any]) -> None:
            data["plugins"].pop(plugin, None)

        self.update(scope, change)
