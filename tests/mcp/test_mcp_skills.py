"""Skills an MCP server offers through the skills extension (SEP-2640) are kairox skills
``<server>:<name>``: listed from the entries alone, fetched and verified when activated, gone
when the server stops, listed again when its resources change; and what a hostile server says
is refused entry by entry (tests/fixtures/mcp_servers/skillful.py, a real process each).

The extension is negotiated on 2026-07-28 (the revision it is written against: the SDK's server
leaves ``capabilities.extensions`` out of a 2025-11-25 ``initialize``), so these servers run
``protocol = "auto"``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_helpers import open_runtime
from test_callbacks import sdk_entry

from kairox import Runtime, SkillActivated
from kairox.ext import SkillError, SkillScope
from kairox_mcp import manager_of
from kairox_mcp.skills import MAX_SKILLS

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def wait_until(check: Callable[[], bool], timeout: float = 20) -> None:
    with anyio.fail_after(timeout):
        while not check():  # noqa: ASYNC110 - the registry is filled by the runtime's own task
            await anyio.sleep(0.02)


@asynccontextmanager
async def skillful(workspace: Path, mode: str = "plain", transport: str = "stdio") -> AsyncIterator[Runtime]:
    """A runtime whose one server is the fixture serving ``mode``, once its listing is in."""
    with sdk_entry("skillful", transport, protocol="auto", env={"SKILLFUL": mode}) as entry:
        async with open_runtime(workspace, {"skillful": entry}) as rt:
            await wait_until(lambda: any(s == "mcp" for s in rt.skills.source_names()) and _listed(rt))
            yield rt


def _listed(rt: Runtime) -> bool:
    return any(s.source == "mcp" for s in rt.skills.all_found()) or any(
        "MCP server skillful" in str(p) for p in [*rt.skills.errors, *rt.skills.warnings]
    )


def reads(rt: Runtime) -> list[str]:
    return [line.split(" ", 1)[1] for line in manager_of(rt).logs("skillful", 500) if line.startswith("read ")]


@pytest.mark.parametrize("transport", ["stdio", "streamable_http"])
async def test_server_skills_are_namespaced_and_activate_through_a_session(
    tmp_path: Path, transport: str, events_of: Callable[[Runtime], list[Any]]
) -> None:
    async with skillful(tmp_path, transport=transport) as rt:
        seen = events_of(rt)
        pdf = rt.skills.get("skillful:pdf-processing")
        assert pdf is not None and rt.skills.get("skillful:git-workflow") is not None
        assert (pdf.scope, pdf.namespace, pdf.kind) == (SkillScope.PLUGIN, "skillful", "remote")
        assert pdf.description == "Extract, fill, and assemble PDF documents"
        assert rt.skills.get("pdf-processing") is None  # never under its bare name
        if transport == "stdio":  # the fixture's stderr is read only when kairox starts it
            assert reads(rt) == []  # listing fetched no file
        with pytest.raises(SkillError, match="fetched when it is activated"):
            pdf.body()
        async with rt.session() as session:
            rendered = await session.activate_skill("skillful:pdf-processing")
        assert rendered.text.startswith("[skill skillful:pdf-processing, served by MCP server 'skillful'")
        assert "Fill the form in references/FORMS.md." in rendered.text
        assert any(isinstance(e, SkillActivated) and e.skill == "skillful:pdf-processing" for e in seen)
        if transport == "stdio":
            assert reads(rt) == ["skill://pdf-processing/SKILL.md"]  # the SKILL.md, not its other file


async def test_policy_applies_to_server_skills(tmp_path: Path) -> None:
    """A server's skill disabled in the settings is refused, and nothing is fetched for it."""
    async with skillful(tmp_path) as rt:
        rt.skills.set_overrides(SkillScope.WORKSPACE, {"skillful:git-workflow": False})
        assert "skillful:git-workflow" not in [s.name for s in rt.skills.skills()]
        async with rt.session() as session:
            with pytest.raises(SkillError, match="disabled in the workspace settings"):
                await session.activate_skill("skillful:git-workflow")
        assert reads(rt) == []


async def test_skills_go_when_the_server_stops(tmp_path: Path) -> None:
    async with skillful(tmp_path) as rt:
        assert rt.skills.get("skillful:git-workflow") is not None
        await manager_of(rt).stop_server("skillful")
        await wait_until(lambda: rt.skills.get("skillful:git-workflow") is None)
        assert [s.name for s in rt.skills.all_found() if s.source == "mcp"] == []


async def test_skills_are_listed_again_when_the_resources_change(tmp_path: Path) -> None:
    async with skillful(tmp_path, "changing") as rt:
        assert rt.skills.get("skillful:deploy") is None
        assert (await rt.call_tool("skillful.add_skill", approver=lambda *_: True)).text == "added"
        await wait_until(lambda: rt.skills.get("skillful:deploy") is not None)
        async with rt.session() as session:
            assert "Run the deploy." in (await session.activate_skill("skillful:deploy")).text


# -- what a hostile server says ----------------------------------------------------------------------


async def test_an_oversized_skill_md_is_refused_from_its_entry(tmp_path: Path) -> None:
    """A 5 MiB SKILL.md (honestly declared) is refused from the listing: nothing is read."""
    async with skillful(tmp_path, "oversized") as rt:
        assert rt.skills.get("skillful:pdf-processing") is None
        (error,) = [e for e in rt.skills.errors if e.file == "MCP server skillful"]
        assert error.field == "skills[0].resources" and "kairox reads at most" in error.message
        assert reads(rt) == []


async def test_thousands_of_skills_are_cut_to_the_bound_and_said_so(tmp_path: Path) -> None:
    async with skillful(tmp_path, "many") as rt:
        mine = [s for s in rt.skills.all_found() if s.source == "mcp"]
        assert len(mine) == MAX_SKILLS
        assert any(f"more than {MAX_SKILLS} skills" in w.message for w in rt.skills.warnings)


async def test_names_with_separators_or_control_characters_are_refused(tmp_path: Path) -> None:
    async with skillful(tmp_path, "bad-names") as rt:
        assert [s.name for s in rt.skills.all_found() if s.source == "mcp"] == ["skillful:fine"]
        errors = {e.field: e.message for e in rt.skills.errors if e.file == "MCP server skillful"}
        assert set(errors) == {"skills[0].uri", "skills[1].frontmatter.name", "skills[2].frontmatter.name"}, errors
        assert "'..'" in errors["skills[0].uri"]
        fine = rt.skills.get("skillful:fine")
        assert fine is not None and "\x1b" not in fine.description and "\\x1b[31m" in fine.description
        assert any("control characters" in w.message for w in fine.warnings)


async def test_a_server_skill_never_shadows_or_intercepts_a_local_one(tmp_path: Path) -> None:
    skills = tmp_path / ".kairox" / "skills"
    skills.mkdir(parents=True)
    (skills / "pr-review.md").write_text("---\nname: pr-review\ndescription: Review a change\n---\nLOCAL REVIEW\n")
    async with skillful(tmp_path, "shadow") as rt:
        local = rt.skills.get("pr-review")
        assert local is not None and local.source != "mcp" and rt.skills.get("skillful:pr-review") is not None
        matches = rt.skills.match("please /pr-review this")
        assert matches[0].skill is local
        assert [m.skill.name for m in matches if any("invoked" in r for r in m.reasons)] == ["pr-review"]
        assert any(
            "skillful:pr-review" in w.message and "pr-review means that one" in w.message for w in rt.skills.warnings
        )
        async with rt.session() as session:
            assert (await session.activate_skill("pr-review")).text.strip() == "LOCAL REVIEW"
        assert reads(rt) == []


async def test_a_tampered_skill_md_is_not_used(tmp_path: Path) -> None:
    async with skillful(tmp_path, "tampered") as rt:
        async with rt.session() as session:
            with pytest.raises(SkillError, match="does not match its digest"):
                await session.activate_skill("skillful:git-workflow")
            assert session.activated == []
        assert reads(rt) == ["skill://git-workflow/SKILL.md"]
