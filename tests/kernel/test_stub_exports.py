"""What keeps opening cheap without stand-ins: a plugin package reads its stub when a name
is first asked (``stub_exports``), and skill sources answer a scan at once (``quick_scan``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from kairox._events import EventBus
from kairox._skills import SkillRegistry


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
    from kairox._events import EventBus
    from kairox._skills import SkillRegistry
    from kairox.ext import SkillDef, SkillScope

    skill = SkillDef.create("fine", "a skill", "do it", scope=SkillScope.USER)
    registry = SkillRegistry(EventBus())
    await registry.scan([_Quick("broken", 5), _Quick("good", [skill])], None)
    assert [s.name for s in registry.skills()] == ["fine"]
    errors = [str(e) for e in registry.errors]
    assert len(errors) == 1 and "broken" in errors[0] and "TypeError" in errors[0], errors
