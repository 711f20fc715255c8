"""Where plugins live: :class:`Location`, the priorities of the built-in locations, the
settings files, and whether a workspace has anything to discover at all.

Light on purpose (no config model, settings, manifest model or discovery): a manifest
format lists its extra locations (Philont's ``.philont/plugins``) with :class:`Location`,
and the loader asks :func:`nothing_to_discover` before it imports :mod:`.discovery`, so
a workspace without plugins opens without them. :mod:`.discovery` re-exports the
location names, :mod:`.settings` the settings file names.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kairox.ext import user_home
from kairox.files import missing

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = [
    "PRIORITY_CONFIGURED",
    "PRIORITY_OVERRIDE",
    "PRIORITY_USER",
    "PRIORITY_WORKSPACE",
    "SETTINGS_NAME",
    "Location",
    "format_locations",
    "nothing_to_discover",
    "settings_file",
]

#: the ``[plugins]`` section (:data:`kairox_manifests.config.SECTION`)
_SECTION = "plugins"
SETTINGS_NAME = "plugin-settings.json"

PRIORITY_OVERRIDE = 200
PRIORITY_CONFIGURED = 150
PRIORITY_WORKSPACE = 100
PRIORITY_USER = 50


class Location(NamedTuple):
    """Somewhere plugins live. ``mode``: ``children`` (each subdirectory is a plugin),
    ``plugin`` (the directory is one), ``auto`` (a plugin if a format recognises it, else children).

    A named tuple, not an attrs class: defining one costs a fifth as much, and this module
    is imported at every open (the ``plugins`` provider asks :func:`nothing_to_discover`)."""

    path: Path
    scope: str  # "user" | "workspace"
    priority: int
    origin: str
    mode: str = "children"


def settings_file(scope: str, *, workspace: Path, env: Mapping[str, str] | None = None) -> Path:
    if scope == "user":
        return user_home(env) / SETTINGS_NAME
    if scope == "workspace":
        return workspace / ".kairox" / SETTINGS_NAME
    raise ValueError(f"unknown scope {scope!r}; expected user or workspace")


def format_locations(fmt: Any, workspace: Path, env: Mapping[str, str], config: Any = None) -> list[Location]:
    """The extra locations a manifest format lists (its ``locations``, given ``config`` when
    it takes one; none without it). Raises what the format raises."""
    extra = getattr(fmt, "locations", None)
    if extra is None:
        return []
    import inspect

    wants_config = "config" in inspect.signature(extra).parameters
    return list(extra(workspace, env, config=config) if wants_config else extra(workspace, env))


def nothing_to_discover(runtime: Runtime) -> bool:
    """Whether discovery would find no plugin and say nothing: no file sets ``[plugins]``,
    no settings file exists, and no location (the user's and the workspace's plugin
    directories, each format's own) is a directory. Reads no file."""
    config = runtime.config
    if any(_SECTION in data for _file, data in config.documents):
        return False
    env = dict(runtime.env)
    if runtime.home is not None:
        env["KAIROX_HOME"] = str(runtime.home)
    if not all(missing(settings_file(scope, workspace=runtime.workspace, env=env)) for scope in ("user", "workspace")):
        return False
    home = runtime.home or user_home(runtime.env)
    paths: list[Any] = [home / "plugins", runtime.workspace / ".kairox" / "plugins"]
    for fmt in runtime.manifest_formats:
        try:
            paths.extend(loc.path for loc in format_locations(fmt, runtime.workspace, runtime.env, runtime.config))
        except Exception:  # discovery reports it
            return False
    return all(isinstance(path, Path) and not path.is_dir() for path in paths)
