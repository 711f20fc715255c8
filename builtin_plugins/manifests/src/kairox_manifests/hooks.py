"""kairox-manifests hookimpls: manifest formats, the [plugins] section, the plugins provider, CLI."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox import hookimpl
from kairox.declare import adds, config_section
from kairox_cli import command

if TYPE_CHECKING:
    from kairox.ext import Registrar
    from kairox.protocols import ManifestFormat


@hookimpl
def kairox_register_manifest_formats(registrar: Registrar[ManifestFormat]) -> None:
    from .lazyformat import builtin_lazy_formats

    # the built-in formats in probing order, each imported when a plugin directory is probed
    for fmt in builtin_lazy_formats():
        registrar.add(fmt)


kairox_register_config_sections = config_section(
    "plugins",
    "kairox_manifests.config:BundlesConfig",
    # a workspace's values apply to the workspace's own bundles only (DiscoveryContext.values_for)
    needs_trust=False,
    description="plugin directories, disabled plugins/contributions, workspace trust, hook timeout",
)
# idle (its discover says so) while there is nothing to discover: no [plugins], no settings
# file, no plugin directory
kairox_register_tool_providers = adds("kairox_manifests.loader:BundleLoader", runtime=True)
kairox_register_commands = command(
    "plugin",
    "kairox_manifests.cli:plugin_group",
    "Bundles: Claude Code, Codex, Philont plugin dirs.",
)
