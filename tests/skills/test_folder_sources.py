"""kairox-skills registers its folder sources as stand-ins (``_plugin.FolderSource``): the
same sources as the readers it stands for, none of them imported while no folder is there."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from skills_helpers import write

from kairox.ext import SkillScope
from kairox_skills import _plugin
from kairox_skills._cache import get_cache
from kairox_skills._config import SkillsConfig
from kairox_skills._imports import CommandSkillSource, imported_folders
from kairox_skills._sources import DirectorySkillSource
from kairox_testing import KairoxHarness


def test_the_light_defaults_are_the_schema_s() -> None:
    assert _plugin.DEFAULT_IMPORTS == SkillsConfig().imports
    assert _plugin.SETTINGS_FILE == "settings.json"


def reference(rt: Any) -> list[tuple[Any, ...]]:
    """What the hook registered before the stand-ins: the readers, built from the schema."""
    config = _plugin.skills_config(rt)
    home = _plugin.home_of(rt)
    cache = get_cache(home / "cache" / "skills.json" if config.cache else None)
    user_dirs = [home / "skills", *(_plugin._resolve(home, d) for d in config.user_dirs)]
    workspace_dirs = [
        rt.workspace / ".kairox" / "skills",
        *(_plugin._resolve(rt.workspace, d) for d in config.workspace_dirs),
    ]
    out: list[Any] = [
        DirectorySkillSource("user", SkillScope.USER, user_dirs, cache=cache),
        DirectorySkillSource("workspace", SkillScope.WORKSPACE, workspace_dirs, cache=cache),
    ]
    for f in imported_folders(
        config.imports, workspace=rt.workspace, env=rt.env, exclude=[*user_dirs, *workspace_dirs]
    ):
        if f.commands:
            out.append(CommandSkillSource(f.source, f.scope, [f.path], origin=f.kind))
        else:
            out.append(DirectorySkillSource(f.source, f.scope, [f.path], cache=cache, origin=f.kind))
    return [describe(s) for s in out]


def describe(source: Any) -> tuple[Any, ...]:
    return (
        source.name,
        source.__class__,
        source.scope,
        [os.path.abspath(d) for d in source.dirs],
        source.origin,
        getattr(source, "namespace", None),
        getattr(getattr(source, "cache", None), "file", None),
    )


CONFIGS = [
    "",
    '[skills]\nuser_dirs = ["more", "~/elsewhere"]\nworkspace_dirs = ["docs/skills", ".claude/skills"]\ncache = false\n',
    '[skills]\nimport_from = ["claude"]\n',
    "[skills]\nimport_from = false\n",
    "[skills]\nimport_from = { codex = false }\n",
]


@pytest.mark.anyio
@pytest.mark.parametrize("toml", CONFIGS, ids=["defaults", "dirs", "claude", "none", "table"])
async def test_the_folder_sources_build_the_readers_the_config_asks_for(
    kairox_harness: KairoxHarness, toml: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (kairox_harness.home / "kairox.toml").write_text(toml, encoding="utf-8")
    kairox_harness.env["CODEX_HOME"] = str(kairox_harness.home / "codex")
    async with kairox_harness.open(start=False) as rt:
        sources = list(rt.skill_sources)
        assert all(type(s) is _plugin.FolderSource for s in sources)
        # what they are, not what they build: no object says it is of another class
        assert not any(isinstance(s, (DirectorySkillSource, CommandSkillSource)) for s in sources)
        assert sorted(describe(s.resolve()) for s in sources) == sorted(reference(rt))
        assert [s.name for s in sources] == sorted(d[0] for d in reference(rt))


@pytest.mark.anyio
async def test_nothing_is_imported_or_read_while_no_folder_is_there(kairox_harness: KairoxHarness) -> None:
    async with kairox_harness.open(start=False) as rt:
        stand_ins = [rt.skill_sources[n] for n in rt.skill_sources.names()]
        assert stand_ins and all(object.__getattribute__(s, "_source") is None for s in stand_ins)
        assert rt.skills.skills() == []
        # once a folder is there, a rescan reads it through the reader
        write(kairox_harness.workspace / ".claude" / "commands" / "review.md", "Review the change.\n")
        write(kairox_harness.home / "skills" / "hello.md", "---\nname: hello\ndescription: Say hello.\n---\nHi\n")
        await rt.skills.rescan(rt)
        assert sorted(s.name for s in rt.skills.skills()) == ["hello", "review"]
        resolved = {n for n, s in rt.skill_sources.items() if isinstance(s, _plugin.FolderSource) and s.resolved}
        assert resolved == {"user", "claude-workspace-commands"}


@pytest.mark.anyio
async def test_a_settings_file_still_applies(kairox_harness: KairoxHarness) -> None:
    write(kairox_harness.home / "skills" / "hello.md", "---\nname: hello\ndescription: Say hello.\n---\nHi\n")
    write(kairox_harness.workspace / ".kairox" / "settings.json", '{"skills": {"enabled": {"hello": false}}}')
    write(kairox_harness.home / "settings.json", '{"skills": {"enabled": {"hello": 3}}}')
    async with kairox_harness.open(start=False) as rt:
        assert rt.skills.overrides(SkillScope.WORKSPACE) == {"hello": False}
        assert rt.skills.overrides(SkillScope.USER) == {}
        assert rt.skills.enabled_state("hello") == (False, SkillScope.WORKSPACE)
        assert any(e.field == "skills.enabled.hello" for e in rt.skills.errors)


def test_a_missing_folder_is_a_quick_empty_scan_and_an_existing_one_is_not(tmp_path: Path) -> None:
    source = _plugin.FolderSource("x", SkillScope.USER, [tmp_path / "none"])
    assert source.quick_scan() == [] and list(source.scan()) == [] and not source.resolved
    write(tmp_path / "none" / "a.md", "---\nname: a\ndescription: A.\n---\n")
    assert source.quick_scan() is None
    assert [s.name for s in source.scan()] == ["a"] and source.resolved
