"""Every skill reader, attacked with what a clone, a bundle or a shared skills folder can contain.

The pattern of ``test_contained_readers.py``: a link planted where kairox reads a skill
(a kairox skill file, a ``SKILL.md``, a skills folder, a Claude command, a bundle's skill,
a user skills folder) leads to a private file of the user's, or to a device. The private
file's content must appear in none of ``kairox skills list/show/render`` and ``kairox
context``; the refusal is listed among the skills' errors, naming the file; a device
ends the command at once. A workspace's ``[skills]`` folders stay inside the workspace.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import test_contained_readers as readers
from security_helpers import cli, cli_env, output_of, run_kairox
from test_contained_readers import PRIVATE, plant

from kairox.ext import SkillDef, SkillError
from kairox.files import Root
from kairox_skills import DirectorySkillSource
from kairox_testing import KairoxHarness

# the fixtures of the readers' attacks: the private key, the clone, in-process runs over them
harness = readers.harness
private = readers.private
workspace = readers.workspace

#: the commands that would show what a skill reader read (``{name}``: the skill's name)
SHOWING = (
    ("skills", "list", "--json"),
    ("skills", "show", "{name}"),
    ("skills", "render", "{name}", "--no-check-tools"),
    ("context", "use the {name} skill"),
)


def skill_text(name: str, description: str = "A skill of the repository") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\nbody of {name}\n"


def errors_of(harness: KairoxHarness) -> list[dict[str, object]]:
    result = cli(harness, "skills", "list", "--json")
    assert PRIVATE not in output_of(result)
    errors: list[dict[str, object]] = json.loads(result.stdout)["errors"]
    return errors


def assert_nothing_shown(harness: KairoxHarness, name: str) -> None:
    for command in SHOWING:
        out = output_of(cli(harness, *(part.format(name=name) for part in command)))
        assert PRIVATE not in out, (command, out)


def assert_refused(harness: KairoxHarness, file: Path, where: str) -> None:
    """``skills list --json`` lists ``file`` among the errors, saying it leads outside ``where``."""
    errors = errors_of(harness)
    mine = [e for e in errors if e["file"] == str(file)]
    assert mine, errors
    assert all(f"outside {where}" in str(e["message"]) for e in mine), mine


@pytest.fixture
def elsewhere(private: Path) -> Path:
    """A folder of the user's outside the workspace holding skills made of the private file."""
    folder = private.parent
    (folder / "spy.md").write_text(private.read_text())
    (folder / "spy").mkdir()
    (folder / "spy" / "SKILL.md").write_text(private.read_text())
    return folder


# -- a link to a private file, wherever a skill is read ------------------------------------------

# where the clone plants a link: a skill file's leads to the private file, a skills folder's
# to a folder outside holding skills made of it (:func:`outside`); the skill is "spy" either way
WORKSPACE_LINKS = [
    ".kairox/skills/spy.md",
    ".kairox/skills/nested/deeper/spy.md",
    ".kairox/skills/spy/SKILL.md",
    ".claude/skills/spy/SKILL.md",
    ".agents/skills/spy.md",
    ".claude/commands/spy.md",
    ".claude/commands/team/spy.md",
    ".kairox/skills",
    ".kairox/skills/theirs",
    ".claude/skills",
    ".claude/skills/spy",
    ".agents/skills",
    ".claude/commands",
]


def outside(rel: str, private: Path, elsewhere: Path) -> Path:
    """What a link planted at ``rel`` leads to: the private file for a skill file, the folder
    outside for a skills folder (its skill ``spy`` for a skill's own folder)."""
    if rel.endswith(".md"):
        return private
    return elsewhere / "spy" if rel.endswith("/spy") else elsewhere


@pytest.mark.parametrize("rel", WORKSPACE_LINKS)
def test_a_workspace_skill_linking_outside_is_refused(
    rel: str,
    workspace: Path,
    private: Path,
    elsewhere: Path,
    harness: KairoxHarness,
) -> None:
    link = plant(workspace, rel, outside(rel, private, elsewhere))
    assert_nothing_shown(harness, "spy")
    assert_refused(harness, link, "the workspace")


# the user's own folders: each is a root of its own (what a link inside it reaches must be in it)
USER_FILES = {
    "skills/spy.md": "the skills folder",
    "skills/spy/SKILL.md": "the skills folder",
    ".claude/skills/spy/SKILL.md": "the skills folder",
    ".claude/commands/spy.md": "the skills folder",
    ".codex/skills/spy.md": "the skills folder",
    ".agents/skills/spy.md": "the skills folder",
}


@pytest.mark.parametrize("rel", list(USER_FILES))
def test_a_user_skills_folder_linking_outside_itself_is_refused(
    rel: str,
    private: Path,
    harness: KairoxHarness,
) -> None:
    link = plant(harness.home, rel, private)
    assert_nothing_shown(harness, "spy")
    assert_refused(harness, link, USER_FILES[rel])


def bundle(home: Path) -> Path:
    """A Claude-format plugin in the user's plugins folder (a bundle loads untrusted content
    whatever folder holds it) with one good skill."""
    root = home / "plugins" / "b"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "b"}))
    (root / "skills" / "fine").mkdir(parents=True)
    (root / "skills" / "fine" / "SKILL.md").write_text(skill_text("fine"))
    return root


@pytest.mark.parametrize("rel", ["skills/spy/SKILL.md", "skills/spy"])
def test_a_bundles_skill_linking_outside_the_bundle_is_refused(
    rel: str,
    elsewhere: Path,
    private: Path,
    harness: KairoxHarness,
) -> None:
    root = bundle(harness.home)
    link = plant(root, rel, outside(rel, private, elsewhere))
    assert_nothing_shown(harness, "b:spy")
    assert_refused(harness, link, "the plugin root")
    listed = json.loads(cli(harness, "skills", "list", "--json").stdout)
    assert [s["name"] for s in listed["skills"]] == ["b:fine"]


def test_a_skills_resource_linking_outside_is_not_listed(
    workspace: Path,
    private: Path,
    harness: KairoxHarness,
) -> None:
    folder = workspace / ".kairox" / "skills" / "notes"
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text(skill_text("notes"))
    (folder / "references" / "fine.md").write_text("fine\n")
    plant(folder, "references/key.md", private)
    shown = json.loads(cli(harness, "skills", "show", "notes", "--json").stdout)
    assert shown["resources"] == {"references": ["references/fine.md"]}


def test_a_link_inside_the_workspace_is_read(
    workspace: Path,
    harness: KairoxHarness,
) -> None:
    (workspace / "docs").mkdir()
    (workspace / "docs" / "shared.md").write_text(skill_text("shared", "Shared with the docs"))
    plant(workspace, ".kairox/skills/shared.md", "../../docs/shared.md")
    rendered = cli(harness, "skills", "render", "shared", "--no-check-tools")
    assert rendered.exit_code == 0 and rendered.stdout == "body of shared\n", output_of(rendered)
    assert errors_of(harness) == []


# -- the scan cache never serves a file that is refused now -------------------------------------


def test_a_cached_skill_swapped_for_a_link_is_refused_not_served(
    workspace: Path,
    private: Path,
    harness: KairoxHarness,
) -> None:
    """The cache keys a file by path, size and mtime: a link to a file of the same size and
    mtime would hit the entry of the file it replaced, and ``render`` would read the link."""
    skill = workspace / ".kairox" / "skills" / "spy.md"
    skill.parent.mkdir(parents=True)
    text = private.read_text()
    skill.write_text(text.replace(PRIVATE, "x" * len(PRIVATE)))
    then = time.time() - 3600
    for path in (skill, private):
        os.utime(path, (then, then))
    assert "spy" in cli(harness, "skills", "list").stdout  # cached now (memory and file)
    assert (harness.home / "cache" / "skills.json").is_file()
    skill.unlink()
    skill.symlink_to(private)
    assert (skill.stat().st_size, skill.stat().st_mtime) == (len(text), then)  # the same key
    assert_nothing_shown(harness, "spy")
    assert_refused(harness, skill, "the workspace")


# -- a device ends the command at once -------------------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    [".kairox/skills/zero.md", ".kairox/skills/zero/SKILL.md", ".claude/commands/zero.md", ".kairox/settings.json"],
)
def test_a_link_to_a_device_ends_at_once(rel: str, workspace: Path, tmp_path: Path) -> None:
    plant(workspace, rel, "/dev/zero")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    result = run_kairox(workspace, cli_env(home), "skills", "list", "--json", timeout=60)
    out = output_of(result)
    assert str(workspace / rel) in out and "outside the workspace" in out, out


@pytest.mark.parametrize("rel", [".kairox/skills/zero.md", ".kairox/settings.json"])
def test_a_device_the_user_lets_links_reach_is_still_not_read(
    rel: str,
    workspace: Path,
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "kairox.toml").write_text('[files]\nreadable_roots = ["/dev"]\n')
    plant(workspace, rel, "/dev/zero")
    result = run_kairox(workspace, cli_env(home), "skills", "list", "--json", timeout=60)
    assert "not a regular file" in output_of(result), output_of(result)


# -- a workspace's [skills] folders stay inside the workspace -------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("workspace_dirs", "{elsewhere}"),
        ("workspace_dirs", "../home/.ssh"),
        ("workspace_dirs", "docs/skills"),  # a link in the workspace to the folder outside
        ("user_dirs", "{elsewhere}"),
    ],
)
def test_a_workspace_config_naming_a_folder_outside_is_refused(
    key: str,
    value: str,
    workspace: Path,
    elsewhere: Path,
    harness: KairoxHarness,
) -> None:
    plant(workspace, "docs/skills", elsewhere)
    entry = value.format(elsewhere=elsewhere)
    config = workspace / "kairox.toml"
    config.write_text(f"[skills]\n{key} = [{json.dumps(entry)}]\n")
    assert cli(harness, "trust").exit_code == 0  # a workspace's [skills] applies once trusted
    assert_nothing_shown(harness, "spy")
    refused = [e for e in errors_of(harness) if e["file"] == str(config)]
    assert [e["field"] for e in refused] == [f"skills.{key}[0]"]
    assert "outside the workspace" in str(refused[0]["message"]), refused


def test_the_users_own_config_names_folders_anywhere(
    workspace: Path,
    elsewhere: Path,
    harness: KairoxHarness,
    tmp_path: Path,
) -> None:
    team = tmp_path / "team-skills"
    team.mkdir()
    (team / "standup.md").write_text(skill_text("standup", "Run the standup"))
    (harness.home / "kairox.toml").write_text(f"[skills]\nworkspace_dirs = [{json.dumps(str(team))}]\n")
    listed = json.loads(cli(harness, "skills", "list", "--json").stdout)
    assert [s["name"] for s in listed["skills"]] == ["standup"]
    # the user's readable_roots lets a workspace's folder be outside too
    (workspace / "kairox.toml").write_text(f"[skills]\nworkspace_dirs = [{json.dumps(str(team))}]\n")
    assert cli(harness, "trust").exit_code == 0  # a workspace's [skills] applies once trusted
    assert [e for e in errors_of(harness) if e["file"] == str(workspace / "kairox.toml")]
    (harness.home / "kairox.toml").write_text(f"[files]\nreadable_roots = [{json.dumps(str(team))}]\n")
    listed = json.loads(cli(harness, "skills", "list", "--json").stdout)
    assert [s["name"] for s in listed["skills"]] == ["standup"] and listed["errors"] == []


# -- a skill is used inside the root it was found in ----------------------------------------------


def test_a_listed_skill_swapped_for_a_link_is_not_read_when_used(workspace: Path, private: Path) -> None:
    """A long-running session lists a skill, then uses it: its body is read again then, and
    must be read inside the root it was found in."""
    folder = workspace / ".kairox" / "skills"
    folder.mkdir(parents=True)
    (folder / "spy.md").write_text(skill_text("spy"))
    (folder / "kit").mkdir()
    (folder / "kit" / "SKILL.md").write_text(skill_text("kit"))
    source = DirectorySkillSource("workspace", "workspace", [folder], root=Root(workspace, label="the workspace"))
    found = {item.name: item for item in source.scan() if isinstance(item, SkillDef)}
    assert found["spy"].body() == "body of spy\n"
    (folder / "spy.md").unlink()
    plant(folder, "spy.md", private)
    (folder / "kit" / "SKILL.md").unlink()
    plant(folder, "kit/SKILL.md", private)
    for name in ("spy", "kit"):
        with pytest.raises(SkillError) as info:
            found[name].body()
        assert "outside the workspace" in str(info.value) and PRIVATE not in str(info.value)


@pytest.mark.parametrize("rel", [".kairox/settings.json", ".kairox"])
def test_a_workspace_settings_file_linking_outside_is_neither_read_nor_written(
    rel: str, workspace: Path, harness: KairoxHarness, tmp_path: Path
) -> None:
    (workspace / ".claude" / "skills").mkdir(parents=True)
    (workspace / ".claude" / "skills" / "tidy.md").write_text(skill_text("tidy"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "settings.json").write_text(json.dumps({"skills": {"enabled": {"tidy": False}}}))
    plant(workspace, rel, outside / "settings.json" if rel.endswith(".json") else outside)
    listed = json.loads(cli(harness, "skills", "list", "--json").stdout)
    assert [(s["name"], s["enabled"]) for s in listed["skills"]] == [("tidy", True)]  # not read
    assert any("outside the workspace" in str(e["message"]) for e in listed["errors"]), listed
    result = cli(harness, "skills", "enable", "tidy", "--scope", "workspace")
    assert result.exit_code == 1 and "outside the workspace" in output_of(result)
    assert json.loads((outside / "settings.json").read_text()) == {"skills": {"enabled": {"tidy": False}}}
    assert sorted(p.name for p in outside.iterdir()) == ["settings.json"]  # no lock file either
