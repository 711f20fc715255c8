"""Where Philont plugins live, and the format as kairox-philont registers it.

Light on purpose: the hook registers :func:`philont_format`, a
:class:`~kairox_manifests.lazyformat.LazyFormat` that lists these locations
without importing :mod:`kairox_philont.manifest` (the manifest document, the
manifest model), which loads the first time a plugin directory is probed.
Listing them imports :mod:`kairox_manifests.location` alone, and reads
``[philont]`` (:mod:`.config`) only when a file sets it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kairox_manifests.lazyformat import LazyFormat

if TYPE_CHECKING:
    from kairox_manifests.location import Location

__all__ = ["philont_format", "philont_format_locations", "philont_locations"]

#: the ``[philont]`` section (:data:`kairox_philont.config.SECTION`); its ``plugins`` is true by default
_SECTION = "philont"


def _home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME") or env.get("USERPROFILE")
    return Path(home) if home else Path.home()


def philont_locations(workspace: Path, env: Mapping[str, str]) -> list[Location]:
    from kairox_manifests.location import PRIORITY_USER, PRIORITY_WORKSPACE, Location

    return [
        Location(workspace / ".philont" / "plugins", "workspace", PRIORITY_WORKSPACE, "Philont workspace plugins"),
        Location(_home(env) / ".philont" / "plugins", "user", PRIORITY_USER, "Philont user plugins"),
    ]


def philont_format_locations(workspace: Path, env: Mapping[str, str], config: Any = None) -> list[Location]:
    """The Philont plugin directories, unless ``[philont] plugins = false``."""
    values = getattr(config, "values", None)
    # without a config, or a [philont] no file sets (or a broken one), the defaults apply: plugins = true
    if config is not None and (values is None or _SECTION in values):
        from .config import philont_config

        if not philont_config(config).plugins:
            return []
    return philont_locations(workspace, env)


def philont_format() -> LazyFormat:
    """The ``philont`` manifest format (priority 40), :class:`~kairox_philont.manifest.PhilontFormat` on first use."""
    return LazyFormat("philont", 40, "kairox_philont.manifest:PhilontFormat", locations=philont_format_locations)
