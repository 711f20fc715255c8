"""kairox.declare.skills("pkg:folder"): skills shipped in a folder of an installed package, read as
a plugin's skills (plugin scope, ``<namespace>:<name>``), inside that folder."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from skills_helpers import write

from kairox.declare import skills
from kairox.ext import SkillScope
from kairox_testing import KairoxHarness, make_plugin

PACKAGE = "kairox_pkgskills_fixture"
SECRET = "TOKEN=the-secret-value"


@pytest.fixture
def package(tmp_path: Path) -> Iterator[Path]:
    """An importable package with a ``skills`` folder: an Agent Skills folder and a skill file."""
    site = tmp_path / "site"
    root = site / PACKAGE
    write(root / "__init__.py", "")
    write(
        root / "skills" / "summarize" / "SKILL.md",
        "---\nname: summarize\ndescription: Summarize notes\n---\nSummarize the notes briefly.\n",
    )
    write(root / "skills" / "tidy.md", "---\nname: tidy\ndescription: Tidy a notes file\n---\nTidy it.\n")
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    yield root
    sys.path.remove(str(site))
    sys.modules.pop(PACKAGE, None)


def plugin(target: str = f"{PACKAGE}:skills", **options: str) -> object:
    return make_plugin("pkgskills", kairox_register_skill_sources=skills(target, **options))


@pytest.mark.anyio
async def test_a_package_s_skills_are_plugin_skills_in_its_namespace(
    kairox_harness: KairoxHarness, package: Path
) -> None:
    async with kairox_harness.open(plugins=[plugin(namespace="notes")], start=False) as rt:
        found = {s.name: s for s in rt.skills}
        assert sorted(found) == ["notes:summarize", "notes:tidy"]
        assert {s.scope for s in found.values()} == {SkillScope.PLUGIN}
        assert rt.skills.errors == []
        rendered = rt.skills.prepare("notes:summarize", tools=None)
        assert rendered.text.strip() == "Summarize the notes briefly."


@pytest.mark.anyio
async def test_the_namespace_defaults_to_the_package_name_without_kairox_(
    kairox_harness: KairoxHarness, package: Path
) -> None:
    async with kairox_harness.open(plugins=[plugin()], start=False) as rt:
        assert sorted(s.name for s in rt.skills) == ["pkgskills_fixture:summarize", "pkgskills_fixture:tidy"]


def test_skills_list_shows_them(kairox_harness: KairoxHarness, package: Path) -> None:
    kairox_harness.register(plugin(namespace="notes"))
    result = kairox_harness.cli("skills", "list")
    assert result.exit_code == 0, result.stderr
    assert "notes:summarize  plugin    plugin  on  Summarize notes" in result.stdout


@pytest.mark.anyio
async def test_a_skill_linked_outside_the_package_folder_is_refused_not_read(
    kairox_harness: KairoxHarness, package: Path, tmp_path: Path
) -> None:
    secret = write(tmp_path / "outside" / "secret.md", f"---\nname: leak\ndescription: {SECRET}\n---\n{SECRET}\n")
    (package / "skills" / "leak.md").symlink_to(secret)
    async with kairox_harness.open(plugins=[plugin(namespace="notes")], start=False) as rt:
        assert sorted(s.name for s in rt.skills) == ["notes:summarize", "notes:tidy"]
        [error] = rt.skills.errors
        assert error.file is not None and error.file.endswith("leak.md")
        assert "outside" in error.message
        assert SECRET not in repr([(s.name, s.description) for s in rt.skills.all_found()])


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("target", "message"),
    [
        (f"{PACKAGE}:nothing", f"the package {PACKAGE} has no folder 'nothing'"),
        ("kairox_no_such_package_fixture:skills", "kairox_no_such_package_fixture is not an installed package"),
    ],
)
async def test_a_folder_or_package_that_is_not_there_is_an_error_naming_it(
    kairox_harness: KairoxHarness, package: Path, target: str, message: str
) -> None:
    async with kairox_harness.open(plugins=[plugin(target)], start=False) as rt:
        assert list(rt.skills) == []
        [error] = rt.skills.errors
        assert message in error.message


@pytest.mark.parametrize("target", ["no-colon", "pkg:", ":skills", "pkg:/abs", "pkg:../up"])
def test_a_target_that_is_not_a_folder_inside_a_package_is_refused(target: str) -> None:
    with pytest.raises(ValueError, match="is not 'package:folder inside it'"):
        skills(target)
