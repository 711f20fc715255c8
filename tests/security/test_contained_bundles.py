"""The bundle machinery, attacked with what a clone or a marketplace bundle can contain.

A bundle is its folder: a manifest, a component (skill, command, agent, output style,
hooks file, ``.mcp.json``, ``.lsp.json``) or the bundle folder itself that is a link to
a private file or folder of the user's is refused, and the refusal is a problem of that
bundle in ``kairox plugin list`` / ``plugin inspect``. The workspace's own ``.mcp.json``,
and the MCP files of other clients ``kairox mcp import`` reads in the workspace, are read
inside the workspace. The private content appears in no command's output, and a link to
``/dev/zero`` ends at once.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import test_contained_readers as readers
from security_helpers import cli, cli_env, output_of, run_kairox
from test_contained_readers import PRIVATE, plant

from kairox.errors import ConfigError
from kairox_testing import KairoxHarness

# the fixtures of the readers' attacks: the clone, the private key, in-process runs over them
harness = readers.harness
private = readers.private
workspace = readers.workspace

#: a private JSON file of the user's, shaped like every document a bundle or workspace names
SECRET_DOCUMENT = {
    "name": "spy",
    "id": "spy",
    "description": PRIVATE,
    "mcpServers": {f"srv-{PRIVATE}": {"command": PRIVATE}},
}


@pytest.fixture
def private_json(tmp_path: Path) -> Path:
    path = tmp_path / "home" / ".config" / "private.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(SECRET_DOCUMENT))
    return path


@pytest.fixture
def private_plugin(tmp_path: Path) -> Path:
    """A plugin of the user's own, outside the workspace, whose metadata is private."""
    root = tmp_path / "home" / "src" / "mine"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "mine", "description": PRIVATE}))
    (root / "plugin.json").write_text(json.dumps({"id": "mine", "description": PRIVATE}))
    (root / "index.js").write_text("")
    return root


@pytest.fixture
def private_skills(private: Path) -> Path:
    """A folder of the user's private skills (``spy/SKILL.md``)."""
    folder = private.parent.parent / "private-skills"
    (folder / "spy").mkdir(parents=True)
    shutil.copy(private, folder / "spy" / "SKILL.md")
    return folder


def _everything(harness: KairoxHarness, name: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """What every listing shows (``plugin list/inspect --json``, ``mcp list``, ``context``),
    with the plugin ``name``'s entry of ``plugin list --json`` and its ``inspect --json``."""
    listed = cli(harness, "plugin", "list", "--json")
    inspected = cli(harness, "plugin", "inspect", name, "--json")
    shown = "\n".join(
        output_of(r) for r in (listed, inspected, cli(harness, "mcp", "list"), cli(harness, "context", "hi"))
    )
    entry = next((p for p in json.loads(listed.stdout)["plugins"] if p["name"] == name), {})
    return shown, entry, json.loads(inspected.stdout) if inspected.stdout.strip() else {}


def _refused(view: dict[str, Any], file: Path) -> list[dict[str, Any]]:
    """The problems of a plugin's view that say ``file`` was refused."""
    return [p for p in view.get("problems", []) if p.get("kind") == "refused" and p.get("file") == str(file)]


# -- the manifest ---------------------------------------------------------------------------------


MANIFESTS = [
    ".kairox/plugins/evil/.kairox-plugin/plugin.json",
    ".kairox/plugins/evil/.codex-plugin/plugin.json",
    ".kairox/plugins/evil/.claude-plugin/plugin.json",
    ".philont/plugins/evil/plugin.json",
]


@pytest.mark.parametrize("rel", MANIFESTS)
def test_a_manifest_that_links_to_a_private_file_fails_the_bundle_naming_it(
    rel: str, workspace: Path, private_json: Path, harness: KairoxHarness
) -> None:
    link = plant(workspace, rel, private_json)
    (link.parent / "index.js").write_text("")  # what a Philont plugin needs besides its manifest
    shown, entry, inspected = _everything(harness, "evil")
    assert PRIVATE not in shown
    assert entry["state"] == "failed" and inspected["state"] == "failed"
    assert str(link) in entry["reason"] and "outside the plugin root" in entry["reason"], entry


def test_a_manifest_folder_that_links_outside_is_refused(
    workspace: Path, private_plugin: Path, harness: KairoxHarness
) -> None:
    plant(workspace, ".kairox/plugins/evil/.claude-plugin", private_plugin / ".claude-plugin")
    shown, entry, _ = _everything(harness, "evil")
    assert PRIVATE not in shown
    assert entry["state"] == "failed" and "outside the plugin root" in entry["reason"], entry


@pytest.mark.parametrize("value", ["../../../../home/private-skills", "<absolute>", "./linked"])
def test_a_manifest_path_leading_outside_is_refused_naming_the_file_and_field(
    value: str, workspace: Path, private_skills: Path, harness: KairoxHarness
) -> None:
    root = workspace / ".kairox" / "plugins" / "kit"
    (root / ".claude-plugin").mkdir(parents=True)
    if value == "./linked":
        plant(root, "linked", private_skills)
    declared = str(private_skills) if value == "<absolute>" else value
    manifest = root / ".claude-plugin" / "plugin.json"
    manifest.write_text(json.dumps({"name": "kit", "skills": declared}))
    shown, entry, inspected = _everything(harness, "kit")
    assert PRIVATE not in shown
    assert entry["state"] == "failed"
    assert any(p["file"] == str(manifest) and p["path"] == "skills" for p in inspected["problems"]), inspected


# -- components: a marketplace bundle in the user's plugin folder (it loads: the user's own) ------


COMPONENTS = {
    "skills/spy/SKILL.md": "private",
    "skills/spy": "private_skills/spy",
    "commands/spy.md": "private",
    "agents/spy.md": "private",
    "output-styles/spy.md": "private",
    "hooks/hooks.json": "private_json",
    ".mcp.json": "private_json",
    ".lsp.json": "private_json",
}


@pytest.mark.parametrize("rel", list(COMPONENTS))
def test_a_component_that_links_outside_its_bundle_is_refused_where_it_would_appear(
    rel: str, tmp_path: Path, private: Path, private_json: Path, private_skills: Path, harness: KairoxHarness
) -> None:
    targets = {"private": private, "private_json": private_json, "private_skills/spy": private_skills / "spy"}
    root = tmp_path / "home" / "plugins" / "kit"  # $KAIROX_HOME/plugins: a bundle installed from a marketplace
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "kit"}))
    (root / "commands").mkdir()
    (root / "commands" / "hello.md").write_text("---\ndescription: says hello\n---\nhello\n")
    link = plant(root, rel, targets[COMPONENTS[rel]])
    shown, entry, inspected = _everything(harness, "kit")
    assert PRIVATE not in shown
    assert PRIVATE not in output_of(cli(harness, "skills", "list", "--json"))
    assert _refused(entry, link) and _refused(inspected, link), inspected
    # the refusal costs that file alone: the rest of the bundle is there
    assert entry["state"] == "available" and any(i["name"] == "hello" for i in entry["inventory"]), entry


def test_a_link_to_elsewhere_in_the_workspace_is_outside_the_bundle(workspace: Path, harness: KairoxHarness) -> None:
    (workspace / "notes").mkdir()
    (workspace / "notes" / "plan.md").write_text(f"---\ndescription: {PRIVATE}\n---\n{PRIVATE}\n")
    root = workspace / ".kairox" / "plugins" / "kit"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "kit"}))
    link = plant(root, "commands/plan.md", workspace / "notes" / "plan.md")
    _shown, entry, inspected = _everything(harness, "kit")
    assert _refused(inspected, link) and "outside the plugin root" in _refused(inspected, link)[0]["message"]
    assert not any(i["name"] == "plan" for i in entry["inventory"]), entry


# -- the bundle folder ---------------------------------------------------------------------------


@pytest.mark.parametrize("rel", [".kairox/plugins/mine", ".philont/plugins/mine"])
def test_a_bundle_folder_that_links_outside_the_workspace_is_refused(
    rel: str, workspace: Path, private_plugin: Path, harness: KairoxHarness
) -> None:
    link = plant(workspace, rel, private_plugin)
    shown, entry, _ = _everything(harness, "mine")
    assert PRIVATE not in shown
    assert entry["state"] == "failed" and entry["root"] == str(link), entry
    assert "outside the workspace" in entry["reason"], entry


# -- the workspace's MCP files ----------------------------------------------------------------------


def test_a_workspace_mcp_json_linking_to_a_private_file_is_a_config_error_naming_it(
    workspace: Path, private_json: Path, harness: KairoxHarness
) -> None:
    link = plant(workspace, ".mcp.json", private_json)
    result = cli(harness, "mcp", "list", "--json")
    shown = output_of(result) + output_of(cli(harness, "context", "hi"))
    assert PRIVATE not in shown
    errors = json.loads(result.stdout)["errors"]
    assert any(str(link) in e and "outside the workspace" in e for e in errors), errors


@pytest.mark.parametrize("rel", [".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json"])
def test_mcp_import_reads_a_workspace_file_inside_the_workspace(
    rel: str, workspace: Path, private_json: Path, harness: KairoxHarness
) -> None:
    link = plant(workspace, rel, private_json)
    result = cli(harness, "mcp", "import", "--dry-run", "--json", "--scope", "workspace")
    assert PRIVATE not in output_of(result)
    assert f"{link}: leads to {private_json}, outside the workspace" in output_of(result), output_of(result)


def test_mcp_import_never_copies_what_a_linked_kairox_toml_leads_to(workspace: Path, tmp_path: Path) -> None:
    from kairox_mcp.importer import PlannedServer, write_servers

    mine = tmp_path / "home" / "kairox.toml"
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text(f'[mcp_servers.mine]\ncommand = "{PRIVATE}"\n')
    target = plant(workspace, "kairox.toml", mine)
    server = PlannedServer("x", "cursor", str(workspace / ".cursor" / "mcp.json"), "stdio", {"command": "x"})
    with pytest.raises(ConfigError, match="outside"):
        write_servers(target, [server])
    assert target.is_symlink() and mine.read_text() == f'[mcp_servers.mine]\ncommand = "{PRIVATE}"\n'


def test_a_bundles_lsp_json_is_read_inside_the_bundle(tmp_path: Path) -> None:
    from kairox_lsp import load_lsp_json

    secret = tmp_path / "home" / ".lsp.json"
    secret.parent.mkdir()
    secret.write_text(json.dumps({"spy": {"command": PRIVATE, "extensionToLanguage": {".x": "x"}}}))
    bundle = tmp_path / "repo" / ".kairox" / "plugins" / "kit"
    bundle.mkdir(parents=True)
    link = plant(bundle, ".lsp.json", secret)
    servers, errors = load_lsp_json(link, root=bundle)
    assert servers == {}
    assert [e.file for e in errors] == [str(link)] and "outside the plugin root" in str(errors[0])


# -- devices: reading never starts ---------------------------------------------------------------------


DEVICE_READERS = {
    ".kairox/plugins/evil/.claude-plugin/plugin.json": ("plugin", "list", "--json"),
    ".kairox/plugins/evil/.kairox-plugin/plugin.json": ("plugin", "inspect", "evil", "--json"),
    ".philont/plugins/evil/plugin.json": ("plugin", "list", "--json"),
    ".mcp.json": ("mcp", "list"),
    ".cursor/mcp.json": ("mcp", "import", "--dry-run", "--json", "--scope", "workspace"),
}


@pytest.mark.parametrize("rel", list(DEVICE_READERS))
def test_a_link_to_a_device_ends_at_once(rel: str, workspace: Path, tmp_path: Path) -> None:
    plant(workspace, rel, "/dev/zero")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    result = run_kairox(workspace, cli_env(home), *DEVICE_READERS[rel], timeout=60)  # /dev/zero never ends
    assert "leads to /dev/zero, outside" in output_of(result), output_of(result)


def test_workspace_plugin_settings_linking_outside_are_a_config_problem(
    workspace: Path, private_json: Path, harness: KairoxHarness
) -> None:
    link = plant(workspace, ".kairox/plugin-settings.json", private_json)
    shown = output_of(cli(harness, "plugin", "list"))
    assert PRIVATE not in shown
    assert f"{link}: leads to {private_json}, outside the workspace" in shown, shown
