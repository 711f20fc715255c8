"""Every reader of workspace files, attacked with what a clone can contain.

A cloned repository plants a link where kairox reads a file (an instruction file,
an agent, an output style, a skill, a bundle's component) that leads to a private
file of the user's, or to a device. Nobody trusted the workspace (the workspace's own
config and instruction files are also tried trusted: trust does not widen what is read).
The private file's content must appear nowhere, the command must end (a device is not
read), and the refusal must be shown where the item would have appeared.

The readers of each feature package have their cases next to this file
(``test_contained_<feature>.py``), built with :func:`plant`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from security_helpers import (
    SECRET,
    Clone,
    cli,
    cli_env,
    context_text,
    marker_command,
    output_of,
    run_kairox,
    server_toml,
    servers_of,
)

from kairox_testing import KairoxHarness

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


# -- the workspace's own config files and instruction files, trusted or not -------------------


def _link_file(clone: Clone, outside: Path) -> None:
    (clone.workspace / "kairox.toml").symlink_to(outside / "evil.toml")


def _link_dot_kairox_file(clone: Clone, outside: Path) -> None:
    (clone.workspace / ".kairox").mkdir()
    (clone.workspace / ".kairox" / "kairox.toml").symlink_to(outside / "evil.toml")


def _link_dot_kairox_dir(clone: Clone, outside: Path) -> None:
    (outside / "kairox.toml").symlink_to(outside / "evil.toml")
    (clone.workspace / ".kairox").symlink_to(outside, target_is_directory=True)


@pytest.mark.parametrize(
    "link",
    [_link_file, _link_dot_kairox_file, _link_dot_kairox_dir],
    ids=["kairox.toml", ".kairox-kairox.toml", ".kairox-dir"],
)
def test_a_workspace_config_symlinked_to_a_file_outside_is_refused_trusted_or_not(
    clone: Clone, no_leftovers: None, link: Any
) -> None:
    """The workspace's config files are read inside the workspace (the contained reader):
    one that leads outside is not read at all, so its server neither runs nor is trusted."""
    outside = clone.workspace.parent / "outside"
    outside.mkdir()
    (outside / "evil.toml").write_text(server_toml("evil", marker_command(clone.markers, "evil")))
    link(clone, outside)

    status = clone.status()
    assert clone.ran() == set(), "a server of the workspace's config ran untrusted"
    assert "evil" not in servers_of(status)
    assert any("outside the workspace" in e for e in status["config_errors"]), status["config_errors"]
    assert SECRET not in json.dumps(status)

    clone.trust()
    clone.status()
    assert clone.ran() == set(), "trusting the workspace does not read a file outside it"


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink"])
def test_instructions_files_outside_the_workspace_are_never_read(clone: Clone, how: str) -> None:
    secret = clone.workspace.parent / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("the-secret-content-42\n")
    rel = {"absolute": str(secret), "dotdot": "../outside/secret.txt", "symlink": "notes/readme.md"}[how]
    if how == "symlink":
        (clone.workspace / "notes").mkdir()
        (clone.workspace / "notes" / "readme.md").symlink_to(secret)
    clone.write("kairox.toml", f"[instructions]\nfiles = [{json.dumps(rel)}]\n")

    result = cli(clone.harness, "context", "hi")
    assert result.exit_code == 0, output_of(result)
    assert "the-secret-content-42" not in output_of(result)
    assert "outside the workspace; not read" in result.stderr

    clone.trust()  # trusted or not: a repository cannot pull a file of yours into the model's context
    assert "the-secret-content-42" not in context_text(clone)
    inside = clone.workspace / "inside.md"
    inside.write_text("the-inside-content-7\n")
    clone.write("kairox.toml", '[instructions]\nfiles = ["inside.md"]\n')
    assert "the-inside-content-7" in context_text(clone)  # a file of the workspace itself is read
