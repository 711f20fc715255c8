"""Instructions (kairox-agents owns ``[instructions]`` and the ``AGENTS.md`` / ``CLAUDE.md``
files): precedence and provenance, limits, problems; without the plugin, none is read and a
config that sets ``[instructions]`` names the distribution to install."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import kairox
import kairox_agents.hooks
from kairox.ext import BrokenSection


def _open(ws: Path, home: Path, *plugins: object) -> Any:
    return kairox.Runtime.open(ws, home=home, plugins=list(plugins), load_entrypoints=False, env={})


def _open_with_agents(ws: Path, home: Path) -> Any:
    return _open(ws, home, kairox_agents.hooks)


@pytest.mark.anyio
async def test_instructions_order_and_provenance(ws: Path, home: Path) -> None:
    (home / "AGENTS.md").write_text("user agents")
    (home / "kairox.toml").write_text('[instructions]\ntext = "user inline"\n')
    (ws / "kairox.toml").write_text('[instructions]\ntext = "workspace inline"\nfiles = ["docs/rules.md"]\n')
    (ws / "docs").mkdir()
    (ws / "docs" / "rules.md").write_text("rules file")
    (ws / "AGENTS.md").write_text("root agents")
    (ws / "CLAUDE.md").write_text("root claude")
    (ws / "pkg" / "sub").mkdir(parents=True)
    (ws / "pkg" / "AGENTS.md").write_text("pkg agents")
    (ws / "pkg" / "sub" / "CLAUDE.md").write_text("sub claude")
    async with _open_with_agents(ws, home) as rt, rt.session() as s:
        tc = await s.turn_context("hi", cwd=ws / "pkg" / "sub")
    texts = [i.text for i in tc.instructions]
    assert texts == [
        "user agents",
        "user inline",
        "workspace inline",
        "rules file",
        "root agents",
        "root claude",
        "pkg agents",
        "sub claude",
    ]
    scopes = [i.scope for i in tc.instructions]
    assert scopes == ["user", "user", "workspace", "workspace", "workspace", "workspace", "directory", "directory"]
    assert tc.instructions[1].source == f"{home / 'kairox.toml'} [instructions].text"
    assert tc.instructions[3].source == str((ws / "docs" / "rules.md").resolve())
    # the rendering says where each piece came from, in the same order
    rendered = tc.render()
    assert rendered.index("user agents") < rendered.index("sub claude")
    assert f"instructions from {ws / 'pkg' / 'sub' / 'CLAUDE.md'}" in rendered


@pytest.mark.anyio
async def test_instructions_discovery_can_be_turned_off_and_missing_file_reported(ws: Path, home: Path) -> None:
    (ws / "AGENTS.md").write_text("root agents")
    (ws / "kairox.toml").write_text('[instructions]\nagents_files = []\nfiles = ["nope.md"]\n')
    async with _open_with_agents(ws, home) as rt, rt.session() as s:
        tc = await s.turn_context("hi")
    assert tc.instructions == []
    assert any("nope.md" in p and "no such file" in p for p in tc.problems)


@pytest.mark.anyio
async def test_large_instruction_file_is_truncated(ws: Path, home: Path) -> None:
    (ws / "kairox.toml").write_text("[instructions]\nmax_bytes = 100\n")
    (ws / "AGENTS.md").write_text("x" * 1000)
    async with _open_with_agents(ws, home) as rt, rt.session() as s:
        tc = await s.turn_context("hi")
    (only,) = tc.instructions
    assert only.text.startswith("x" * 100)
    assert "truncated: 900 more bytes" in only.text


@pytest.mark.anyio
async def test_a_section_that_does_not_validate_fails_the_turn_naming_file_and_field(ws: Path, home: Path) -> None:
    (home / "AGENTS.md").write_text("USER-RULE: never push to main")
    toml = ws / "kairox.toml"
    toml.write_text('[instructions]\nmax_bytes = "lots"\n')
    async with _open_with_agents(ws, home) as rt, rt.session() as s:
        with pytest.raises(BrokenSection) as raised:
            await s.turn_context("hi")
    assert (raised.value.file, raised.value.path) == (str(toml), "instructions.max_bytes")


@pytest.mark.anyio
async def test_without_the_plugin_no_instruction_file_is_read_and_the_section_names_it(ws: Path, home: Path) -> None:
    (home / "AGENTS.md").write_text("user agents")
    (ws / "AGENTS.md").write_text("root agents")
    (ws / "CLAUDE.md").write_text("root claude")
    toml = ws / "kairox.toml"
    toml.write_text('[instructions]\ntext = "workspace inline"\n')
    async with _open(ws, home) as rt:
        [error] = rt.config.errors
        async with rt.session() as s:
            tc = await s.turn_context("hi")
    assert tc.instructions == []
    assert (error.file, error.path) == (str(toml), "instructions")
    assert 'config section "instructions" is provided by kairox-agents' in error.message


# -- a workspace's instructions stay bounded --------------------------------------------------------


@pytest.mark.anyio
async def test_a_workspace_cannot_raise_the_user_s_limit_on_a_file(ws: Path, home: Path) -> None:
    """The attack: an untrusted workspace sets ``max_bytes = 10000000000`` and its 200 MB
    AGENTS.md is read whole into every turn (7.8 GB of memory). ``[instructions]`` needs no
    trust, so its limits may only narrow the user's."""
    (ws / "AGENTS.md").write_text("x" * 200_000)
    (ws / "kairox.toml").write_text("[instructions]\nmax_bytes = 10000000000\n")
    async with _open_with_agents(ws, home) as rt, rt.session() as s:
        tc = await s.turn_context("hi")
    [piece] = tc.instructions
    assert piece.text.startswith("x" * 32_768) and not piece.text.startswith("x" * 32_769)
    assert "truncated: 167232 more bytes" in piece.text


@pytest.mark.anyio
async def test_a_workspace_cannot_repeat_its_files_past_the_total_budget(ws: Path, home: Path) -> None:
    """The attack: ``files = ["AGENTS.md"] * 100`` from a few kilobytes of kairox.toml put the
    file into every turn a hundred times. Each file is read once, and the workspace's pieces
    together stay within ``max_total_bytes``."""
    (ws / "AGENTS.md").write_text("y" * 30_000)
    for i in range(20):
        (ws / f"r{i}.md").write_text(f"{i}" * 30_000)
    listed = ",".join(['"AGENTS.md"'] * 100 + [f'"r{i}.md"' for i in range(20)])
    (ws / "kairox.toml").write_text(f"[instructions]\nagents_files = []\nfiles = [{listed}]\n")
    async with _open_with_agents(ws, home) as rt, rt.session() as s:
        tc = await s.turn_context("hi")
    texts = [i.text for i in tc.instructions]
    assert sum(len(t) for t in texts) <= 262_144 + 200
    assert sum(t.startswith("y") for t in texts) == 1
    assert any("max_total_bytes" in p for p in tc.problems)


@pytest.mark.anyio
async def test_the_user_s_own_limits_still_apply_to_the_user_s_files(ws: Path, home: Path) -> None:
    (home / "AGENTS.md").write_text("u" * 50_000)
    (home / "kairox.toml").write_text("[instructions]\nmax_bytes = 60000\n")
    (ws / "kairox.toml").write_text("[instructions]\nmax_bytes = 100\n")
    (ws / "AGENTS.md").write_text("w" * 500)
    async with _open_with_agents(ws, home) as rt, rt.session() as s:
        tc = await s.turn_context("hi")
    user, workspace = tc.instructions
    assert user.text == "u" * 50_000  # the workspace narrows only its own files
    assert workspace.text.startswith("w" * 100) and "truncated: 400 more bytes" in workspace.text
