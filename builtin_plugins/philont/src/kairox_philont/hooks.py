"""kairox-philont hookimpls: the Philont ``plugin.json`` manifest format and its [philont] section."""

from __future__ import annotations

from kairox.declare import adds, config_section

kairox_register_manifest_formats = adds("kairox_philont.locations:philont_format")
kairox_register_config_sections = config_section(
    "philont",
    "kairox_philont.config:PhilontConfig",
    # `node` names the program that hosts the user's JavaScript plugins and `plugins = false`
    # turns the user's own off: a workspace's [philont] waits for trust
    needs_trust=True,
    description="Philont plugin.json code plugins",
)
