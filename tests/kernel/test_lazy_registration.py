"""Registrations that import nothing until used: ``adds(..., lazy=NAME)`` stand-ins
(:class:`kairox.declare.Lazy`; the built-in transports) and skill sources that answer a
scan at once (``quick_scan``)."""

from __future__ import annotations

import copy
import pickle
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from kairox import Registrar, RegistrationError, build_plugin_host
from kairox._events import EventBus
from kairox._skills import SkillRegistry
from kairox.declare import Lazy, adds

MODULE = "kairox_lazy_fixture"


@pytest.fixture
def target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module on ``sys.path`` that is not imported yet."""
    (tmp_path / f"{MODULE}.py").write_text(
        textwrap.dedent(
            """
            class Carrier:
                name = "pigeon"
                imports_sdk_lazily = True

                def __init__(self, *args):
                    self.args = args

                def connect(self, server, context):
                    return ("connected", server)

            class Misnamed:
                name = "crow"

            class Broken:
                name = "pigeon"

                def __init__(self, *args):
                    import kairox_not_installed_anywhere  # noqa: F401
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(MODULE, None)
    yield MODULE
    sys.modules.pop(MODULE, None)


def plugin(**hooks: Any) -> types.ModuleType:
    module = types.ModuleType(f"lazy_plugin_{len(hooks)}_{id(hooks)}")
    for name, impl in hooks.items():
        setattr(module, name, impl)
    return module


def transports(*plugins: types.ModuleType) -> tuple[Registrar[Any], Any]:
    host = build_plugin_host(plugins=plugins, load_entrypoints=False)
    return host.dispatch.register_transports(Registrar("transport")), host


def test_a_lazy_target_is_registered_by_name_and_imported_on_first_use(target: str) -> None:
    registrar, host = transports(plugin(kairox_register_transports=adds(f"{target}:Carrier", lazy="pigeon")))
    assert host.failures == [] and registrar.names() == ["pigeon"]
    stand_in = registrar["pigeon"]
    assert type(stand_in) is Lazy and not stand_in.resolved
    assert target not in sys.modules  # registering imported nothing
    assert stand_in.connect("srv", None) == ("connected", "srv")  # the first use imports and builds it
    assert target in sys.modules and stand_in.resolved
    carrier = sys.modules[target].Carrier
    assert isinstance(stand_in, carrier) and stand_in.resolve() is stand_in.resolve()
    assert getattr(stand_in, "imports_sdk_lazily", False) is True
    stand_in.extra = 1
    assert stand_in.resolve().extra == 1


def test_isinstance_alone_resolves_the_stand_in(target: str) -> None:
    registrar, _ = transports(plugin(kairox_register_transports=adds(f"{target}:Carrier", lazy="pigeon")))
    assert not isinstance(registrar["pigeon"], int)
    assert registrar["pigeon"].resolved


def test_a_lazy_target_with_the_runtime_gets_it(target: str) -> None:
    host = build_plugin_host(
        plugins=[plugin(kairox_register_tool_providers=adds(f"{target}:Carrier", runtime=True, lazy="pigeon"))],
        load_entrypoints=False,
    )
    runtime = object()
    registrar: Registrar[Any] = host.dispatch.register_tool_providers(Registrar("tool provider"), runtime)  # type: ignore[arg-type]
    assert registrar["pigeon"].args == (runtime,)


def test_a_lazy_target_whose_module_is_missing_is_the_plugin_s_load_failure(target: str) -> None:
    broken = plugin(kairox_register_transports=adds("kairox_no_such_module:Carrier", lazy="ghost"))
    fine = plugin(kairox_register_transports=adds(f"{target}:Carrier", lazy="pigeon"))
    registrar, host = transports(broken, fine)
    assert registrar.names() == ["pigeon"]
    assert any("kairox_no_such_module" in f.error for f in host.failures)


def test_a_target_named_otherwise_fails_at_first_use(target: str) -> None:
    registrar, host = transports(plugin(kairox_register_transports=adds(f"{target}:Misnamed", lazy="pigeon")))
    assert host.failures == []
    with pytest.raises(RegistrationError, match="registered as 'pigeon' but is named 'crow'"):
        registrar["pigeon"].connect("srv", None)
    assert not registrar["pigeon"].resolved


@pytest.mark.parametrize("lazy", [("a", "b"), "", ("a", "")])
def test_lazy_needs_one_name_per_target(lazy: Any) -> None:
    with pytest.raises(ValueError, match="one non-empty name per target"):
        adds("a.b:C", lazy=lazy)


@pytest.mark.anyio
async def test_the_built_in_transports_are_stand_ins_for_their_classes(tmp_path: Path) -> None:
    from kairox import Runtime

    (tmp_path / "home").mkdir()
    async with Runtime.open(workspace=tmp_path, start=False, home=tmp_path / "home", env={}) as rt:
        assert all(type(t) is Lazy for t in rt.transports)
        assert rt.transports.names() == ["sse", "stdio", "streamable_http"]
        from kairox_sse.sse import SseTransport
        from kairox_stdio import StdioTransport
        from kairox_streamable_http.streamable_http import StreamableHttpTransport

        classes: list[tuple[str, type]] = [
            ("sse", SseTransport),
            ("stdio", StdioTransport),
            ("streamable_http", StreamableHttpTransport),
        ]
        for name, cls in classes:
            assert isinstance(rt.transports[name], cls)
            assert rt.transports[name].name == name


class Source:
    def __init__(self, name: str, quick: list[Any] | None) -> None:
        self.name = name
        self.quick = quick
        self.scanned = 0

    def quick_scan(self, runtime: Any) -> list[Any] | None:
        return self.quick

    def scan(self, runtime: Any) -> Iterator[Any]:
        self.scanned += 1
        return iter(())


@pytest.mark.anyio
async def test_a_source_that_knows_it_is_empty_is_not_scanned_in_a_thread() -> None:
    registry = SkillRegistry(EventBus())
    quick, slow = Source("quick", []), Source("slow", None)
    threads: list[Any] = []
    real = anyio.to_thread.run_sync

    async def counting(fn: Any, *args: Any, **kwargs: Any) -> Any:
        threads.append(args[0].name)
        return await real(fn, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(anyio.to_thread, "run_sync", counting)
        await registry.scan([quick, slow], None)
    assert (quick.scanned, slow.scanned) == (0, 1)
    assert threads == ["slow"]
    assert registry.source_names() == ["quick", "slow"]


STUB_PACKAGES = (
    "kairox_dap",
    "kairox_lsp",
    "kairox_manifests",
    "kairox_mcp",
    "kairox_skills",
    "kairox_stdio",
    "kairox_tools",
)

STUB_PROBE = """
import json, sys
import lazy_loader
read = []
attach_stub = lazy_loader.attach_stub
lazy_loader.attach_stub = lambda package, file: read.append(package) or attach_stub(package, file)
import importlib
out = {}
for package in sys.argv[1:]:
    module = importlib.import_module(package + ".hooks")  # what the plugin host does
    before = [p for p in read if p == package]
    names = importlib.import_module(package).__all__
    expected = attach_stub(package, sys.modules[package].__file__)[2]
    out[package] = [before, read[-1:], names == expected == dir(sys.modules[package])]
print(json.dumps(out))
"""


def test_a_plugin_package_reads_its_stub_when_a_name_is_first_asked() -> None:
    import json
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-c", STUB_PROBE, *STUB_PACKAGES], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for package in STUB_PACKAGES:
        assert out[package] == [[], [package], True], package


def test_stub_exports_give_the_stub_s_names_and_refuse_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kairox.declare import stub_exports

    package = tmp_path / "kairox_stub_fixture"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "__init__.pyi").write_text('"""doc"""\nfrom .mod import (\n    Thing as Thing,\n)\n', encoding="utf-8")
    (package / "mod.py").write_text("Thing = 'thing'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    module = importlib.import_module("kairox_stub_fixture")
    try:
        getattr_, dir_ = stub_exports("kairox_stub_fixture", str(package / "__init__.py"))
        assert getattr_("__all__") == ["Thing"] and dir_() == ["Thing"]
        assert getattr_("Thing") == "thing" and module.__dict__["Thing"] == "thing"
        for name in ("Other", "__path_hook__"):
            with pytest.raises(AttributeError):
                getattr_(name)
    finally:
        for name in ("kairox_stub_fixture", "kairox_stub_fixture.mod"):
            sys.modules.pop(name, None)


# -- what a stand-in does besides standing in (review of issue 17) ------------------------
def test_a_stand_in_copies_and_pickles_without_importing(target: str) -> None:
    lazy = Lazy("pigeon", f"{target}:Carrier")
    for twin in (copy.copy(lazy), copy.deepcopy(lazy), pickle.loads(pickle.dumps(lazy))):
        assert twin.name == "pigeon"
        assert not twin.resolved
    assert MODULE not in sys.modules
    assert type(pickle.loads(pickle.dumps(lazy)).resolve()).__name__ == "Carrier"


def test_isinstance_with_a_target_that_cannot_be_built_is_false(target: str) -> None:
    broken = Lazy("pigeon", f"{target}:Broken")
    assert not isinstance(broken, int)
    assert isinstance(broken, Lazy)
    with pytest.raises(RegistrationError, match=rf"'pigeon'.*{target}:Broken.*kairox_not_installed_anywhere"):
        broken.connect  # noqa: B018
    missing = Lazy("pigeon", f"{target}:NoSuchClass")
    with pytest.raises(RegistrationError, match="NoSuchClass"):
        missing.resolve()


def test_a_stand_in_keeps_its_registered_name(target: str) -> None:
    lazy = Lazy("pigeon", f"{target}:Carrier")
    with pytest.raises(AttributeError, match="registered under"):
        lazy.name = "crow"
    assert lazy.name == "pigeon" and lazy.resolve().name == "pigeon"


class _Quick:
    """A skill source whose quick answer is ``answer`` (and whose scan finds nothing)."""

    def __init__(self, name: str, answer: object) -> None:
        self.name, self.answer = name, answer

    def quick_scan(self, runtime: object = None) -> object:
        return self.answer

    def scan(self, runtime: object = None) -> Iterator[object]:
        return iter(())


@pytest.mark.anyio
async def test_a_bad_quick_answer_is_that_source_s_error_and_the_others_load() -> None:
    from kairox import SkillDef, SkillScope
    from kairox._events import EventBus
    from kairox._skills import SkillRegistry

    skill = SkillDef.create("fine", "a skill", "do it", scope=SkillScope.USER)
    registry = SkillRegistry(EventBus())
    await registry.scan([_Quick("broken", 5), _Quick("good", [skill])], None)
    assert [s.name for s in registry.skills()] == ["fine"]
    errors = [str(e) for e in registry.errors]
    assert len(errors) == 1 and "broken" in errors[0] and "TypeError" in errors[0], errors
