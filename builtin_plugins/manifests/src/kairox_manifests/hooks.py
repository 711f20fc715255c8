"""kairox-manifests hookimpls: manifest formats, the [plugins] section, the plugins provider, CLI."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox import hookimpl

if TYPE_CHECKING:
    import click

    from kairox import ConfigSection, Registrar, Runtime
    from kairox.protocols import ManifestFormat, ToolProvider


@hookimpl
def kairox_register_manifest_formats(registrar: Registrar[ManifestFormat]) -> None:
    from .formats import builtin_formats

    for fmt in builtin_formats():
        registrar.add(fmt)


@hookimpl
def kairox_register_config_sections(registrar: Registrar[ConfigSection]) -> None:
    from kairox import ConfigSection

    from .config import SECTION, PluginsConfig

    registrar.add(
        ConfigSection(
            name=SECTION,
            schema=PluginsConfig,
            description="plugin directories, disabled plugins/contributions, workspace trust, hook timeout",
        )
    )


@hookimpl
def kairox_register_tool_providers(registrar: Registrar[ToolProvider], runtime: Runtime) -> None:
    from .loader import PluginLoader

    registrar.add(PluginLoader(runtime))


@hookimpl
def kairox_register_commands(cli: click.Group) -> None:
    from kairox.cli import lazy_command

    cli.add_command(
        lazy_command(
            "plugin",
            "kairox_manifests.cli:plugin_group",
            "Manifest plugins (.kairox-plugin, .codex-plugin, .claude-plugin, Philont plugin.json).",
        )
    )
