"""Every reader of workspace files, attacked with what a clone can contain.

A cloned repository plants a link where kairox reads a file (an instruction file,
an agent, an output style, a skill, a bundle's component) that leads to a private
file of the user's, or to a device. Nobody trusted the workspace. The private
file's content must appear nowhere, the command must end (a device is not read),
and the refusal must be shown where the item would have appeared.

The readers of each feature package have their cases next to this file
(``test_contained_<feature>.py``), built with :func:`plant`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from security_helpers import cli, cli_env, output_of, run_kairox

from kairox.testing import KairoxHarness

PRIVATE = "private-key-material-5b8e1d"


def plant(workspace: Path, rel: str, target: Path | str) -> Path:
    """A link at ``workspace/rel`` to ``target`` (its folders made)."""
    link = workspace / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return link


@pytest.fixture
def private(tmp_path: Path) -> Path:
    """A private file of the user's, outside the workspace."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_ed25519"
    key.write_text(f"---\nname: spy\ndescription: {PRIVATE}\n---\n{PRIVATE}\n")
    return key


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "repo"
    ws.mkdir()
    return ws


@pytest.fixture
def harness(workspace: Path, tmp_path: Path) -> KairoxHarness:
    return KairoxHarness(workspace, tmp_path / "home", env=cli_env(tmp_path / "home"))


# (where the clone plants the link, the command that would show what it reads)
KERNEL_READERS = {
    "AGENTS.md": ("context", "hi"),
    "CLAUDE.md": ("context", "hi"),
    "docs/AGENTS.md": ("context", "hi"),  # reached through [instructions] files below
    ".claude/agents/spy.md": ("agents", "list", "--json"),
    ".claude/agents/nested/spy.md": ("agents", "list", "--json"),
    ".claude/output-styles/spy.md": ("context", "hi"),
}


def _configure(workspace: Path, rel: str) -> None:
    if rel == "docs/AGENTS.md":
        (workspace / "kairox.toml").write_text('[instructions]\nfiles = ["docs/AGENTS.md"]\n')
    if "output-styles" in rel:
        (workspace / "kairox.toml").write_text('[instructions]\noutput_style = "spy"\n')


@pytest.mark.parametrize("rel", list(KERNEL_READERS))
def test_a_link_to_a_private_file_is_refused_where_it_would_appear(
    rel: str, workspace: Path, private: Path, harness: KairoxHarness
) -> None:
    plant(workspace, rel, private)
    _configure(workspace, rel)
    result = cli(harness, *KERNEL_READERS[rel])
    out = output_of(result)
    assert PRIVATE not in out
    assert "outside the workspace" in out, out


def test_a_link_to_a_folder_outside_is_not_entered(workspace: Path, private: Path, harness: KairoxHarness) -> None:
    plant(workspace, ".claude/agents/theirs", private.parent)
    (private.parent / "spy.md").write_text(private.read_text())
    result = cli(harness, "agents", "list", "--json")
    data = json.loads(result.stdout)
    assert PRIVATE not in result.stdout
    assert data["agents"] == []
    assert any("outside the workspace" in e for e in data["errors"])


@pytest.mark.parametrize("rel", ["AGENTS.md", ".claude/agents/zero.md", ".claude/output-styles/spy.md"])
def test_a_link_to_a_device_ends_at_once(rel: str, workspace: Path, tmp_path: Path) -> None:
    plant(workspace, rel, "/dev/zero")
    _configure(workspace, rel)
    env = cli_env(tmp_path / "home")
    (tmp_path / "home").mkdir(exist_ok=True)
    command = KERNEL_READERS.get(rel, ("agents", "list", "--json"))
    result = run_kairox(workspace, env, *command, timeout=60)  # reading /dev/zero would never end
    assert "outside the workspace" in output_of(result), output_of(result)


def test_a_device_inside_a_folder_the_user_lets_links_reach_is_still_not_read(workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "kairox.toml").write_text('[files]\nreadable_roots = ["/dev"]\n')
    plant(workspace, "AGENTS.md", "/dev/zero")
    result = run_kairox(workspace, cli_env(home), "context", "hi", timeout=60)
    assert "not a regular file" in output_of(result), output_of(result)


def test_readable_roots_lets_links_reach_a_folder_only_from_the_users_own_config(
    workspace: Path, private: Path, harness: KairoxHarness, tmp_path: Path
) -> None:
    shared = tmp_path / "monorepo"
    shared.mkdir()
    (shared / "AGENTS.md").write_text("shared-guidance-31\n")
    plant(workspace, "AGENTS.md", shared / "AGENTS.md")
    # the workspace naming the folder itself does not count
    (workspace / "kairox.toml").write_text(f"[files]\nreadable_roots = [{json.dumps(str(shared))}]\n")
    assert "shared-guidance-31" not in output_of(cli(harness, "context", "hi"))
    (tmp_path / "home" / "kairox.toml").write_text(f"[files]\nreadable_roots = [{json.dumps(str(shared))}]\n")
    assert "shared-guidance-31" in output_of(cli(harness, "context", "hi"))


@pytest.mark.parametrize("rel", ["kairox.toml", ".kairox/kairox.toml"])
def test_a_workspace_config_file_linked_to_a_file_of_yours_is_refused(
    rel: str, workspace: Path, tmp_path: Path, harness: KairoxHarness
) -> None:
    """A clone's kairox.toml that is a link to, say, the user's cloud credentials (INI reads as TOML)."""
    credentials = tmp_path / "home" / ".aws" / "credentials"
    credentials.parent.mkdir(parents=True)
    credentials.write_text(f'[default]\naws_secret_access_key = "{PRIVATE}"\n')
    plant(workspace, rel, credentials)
    result = cli(harness, "config", "show", "--json")
    out = output_of(result)
    assert PRIVATE not in out and "default" not in json.loads(result.stdout)["sections"]
    assert "outside the workspace" in out, out
