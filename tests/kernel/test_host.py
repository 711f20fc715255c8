"""The plugin host: entry-point discovery with failure isolation and the environment controls."""

from __future__ import annotations

import logging
import types

import pluggy
import pytest

from kairox import ConfigSection, _host, hookimpl
from kairox._host import DEFAULT_PLUGINS, build_plugin_host
from kairox.ext import Registrar
from kairox_testing import make_plugin

GOOD = """
from kairox import hookimpl

@hookimpl
def kairox_register_manifest_formats(registrar):
    registrar.add(Transport())

class Transport:
    name = "fake-good"
    def connect(self, server, context):
        raise NotImplementedError
"""

BROKEN_IMPORT = """
raise ImportError("this plugin needs a library that is not installed")
"""

BAD_REGISTER = """
from kairox import hookimpl

@hookimpl
def kairox_register_manifest_formats(registrar):
    raise RuntimeError("boom while registering")
"""

UNKNOWN_HOOK = """
from kairox import hookimpl

@hookimpl
def kairox_no_such_hook(registrar):
    pass
"""

BAD_ARGNAME = """
from kairox import hookimpl

@hookimpl
def kairox_register_manifest_formats(registrar, nonsense):
    pass
"""


def env_only(*names: str, **extra: str) -> dict[str, str]:
    """Load only these entry points (the real built-in plugins are installed in this venv too)."""
    return {"KAIROX_LOAD_PLUGINS": ",".join(names), **extra}


def install_four(fake_site) -> None:
    fake_site.add("fake-good", entry_points={"good": "fake_good"}, modules={"fake_good": GOOD})
    fake_site.add(
        "fake-broken", version="0.3", entry_points={"broken": "fake_broken"}, modules={"fake_broken": BROKEN_IMPORT}
    )
    fake_site.add("fake-badreg", entry_points={"badreg": "fake_badreg"}, modules={"fake_badreg": BAD_REGISTER})
    fake_site.add("fake-unknown", entry_points={"unknown": "fake_unknown"}, modules={"fake_unknown": UNKNOWN_HOOK})


def test_builtins_are_ordinary_plugins() -> None:
    host = build_plugin_host(load_entrypoints=False, env={})
    names = [p.name for p in host.plugins(include_builtin=True)]
    assert list(DEFAULT_PLUGINS) == names
    assert host.plugins() == []  # hidden unless asked for
    info = host.plugins(include_builtin=True)[0]
    assert info.builtin and info.distribution == "kairox"
    assert "kairox_register_config_sections" in info.hooks


def test_each_host_has_a_fresh_manager() -> None:
    a = build_plugin_host(load_entrypoints=False, env={})
    b = build_plugin_host(load_entrypoints=False, env={})
    assert a.pm is not b.pm
    plugin = make_plugin("only-in-a", kairox_session_end=lambda session, reason: None)
    a.register(plugin, name="only-in-a")
    assert a.pm.get_plugin("only-in-a") is plugin
    assert b.pm.get_plugin("only-in-a") is None


def test_one_failing_plugin_never_stops_the_others(fake_site) -> None:
    install_four(fake_site)
    host = build_plugin_host(env=env_only("good", "broken", "badreg", "unknown"))
    loaded = {p.name: p for p in host.plugins()}
    assert set(loaded) == {"good", "badreg"}  # badreg imports fine; it fails later, when its hook runs
    assert loaded["good"].distribution == "fake-good"
    assert loaded["good"].version == "1.0"
    assert loaded["good"].hooks == ("kairox_register_manifest_formats",)

    failures = {f.plugin: f for f in host.failures}
    assert set(failures) == {"broken", "unknown"}
    broken = failures["broken"]
    assert (broken.distribution, broken.version, broken.stage) == ("fake-broken", "0.3", "load")
    assert "ImportError: this plugin needs a library" in broken.error
    assert "Traceback" in broken.traceback
    unknown = failures["unknown"]
    assert (unknown.distribution, unknown.stage) == ("fake-unknown", "validate")
    assert "kairox_no_such_hook" in unknown.error
    assert host.pm.get_plugin("unknown") is None  # unregistered, so the hooks stay consistent

    registrar = host.dispatch.register_manifest_formats(Registrar("transport"))
    assert registrar.names() == ["fake-good"]
    assert registrar.owner_of("fake-good") == "fake-good"
    badreg = [f for f in host.failures if f.plugin == "badreg"]
    assert len(badreg) == 1
    assert badreg[0].stage == "kairox_register_manifest_formats"
    assert badreg[0].distribution == "fake-badreg"
    assert "RuntimeError: boom while registering" in badreg[0].error


def test_register_failure_keeps_the_distribution(fake_site) -> None:
    fake_site.add(
        "fake-badarg", version="2.0", entry_points={"badarg": "fake_badarg"}, modules={"fake_badarg": BAD_ARGNAME}
    )
    host = build_plugin_host(env=env_only("badarg"))
    [failure] = host.failures
    assert failure.plugin == "badarg"
    assert (failure.distribution, failure.version, failure.stage) == ("fake-badarg", "2.0", "register")
    assert "nonsense" in failure.error


def test_load_plugins_selects_by_entry_point_or_distribution(fake_site) -> None:
    install_four(fake_site)
    assert [p.name for p in build_plugin_host(env=env_only("fake-good")).plugins()] == ["good"]
    assert [p.name for p in build_plugin_host(env=env_only("good")).plugins()] == ["good"]


def test_load_plugins_empty_loads_none(fake_site) -> None:
    install_four(fake_site)
    host = build_plugin_host(env={"KAIROX_LOAD_PLUGINS": ""})
    assert host.plugins() == []
    assert host.failures == []
    assert [p.name for p in host.plugins(include_builtin=True)] == list(DEFAULT_PLUGINS)


def test_disable_plugins(fake_site) -> None:
    install_four(fake_site)
    env = env_only("good", "broken", "badreg", KAIROX_DISABLE_PLUGINS="fake-broken, badreg")
    host = build_plugin_host(env=env)
    assert [p.name for p in host.plugins()] == ["good"]
    assert host.failures == []


def test_environment_is_read_at_call_time(fake_site, monkeypatch: pytest.MonkeyPatch) -> None:
    install_four(fake_site)
    monkeypatch.setenv("KAIROX_LOAD_PLUGINS", "good")
    assert [p.name for p in build_plugin_host().plugins()] == ["good"]
    monkeypatch.setenv("KAIROX_LOAD_PLUGINS", "badreg")
    assert [p.name for p in build_plugin_host().plugins()] == ["badreg"]


@pytest.mark.parametrize("value", ["1", "true", "yes"])
def test_strict_plugins_reraises(fake_site, value: str) -> None:
    install_four(fake_site)
    with pytest.raises(ImportError, match="needs a library"):
        build_plugin_host(env=env_only("broken", KAIROX_STRICT_PLUGINS=value))
    host = build_plugin_host(env=env_only("badreg", KAIROX_STRICT_PLUGINS=value))
    with pytest.raises(RuntimeError, match="boom while registering"):
        host.dispatch.register_manifest_formats(Registrar("transport"))


@pytest.mark.parametrize("value", ["", "0", "false"])
def test_strict_plugins_off(fake_site, value: str) -> None:
    install_four(fake_site)
    host = build_plugin_host(env=env_only("broken", KAIROX_STRICT_PLUGINS=value))
    assert [f.plugin for f in host.failures] == ["broken"]


def test_strict_plugins_reraises_unknown_hooks(fake_site) -> None:
    install_four(fake_site)
    with pytest.raises(pluggy.PluginValidationError):
        build_plugin_host(env=env_only("unknown", KAIROX_STRICT_PLUGINS="1"))


def test_trace_plugins_writes_hook_calls(fake_site, capsys: pytest.CaptureFixture[str]) -> None:
    install_four(fake_site)
    host = build_plugin_host(env=env_only("good", KAIROX_TRACE_PLUGINS="1"))
    host.dispatch.register_manifest_formats(Registrar("transport"))
    err = capsys.readouterr().err
    assert "kairox-trace:" in err
    assert "kairox_register_manifest_formats" in err
    assert "good" in err

    quiet = build_plugin_host(env=env_only("good"))
    quiet.dispatch.register_manifest_formats(Registrar("transport"))
    assert "kairox-trace" not in capsys.readouterr().err


def test_same_entry_point_name_in_two_distributions_is_reported(fake_site) -> None:
    fake_site.add("fake-one", entry_points={"twin": "fake_twin_one"}, modules={"fake_twin_one": GOOD})
    fake_site.add("fake-two", entry_points={"twin": "fake_twin_two"}, modules={"fake_twin_two": GOOD})
    host = build_plugin_host(env=env_only("twin"))
    assert [p.name for p in host.plugins()] == ["twin"]
    [failure] = host.failures
    assert failure.plugin == "twin"
    assert failure.stage == "load"
    assert "fake-one" in failure.error and "fake-two" in failure.error


def test_inline_plugins_register_after_entry_points() -> None:
    plugin = make_plugin(
        "inline-sections",
        kairox_register_config_sections=lambda registrar: registrar.add(ConfigSection("inline", dict)),
    )
    host = build_plugin_host(plugins=[plugin], load_entrypoints=False, env={})
    sections = host.dispatch.register_config_sections(Registrar("config section"))
    assert {"inline", "policy"} <= set(sections.names())
    assert sections.owner_of("policy") == "kairox"
    assert sections.owner_of("inline") == "inline-sections"


def test_collect_passes_arguments_by_name() -> None:
    """pluggy lets an implementation take any subset of the spec's arguments in any order."""
    seen = []

    @hookimpl
    def kairox_register_tool_providers(runtime, registrar):  # reversed order on purpose
        seen.append((runtime, registrar))

    @hookimpl
    def kairox_register_skill_sources(runtime):  # no registrar at all
        seen.append(runtime)

    plugin = make_plugin(
        "order",
        kairox_register_tool_providers=kairox_register_tool_providers,
        kairox_register_skill_sources=kairox_register_skill_sources,
    )
    host = build_plugin_host(plugins=[plugin], load_entrypoints=False, env={})
    registrar: Registrar[object] = Registrar("tool provider")
    host.dispatch.register_tool_providers(registrar, runtime="RT")
    host.dispatch.register_skill_sources(Registrar("skill source"), runtime="RT")
    assert host.failures == []
    assert seen == [("RT", registrar), "RT"]


def test_registration_clash_names_both_plugins() -> None:
    def add_policy(registrar):
        registrar.add(ConfigSection("policy", dict))

    plugin = make_plugin("thief", kairox_register_config_sections=add_policy)
    host = build_plugin_host(plugins=[plugin], load_entrypoints=False, env={})
    sections = host.dispatch.register_config_sections(Registrar("config section"))
    assert sections.owner_of("policy") == "kairox"  # the first claimant keeps it
    [failure] = host.failures
    assert failure.plugin == "thief"
    assert 'config section "policy" is registered twice: by kairox and by thief' in failure.error


def test_real_entry_points_are_listed_with_their_distribution() -> None:
    """The workspace installs the built-in plugins; each is found (loaded or recorded), never raised."""
    host = build_plugin_host(env={})
    seen = {p.distribution for p in host.plugins()} | {f.distribution for f in host.failures}
    assert "kairox-tools" in seen


def test_a_hook_that_raises_halfway_registers_nothing() -> None:
    def half(registrar):
        registrar.add(ConfigSection("first", dict))
        raise RuntimeError("second one failed")

    host = build_plugin_host(
        plugins=[make_plugin("half", kairox_register_config_sections=half)], load_entrypoints=False, env={}
    )
    sections = host.dispatch.register_config_sections(Registrar("config section"))
    assert "first" not in sections and "policy" in sections
    assert [f.plugin for f in host.failures] == ["half"]


def test_plugin_names_in_the_environment_are_compared_as_pep_503_names(
    fake_site, caplog: pytest.LogCaptureFixture
) -> None:
    install_four(fake_site)
    env = env_only("good", "broken", "badreg", KAIROX_DISABLE_PLUGINS="Fake_Broken, BADREG, fake-typo")
    with caplog.at_level(logging.WARNING, logger="kairox._host"):
        host = build_plugin_host(env=env)
    assert [p.name for p in host.plugins()] == ["good"]
    # the typo is a failure of its own (kairox plugins lists it), not a plugin turned off
    [failure] = host.failures
    assert (failure.plugin, failure.stage) == ("fake-typo", "environment")
    assert "KAIROX_DISABLE_PLUGINS names 'fake-typo', which is no installed plugin package" in failure.error
    assert "Fake_Broken" not in caplog.text


# -- the quicker look at module plugins (kairox._host._PluginManager) ------------------------


def _odd_module() -> types.ModuleType:
    """A module holding every kind of value a name can have, marked or not."""
    import functools

    module = types.ModuleType("kairox_odd_plugin")

    @hookimpl
    def kairox_register_manifest_formats(registrar: object) -> None: ...

    def kairox_unmarked(registrar: object) -> None: ...

    def bad_marker() -> None: ...

    bad_marker.kairox_impl = "not a dict"  # type: ignore[attr-defined]

    class Holder:
        @staticmethod
        @hookimpl
        def kairox_register_config_sections(registrar: object) -> None: ...

        @classmethod
        @hookimpl
        def kairox_register_manifest_formats(cls, registrar: object) -> None: ...

        @hookimpl  # type: ignore[prop-decorator]
        @classmethod
        def kairox_register_skill_sources(cls, registrar: object, runtime: object) -> None: ...

    module.__dict__.update(
        kairox_register_manifest_formats=kairox_register_manifest_formats,
        kairox_unmarked=kairox_unmarked,
        bad_marker=bad_marker,
        a_static=Holder.__dict__["kairox_register_config_sections"],
        a_classmethod=Holder.__dict__["kairox_register_manifest_formats"],
        a_marked_classmethod=Holder.__dict__["kairox_register_skill_sources"],
        __class__=kairox_register_manifest_formats,  # the module type's own name: pluggy sees object.__class__
        a_class=Holder,
        a_partial=functools.partial(kairox_register_manifest_formats),
        a_builtin=len,
        a_lambda=hookimpl(lambda registrar: None),
        a_number=3,
        annotations=__import__("__future__").annotations,
        __annotations__={"x": int},
    )
    return module


def test_module_plugins_are_parsed_as_pluggy_parses_them() -> None:
    """The quick path answers as pluggy's own lookup does, for every name of every plugin
    module installed here and of a module holding every kind of value."""
    import importlib

    from kairox._entrypoints import ENTRY_POINT_GROUP, installed_entry_points

    modules = [_odd_module()]
    for ep in installed_entry_points(ENTRY_POINT_GROUP, {}, None).entry_points:
        modules.append(importlib.import_module(ep.value.partition(":")[0]))
    quick, plain = _host._PluginManager("kairox"), pluggy.PluginManager("kairox")
    checked = 0
    for module in modules:
        for name in dir(module):
            assert quick.parse_hookimpl_opts(module, name) == plain.parse_hookimpl_opts(module, name), (module, name)
            checked += 1
    assert checked > 100
    odd = modules[0]
    assert quick.parse_hookimpl_opts(odd, "kairox_register_manifest_formats") is not None
    assert quick.parse_hookimpl_opts(odd, "a_lambda") is not None
    assert quick.parse_hookimpl_opts(odd, "kairox_unmarked") is None
