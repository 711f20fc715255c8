"""Where Philont plugins live, and the format as kairox-philont registers it.

Light on purpose: the hook registers :func:`philont_format`, a
:class:`~kairox_manifests.lazyformat.LazyFormat` that lists these locations
without importing :mod:`kairox_philont.manifest` (the manifest document, the
manifest model), which loads the first time a plugin directory is probed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kairox_manifests.discovery import PRIORITY_USER, PRIORITY_WORKSPACE, Location
from kairox_manifests.lazyformat import LazyFormat

__all__ = ["philont_format", "philont_format_locations", "philont_locations"]


def _home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME") or env.get("USERPROFILE")
    return Path(home) if home else Path.home()


def philont_locations(workspace: Path, env: Mapping[str, str]) -> list[Location]:
    return [
        Location(workspace / ".philont" / "plugins", "workspace", PRIORITY_WORKSPACE, "Philont workspace plugins"),
        Location(_home(env) / ".philont" / "plugins", "user", PRIORITY_USER, "Philont user plugins"),
    ]


def philont_format_locations(workspace: Path, env: Mapping[str, str], config: Any = None) -> list[Location]:
    """The Philont plugin directories, unless ``[philont] plugins = false``."""
    from .config import philont_config

    if not philont_config(config).plugins:
        return []
    return philont_locations(workspace, env)


def philont_format() -> LazyFormat:
    """The ``philont`` manifest format (priority 40), :class:`~kairox_philont.manifest.PhilontFormat` on first use."""
    return LazyFormat("philont", 40, "kairox_philont.manifest:PhilontFormat", locations=philont_format_locations)
