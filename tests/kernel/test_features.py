"""The table of which package provides which feature (kairox._features) says what the
installed built-in packages register: a command or config section a package adds and the
table misses (or one it names that no package adds) would give a missing feature a wrong
reason, or none."""

from __future__ import annotations

import os
import re
from pathlib import Path

import click

from kairox._features import KNOWN_FEATURES
from kairox.ext import Registrar, build_plugin_host, missing_feature_message

ROOT = Path(__file__).resolve().parents[2]
#: the built-in plugin packages (the table knows them; a third party's is not in it)
BUILTIN = {
    re.search(r'^name = "([^"]+)"', p.read_text(), re.M).group(1)  # type: ignore[union-attr]
    for p in ROOT.glob("builtin_plugins/*/pyproject.toml")
}


def every_builtin_loaded() -> object:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    host = build_plugin_host(env={**env, "KAIROX_DISTRIBUTION": "none"})
    assert not host.failures, host.failures
    return host


def table(kind: str) -> dict[str, str]:
    return {name: package for (k, name), package in KNOWN_FEATURES.items() if k == kind}


def test_the_commands_are_those_the_builtin_packages_add() -> None:
    host = every_builtin_loaded()
    added: dict[str, str] = {}
    for impl in host.pm.hook.kairox_register_commands.get_hookimpls():  # type: ignore[attr-defined]
        package = host.distribution_of(impl.plugin_name)[0]  # type: ignore[attr-defined]
        if package in BUILTIN:
            group = click.Group()
            impl.function(cli=group)
            added.update(dict.fromkeys(group.commands, package))
    assert added and added == table("command")


def test_the_config_sections_are_those_the_builtin_packages_own() -> None:
    host = every_builtin_loaded()
    sections = host.dispatch.register_config_sections(Registrar("config section"))  # type: ignore[attr-defined]
    owned = {name: sections.owner_of(name) for name in sections.names()}
    assert {n: p for n, p in owned.items() if p in BUILTIN} == table("config section")


def test_a_package_that_failed_to_load_is_not_called_not_installed(fake_site, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setitem(KNOWN_FEATURES, ("command", "gizmo"), "kairox-gizmo")
    fake_site.add(
        "kairox-gizmo",
        entry_points={"gizmo": "kairox_gizmo"},
        modules={"kairox_gizmo": "raise ImportError('no gizmo')"},
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    host = build_plugin_host(env={**env, "KAIROX_DISTRIBUTION": "none", "KAIROX_HOME": str(tmp_path)})
    expected = 'command "gizmo" is provided by kairox-gizmo, which failed (load): ImportError: no gizmo'
    assert missing_feature_message("command", "gizmo", host) == expected
    assert missing_feature_message("command", "gizmo") == expected  # the newest host's record
    # a package that loaded is no reason for a missing command
    assert missing_feature_message("command", "plugin", host) is None
