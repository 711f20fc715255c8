"""kairox.declare: registration hooks in one line each, importing their targets only when called."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import attrs
import click
import pytest
from click.testing import CliRunner

from kairox import ConfigError, ConfigSection
from kairox.declare import adds, config_section, load_target, servers
from kairox.ext import Registrar, build_plugin_host
from kairox_cli import command

MODULE = "kairox_declare_fixture"


@attrs.define
class Thing:
    name: str = "thing"


class Provider:
    name = "provider"

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime


@attrs.define
class Other:
    name: str = "other"


@attrs.frozen
class Schema:
    level: int = 1


@click.command("hello")
def hello() -> None:
    click.echo("hello from the target")


@pytest.fixture
def targets() -> Iterator[types.ModuleType]:
    """A module the declarations name; it counts how often it was imported."""
    module = types.ModuleType(MODULE)
    module.Thing, module.Other, module.Schema, module.hello = Thing, Other, Schema, hello  # type: ignore[attr-defined]
    module.Nested = types.SimpleNamespace(Provider=Provider)  # type: ignore[attr-defined]
    sys.modules[MODULE] = module
    yield module
    sys.modules.pop(MODULE, None)


def plugin(**hooks: Any) -> types.ModuleType:
    plugin.count += 1  # type: ignore[attr-defined]
    module = types.ModuleType(f"declared_plugin_{plugin.count}")  # type: ignore[attr-defined]
    for name, impl in hooks.items():
        setattr(module, name, impl)
    return module


plugin.count = 0  # type: ignore[attr-defined]


def test_adds_builds_each_target_in_order(targets: types.ModuleType) -> None:
    host = build_plugin_host(
        plugins=[plugin(kairox_register_manifest_formats=adds(f"{MODULE}:Thing", f"{MODULE}:Other"))],
        load_entrypoints=False,
    )
    registrar: Registrar[Any] = host.dispatch.register_manifest_formats(Registrar("transport"))
    assert {type(item) for item in registrar} == {Thing, Other}
    assert host.failures == []


def test_adds_with_runtime_passes_the_runtime(targets: types.ModuleType) -> None:
    host = build_plugin_host(
        plugins=[plugin(kairox_register_tool_providers=adds(f"{MODULE}:Nested.Provider", runtime=True))],
        load_entrypoints=False,
    )
    runtime = object()
    registrar: Registrar[Any] = host.dispatch.register_tool_providers(Registrar("provider"), runtime)  # type: ignore[arg-type]
    [provider] = [item for item in registrar if isinstance(item, Provider)]
    assert provider.runtime is runtime


def test_a_target_that_does_not_import_is_that_plugin_s_load_failure(targets: types.ModuleType) -> None:
    broken = plugin(kairox_register_manifest_formats=adds("kairox_no_such_module:Thing"))
    fine = plugin(kairox_register_manifest_formats=adds(f"{MODULE}:Other"))
    host = build_plugin_host(plugins=[broken, fine], load_entrypoints=False)
    registrar: Registrar[Any] = host.dispatch.register_manifest_formats(Registrar("transport"))
    assert [item.name for item in list(registrar)] == ["other"]
    assert any("kairox_no_such_module" in failure.error for failure in host.failures)


def test_runtime_on_a_hook_that_passes_none_is_refused_when_the_plugin_loads(targets: types.ModuleType) -> None:
    host = build_plugin_host(
        plugins=[plugin(kairox_register_manifest_formats=adds(f"{MODULE}:Thing", runtime=True))], load_entrypoints=False
    )
    assert len(host.failures) == 1 and "runtime" in host.failures[0].error


def test_config_section_resolves_its_schema_when_first_used(targets: types.ModuleType) -> None:
    hook = config_section("things", f"{MODULE}:Schema", entries=True, needs_trust=True, description="some things")
    del sys.modules[MODULE]  # not needed to declare
    sys.modules[MODULE] = targets
    host = build_plugin_host(plugins=[plugin(kairox_register_config_sections=hook)], load_entrypoints=False)
    registrar: Registrar[ConfigSection] = host.dispatch.register_config_sections(Registrar("config section"))
    section = registrar.get("things")
    assert section == ConfigSection(
        name="things", schema=f"{MODULE}:Schema", entries=True, needs_trust=True, description="some things"
    )
    assert section.schema_type() is Schema


def test_a_config_schema_is_imported_only_when_the_section_is_used(tmp_path: Any) -> None:
    package = tmp_path / "kairox_lazy_schema_fixture"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "schema.py").write_text(
        "import attrs\n@attrs.frozen\nclass Schema:\n    level: int = 1\n", encoding="utf-8"
    )
    (package / "broken.py").write_text("raise RuntimeError('the schema module is broken')\n", encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        hooks = [
            config_section("lazy", "kairox_lazy_schema_fixture.schema:Schema"),
            config_section("broken", "kairox_lazy_schema_fixture.broken:Schema"),
        ]
        host = build_plugin_host(
            plugins=[plugin(kairox_register_config_sections=h) for h in hooks], load_entrypoints=False
        )
        registrar: Registrar[ConfigSection] = host.dispatch.register_config_sections(Registrar("config section"))
        assert host.failures == []
        assert "kairox_lazy_schema_fixture.schema" not in sys.modules  # registering imports nothing
        assert registrar.get("lazy").schema_type()().level == 1
        assert "kairox_lazy_schema_fixture.schema" in sys.modules
        with pytest.raises(ConfigError, match=r"broken: .*does not import: the schema module is broken"):
            registrar.get("broken").schema_type()
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("kairox_lazy_schema_fixture")]:
            del sys.modules[name]


def test_a_config_schema_whose_module_is_missing_is_a_load_failure() -> None:
    hook = config_section("missing", "kairox_no_such_schema_module.schema:Schema")
    host = build_plugin_host(plugins=[plugin(kairox_register_config_sections=hook)], load_entrypoints=False)
    host.dispatch.register_config_sections(Registrar("config section"))
    assert len(host.failures) == 1 and "kairox_no_such_schema_module" in host.failures[0].error


def test_servers_declares_trust_held_entries_and_a_provider_built_with_the_runtime(targets: types.ModuleType) -> None:
    sections, providers = servers("things", f"{MODULE}:Schema", f"{MODULE}:Nested.Provider", description="some")
    host = build_plugin_host(
        plugins=[plugin(kairox_register_config_sections=sections, kairox_register_tool_providers=providers)],
        load_entrypoints=False,
    )
    registrar: Registrar[ConfigSection] = host.dispatch.register_config_sections(Registrar("config section"))
    assert registrar.get("things") == ConfigSection(
        name="things", schema=f"{MODULE}:Schema", entries=True, needs_trust=True, description="some"
    )
    runtime = object()
    tools: Registrar[Any] = host.dispatch.register_tool_providers(Registrar("provider"), runtime)  # type: ignore[arg-type]
    assert [item.runtime for item in tools if isinstance(item, Provider)] == [runtime]
    assert host.failures == []


def test_command_imports_its_target_only_when_it_runs(targets: types.ModuleType) -> None:
    host = build_plugin_host(
        plugins=[plugin(kairox_register_commands=command("hello", f"{MODULE}:hello", "Say hello."))],
        load_entrypoints=False,
    )
    del sys.modules[MODULE]
    group = click.Group("kairox")
    assert host.dispatch.register_commands(group) == []
    assert "Say hello." in CliRunner().invoke(group, ["--help"]).output
    assert MODULE not in sys.modules  # --help of the group does not import it
    sys.modules[MODULE] = targets
    assert CliRunner().invoke(group, ["hello"]).output == "hello from the target\n"


@pytest.mark.parametrize("target", ["", "module", "module:", ":attr", "a.b"])
def test_a_malformed_target_is_refused_where_it_is_declared(target: str) -> None:
    with pytest.raises(ValueError, match=r"package\.module:attribute"):
        adds(target)
    with pytest.raises(ValueError, match=r"package\.module:attribute"):
        command("x", target, "help")
    with pytest.raises(ValueError, match=r"package\.module:attribute"):
        load_target(target)


def test_adds_needs_a_target() -> None:
    with pytest.raises(ValueError, match="at least one"):
        adds()
