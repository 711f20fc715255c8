"""docs/writing-a-format.md's example, ``docs/examples/pack_format.py``, as a format author
uses it: registered by a plugin, its plugin found, inspected, linted and loaded, and a path
that leads outside the plugin refused by the helpers it is built from."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kairox_testing import KairoxHarness, make_plugin

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "pack_format.py"


def pack_format() -> Any:
    spec = importlib.util.spec_from_file_location("pack_format", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an installed package's module is: attrs resolves its annotations there
    spec.loader.exec_module(module)
    return module.PackFormat()


def formats_plugin() -> object:
    fmt = pack_format()
    return make_plugin("acme-pack", kairox_register_manifest_formats=lambda registrar: registrar.add(fmt))


def write_pack(root: Path, doc: dict[str, Any]) -> Path:
    (root / ".acme-pack").mkdir(parents=True)
    (root / ".acme-pack" / "pack.json").write_text(json.dumps(doc))
    (root / "skills" / "review").mkdir(parents=True)
    (root / "skills" / "review" / "SKILL.md").write_text("---\nname: review\ndescription: Review a change\n---\nbody\n")
    return root


async def test_a_plugin_of_the_example_format_loads(kairox_harness: KairoxHarness) -> None:
    plugin = write_pack(
        kairox_harness.home / "plugins" / "review-kit",
        {"name": "review-kit", "version": "1.0.0", "servers": {"lint": {"command": "acme-lint"}}, "color": "red"},
    )
    async with kairox_harness.open(plugins=[formats_plugin()], load_entrypoints=True) as rt:
        assert "review-kit:review" in {s.name for s in rt.skills.skills()}
        from kairox_manifests import loader_of

        [view] = [v for v in loader_of(rt).views() if v.name == "review-kit"]  # type: ignore[union-attr]
    assert view.format == "acme-pack" and view.version == "1.0.0"
    assert {(i.kind, i.name) for i in view.inventory} == {("skill", "review"), ("mcp_server", "lint")}
    [unknown] = [p for p in view.problems if p.path == "color"]  # every field kept or reported
    assert unknown.file == str(plugin / ".acme-pack" / "pack.json")


async def test_a_path_leading_outside_the_plugin_is_refused(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "steal").mkdir(parents=True)
    (outside / "steal" / "SKILL.md").write_text("---\nname: steal\ndescription: d\n---\nbody\n")
    write_pack(kairox_harness.home / "plugins" / "bad", {"name": "bad", "skills": ["../../../outside"]})
    async with kairox_harness.open(plugins=[formats_plugin()], load_entrypoints=True) as rt:
        assert not any(s.name.endswith(":steal") for s in rt.skills.skills())
        from kairox_manifests import loader_of

        [view] = [v for v in loader_of(rt).views() if v.name == "bad" or "bad" in v.root]  # type: ignore[union-attr]
    assert view.state == "failed" and "outside" in view.reason
