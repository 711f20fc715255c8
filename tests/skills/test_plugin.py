"""kairox-skills in a runtime: sources from the user home and workspace, the
[skills] config section, settings files, session skills, turn suggestions, status."""

from __future__ import annotations

from pathlib import Path

import pytest
from skills_helpers import write

from kairox.ext import SkillDef, SkillLoadFailed, SkillScope, SkillsScanned
from kairox.hookspecs import hookimpl
from kairox_skills import SettingsFile, parse_skill
from kairox_testing import EventLog, KairoxHarness


def md(name: str, description: str, extra: str = "", body: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


@pytest.fixture
def layout(kairox_harness: KairoxHarness) -> KairoxHarness:
    home, ws = kairox_harness.home, kairox_harness.workspace
    write(home / "skills" / "review.md", md("review", "User review skill", body="user body\n"))
    write(home / "skills" / "notes" / "SKILL.md", md("notes", "Take notes", "keywords: [notes, minutes]\n"))
    write(ws / ".kairox" / "skills" / "review.md", md("review", "Workspace review skill", body="ws body\n"))
    write(ws / ".kairox" / "skills" / "deploy.md", md("deploy", "Deploy the service", "tools: [shell.exec]\n"))
    write(ws / ".kairox" / "skills" / "broken.md", "---\nname: broken\n---\n")
    return kairox_harness


@pytest.mark.anyio
async def test_user_and_workspace_sources(layout: KairoxHarness) -> None:
    async with layout.open(start=False) as rt:
        reg = rt.skills
        assert sorted(rt.skill_sources.names()) == sorted(
            [
                "user",
                "workspace",
                "claude-user",
                "claude-user-commands",
                "codex-user",
                "agents-user",
                "claude-workspace",
                "claude-workspace-commands",
                "agents-workspace",
            ]
        )
        assert [(s.name, s.scope.value) for s in reg.skills()] == [
            ("deploy", "workspace"),
            ("notes", "user"),
            ("review", "workspace"),
        ]
        review = reg.get("review")
        assert review is not None and review.body() == "ws body\n"
        assert [(s.scope, s.path) for s in reg.shadowed("review")] == [
            (SkillScope.USER, layout.home / "skills" / "review.md")
        ]
        assert [(e.field, Path(e.file or "").name) for e in reg.errors] == [("description", "broken.md")]
        assert rt.status().skills == 3


@pytest.mark.anyio
async def test_kairox_home_is_honoured(layout: KairoxHarness, tmp_path: Path) -> None:
    other = tmp_path / "other-home"
    write(other / "skills" / "elsewhere.md", md("elsewhere", "From another home"))
    layout.env["KAIROX_HOME"] = str(other)
    layout.home = other
    async with layout.open(start=False) as rt:
        assert [s.name for s in rt.skills.skills(scope="user")] == ["elsewhere"]


@pytest.mark.anyio
async def test_config_adds_directories(layout: KairoxHarness, tmp_path: Path) -> None:
    extra_user = write(tmp_path / "team-skills" / "standup.md", md("standup", "Run the standup"))
    write(layout.workspace / ".claude" / "skills" / "lint" / "SKILL.md", md("lint", "Lint the code"))
    layout.write_config(f'[skills]\nuser_dirs = ["{extra_user.parent}"]\n', where="user")
    layout.write_config('[skills]\nworkspace_dirs = [".claude/skills"]\n')
    async with layout.open(start=False) as rt:
        assert not rt.config.errors
        by_name = {s.name: s.scope.value for s in rt.skills.skills()}
        assert (by_name["standup"], by_name["lint"]) == ("user", "workspace")
        assert [e for e in rt.skills.errors if e.field.startswith("skills.")] == []


@pytest.mark.anyio
async def test_a_workspace_config_adds_only_folders_inside_the_workspace(layout: KairoxHarness, tmp_path: Path) -> None:
    """The user's own file may name any folder; a workspace's names folders inside it
    (tests/security/test_contained_skills.py has the attack)."""
    outside = write(tmp_path / "team-skills" / "standup.md", md("standup", "Run the standup")).parent
    write(layout.workspace / "docs" / "skills" / "lint.md", md("lint", "Lint the code"))
    layout.write_config(f'[skills]\nworkspace_dirs = ["docs/skills", "{outside}"]\nuser_dirs = ["{outside}"]\n')
    layout.trust()  # a workspace's [skills] waits for trust
    async with layout.open(start=False) as rt:
        names = {s.name for s in rt.skills.skills()}
        assert "lint" in names and "standup" not in names
        config = str(layout.workspace / "kairox.toml")
        refused = [e for e in rt.skills.errors if e.file == config]
        assert {e.field for e in refused} == {"skills.workspace_dirs[1]", "skills.user_dirs[0]"}
        assert all("outside the workspace" in e.message for e in refused)


@pytest.mark.anyio
async def test_settings_files_apply_at_open(layout: KairoxHarness) -> None:
    SettingsFile(layout.home / "settings.json").set_skill("notes", False)
    SettingsFile(layout.home / "settings.json").set_skill("deploy", False)
    SettingsFile(layout.workspace / ".kairox" / "settings.json").set_skill("deploy", True)
    async with layout.open(start=False) as rt:
        assert [s.name for s in rt.skills.skills()] == ["deploy", "review"]
        assert rt.skills.enabled_state("deploy") == (True, SkillScope.WORKSPACE)
        assert rt.status().skills == 2


@pytest.mark.anyio
async def test_a_broken_settings_file_is_reported(layout: KairoxHarness) -> None:
    write(layout.home / "settings.json", "{oops")
    async with layout.open(start=False) as rt:
        assert any(e.file == str(layout.home / "settings.json") for e in rt.skills.errors)
        assert len(rt.skills) == 3


@pytest.mark.anyio
async def test_session_skills_live_as_long_as_the_session(layout: KairoxHarness) -> None:
    async with layout.open(start=False) as rt:
        async with rt.session() as session:
            skill = parse_skill(md("review", "Session review", body="session body {{ x }}\n", extra="arguments: [x]\n"))
            rt.skills.add_session_skill(session.id, skill)
            mine = rt.skills.get("review", session_id=session.id)
            assert mine is not None and mine.scope is SkillScope.SESSION
            ready = rt.skills.prepare("review", {"x": "1"}, tools=rt.tools, session_id=session.id)
            assert ready.text == "session body 1\n"
            assert [s.scope for s in rt.skills.shadowed("review", session_id=session.id)] == [
                SkillScope.WORKSPACE,
                SkillScope.USER,
            ]
        assert rt.skills.session_skills(session.id) == []
        review = rt.skills.get("review", session_id=session.id)
        assert review is not None and review.scope is SkillScope.WORKSPACE


@pytest.mark.anyio
async def test_turns_are_offered_the_best_matching_skills(layout: KairoxHarness) -> None:
    async with layout.open(start=False) as rt, rt.session() as session:
        context = await session.turn_context("write the meeting minutes")
        assert [(m.name, m.why) for m in context.matched_skills] == [("notes", "keyword 'minutes'")]
        assert {e.name for e in context.skills} == {"deploy", "notes", "review"}


@pytest.mark.anyio
async def test_events_report_the_scan(layout: KairoxHarness) -> None:
    log = EventLog()

    def collect(event: object) -> None:
        log.events.append(event)  # type: ignore[arg-type]

    async with layout.open(start=False, plugins=[_EventPlugin(collect)]) as rt:
        assert rt.skills is not None
    scanned = log.of(SkillsScanned)
    assert [({"user", "workspace"} <= set(s.sources), s.skills, s.errors) for s in scanned] == [(True, 4, 1)]
    assert [Path(e.file or "").name for e in log.of(SkillLoadFailed)] == ["broken.md"]


class _EventPlugin:
    def __init__(self, fn: object) -> None:
        self.fn = fn

    @hookimpl
    def kairox_event(self, event: object) -> None:
        self.fn(event)  # type: ignore[operator]


@pytest.mark.anyio
async def test_a_plugin_loader_adds_namespaced_skills(layout: KairoxHarness, tmp_path: Path) -> None:
    from kairox_skills import bundle_skill_source

    bundle = tmp_path / "acme-plugin" / "skills"
    write(bundle / "review" / "SKILL.md", md("review", "Acme's review"))
    async with layout.open(start=False) as rt:
        await rt.skills.add_source(bundle_skill_source("acme", bundle), rt)
        names = [s.name for s in rt.skills.skills()]
        assert "acme:review" in names and "review" in names
        acme = rt.skills.get("acme:review")
        assert isinstance(acme, SkillDef) and acme.namespace == "acme"
        assert rt.skills.shadowed("acme:review") == ()
