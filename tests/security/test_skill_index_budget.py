"""Issue 13, item 9: the skills index in ``turn_context`` fits a budget, the rest findable.

Before the fix every skill went into the index whole: 100,000 skills gave 34 MB of
``turn_context`` output, and one skill with a megabyte of description put all of it
in every turn's prompt.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import kairox_skills.hooks
from kairox._context import SKILL_BUDGET, estimate_tokens
from kairox_testing import KairoxHarness

COUNT = 3000


def _skill(name: str, description: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\nBody of {name}.\n"


@pytest.fixture
def many(tmp_path: Path) -> KairoxHarness:
    ws, home = tmp_path / "ws", tmp_path / "home"
    skills = ws / ".kairox" / "skills"
    skills.mkdir(parents=True)
    for i in range(COUNT):
        (skills / f"s{i:05d}.md").write_text(
            _skill(f"s{i:05d}", f"skill number {i} that does a routine task in this project"), encoding="utf-8"
        )
    # the one a prompt is about sorts last, and one description is huge
    (skills / "zz-payroll.md").write_text(
        _skill("zz-payroll", "Run the payroll export", "keywords: [payroll]\n"), encoding="utf-8"
    )
    (skills / "huge.md").write_text(_skill("huge", "x" * 1_000_000), encoding="utf-8")
    home.mkdir()
    return KairoxHarness(ws, home, plugins=[kairox_skills.hooks])


@pytest.mark.anyio
async def test_the_index_fits_the_budget_and_the_rest_are_findable(many: KairoxHarness) -> None:
    async with many.open(start=True) as rt, rt.session() as session:
        assert len(rt.skills.skills()) == COUNT + 2
        tc = await session.turn_context("please do the payroll run")
        assert 0 < len(tc.skills) < COUNT
        assert tc.omitted_skills == COUNT + 2 - len(tc.skills)
        assert sum(estimate_tokens([s.name, s.description, s.location, s.scope]) for s in tc.skills) <= SKILL_BUDGET
        assert tc.skills[0].name == "zz-payroll" or "zz-payroll" in {s.name for s in tc.skills}  # matches first
        assert all(len(s.description) <= 1024 for s in tc.skills)
        rendered = tc.render()
        assert len(rendered) < SKILL_BUDGET * 4 * 2
        assert "skills_search" in rendered
        assert len(json.dumps(tc.to_dict())) < SKILL_BUDGET * 4 * 3

        # an omitted skill is one search away
        listed = {s.name for s in tc.skills}
        hidden = next(f"s{i:05d}" for i in range(COUNT - 1, 0, -1) if f"s{i:05d}" not in listed)
        found = await session.call_tool("skills.search", {"query": hidden, "limit": 3})
        assert found.structured is not None
        names = [s["name"] for s in found.structured["skills"]]
        assert names[0] == hidden
        assert found.structured["skills"][0]["location"].endswith(f"{hidden}.md")

        # a host that wants them all asks for no budget
        everything = await session.turn_context("x", skill_budget=None)
        assert len(everything.skills) == COUNT + 2 and everything.omitted_skills == 0
        # and a huge description never reaches the prompt whole
        huge = next(s for s in everything.skills if s.name == "huge")
        assert len(huge.description) == 1024


def test_the_cli_context_output_is_bounded(many: KairoxHarness) -> None:
    result = many.cli("context", "payroll", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["omitted_skills"] > 0
    assert len(result.stdout) < SKILL_BUDGET * 4 * 4
    small = json.loads(many.cli("context", "payroll", "--json", "--skill-budget", "50").stdout)
    assert [s["name"] for s in small["skills"]] == ["zz-payroll"]


@pytest.mark.anyio
async def test_skills_search_finds_a_skill_by_one_word_of_its_description(tmp_path: Path) -> None:
    """One word of a skill's description finds it: that word alone must not score below the
    match cut-off."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".kairox" / "skills").mkdir(parents=True)
    home.mkdir()
    (ws / ".kairox" / "skills" / "ops.md").write_text(_skill("ops", "Deploys kubernetes clusters with helm charts"))
    (ws / ".kairox" / "skills" / "other.md").write_text(_skill("other", "Writes release notes"))
    async with KairoxHarness(ws, home, plugins=[kairox_skills.hooks]).open() as rt, rt.session() as session:
        found = await session.call_tool("skills.search", {"query": "kubernetes"})
        assert found.structured is not None
        assert [s["name"] for s in found.structured["skills"]] == ["ops"]
        none = await session.call_tool("skills.search", {"query": "terraform"})
        assert none.structured == {"skills": []}
