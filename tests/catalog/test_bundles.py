"""Plugins and skills install into their directories (local marketplace, git, URL) and uninstall."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest
from catalog_server import CatalogServer

from kairox.errors import PolicyDenied
from kairox_catalog.bundles import MARKER
from kairox_catalog.catalog import Catalog
from kairox_catalog.install import Installer, InstallError, InstallOptions
from kairox_catalog.model import CatalogEntry, InstallSource
from kairox_catalog.progress import RecordingProgress
from kairox_testing import Approvals, KairoxHarness

SKILL = "---\nname: tidy\ndescription: Tidy the imports\nscope: user\n---\nSort and group the imports.\n"


def make_plugin(root: Path, name: str) -> Path:
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": name, "version": "1.0.0"}))
    (root / "skills" / "fmt").mkdir(parents=True)
    (root / "skills" / "fmt" / "SKILL.md").write_text(SKILL)
    (root / ".git").mkdir()  # never copied
    return root


def make_marketplace(root: Path) -> Path:
    make_plugin(root / "plugins" / "formatter", "formatter")
    (root / "plugins" / "empty").mkdir(parents=True)
    manifest = root / ".claude-plugin" / "marketplace.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        json.dumps(
            {
                "name": "local",
                "owner": {"name": "me"},
                "plugins": [
                    {"name": "formatter", "source": "./plugins/formatter", "description": "Formats code"},
                    {"name": "empty", "source": "./plugins/empty"},
                ],
            }
        )
    )
    return manifest


def source_config(name: str, url: str, kind: str = "auto") -> str:
    return f'[catalog]\nbuiltin = false\n\n[[catalog.sources]]\nname = "{name}"\nurl = "{url}"\nkind = "{kind}"\n'


@pytest.mark.anyio
async def test_plugin_from_a_local_marketplace_installs_into_the_workspace_and_uninstalls(
    harness: KairoxHarness, tmp_path: Path
) -> None:
    manifest = make_marketplace(tmp_path / "market")
    harness.write_config(source_config("local", str(manifest)))
    harness.trust()  # the workspace's [catalog] sources are read only from a trusted workspace
    progress = RecordingProgress()
    async with harness.open(start=False) as rt:
        snap = await Catalog(rt).load()
        assert [e.name for e in snap.entries] == ["formatter", "empty"]
        report = await Installer(rt, progress=progress).install(snap.get("formatter"), InstallOptions())
        target = harness.workspace / ".kairox" / "plugins" / "formatter"
        assert report.target == target
        assert (target / ".claude-plugin" / "plugin.json").is_file()
        assert (target / "skills" / "fmt" / "SKILL.md").read_text() == SKILL
        assert not (target / ".git").exists()
        marker = json.loads((target / MARKER).read_text())
        assert (marker["name"], marker["kind"], marker["source"]) == ("formatter", "plugin", "local")
        assert progress.steps() == [f"Fetching plugin formatter from {tmp_path / 'market' / 'plugins' / 'formatter'}"]
        # checked as `kairox plugin inspect` reads it: the claude format, its one skill
        assert ("done", f"{progress.steps()[0]}: claude plugin formatter, 1 contributions") in progress.events
        # no temporary directories are left next to it
        assert sorted(p.name for p in target.parent.iterdir()) == ["formatter"]
        with pytest.raises(InstallError, match="already exists"):
            await Installer(rt).install(snap.get("formatter"), InstallOptions())
        with pytest.raises(InstallError, match="not a loadable plugin: no manifest format recognises it"):
            await Installer(rt).install(snap.get("empty"), InstallOptions())
        assert not (target.parent / "empty").exists()
        assert await Installer(rt).uninstall("formatter") == [f"plugin {target}"]
        assert not target.exists()


@pytest.mark.anyio
async def test_uninstall_never_removes_a_directory_it_did_not_install(harness: KairoxHarness) -> None:
    mine = harness.workspace / ".kairox" / "plugins" / "handmade"
    make_plugin(mine, "handmade")
    async with harness.open(start=False) as rt:
        with pytest.raises(InstallError, match="not installed"):
            await Installer(rt).uninstall("handmade")
    assert mine.is_dir()


@pytest.mark.anyio
async def test_plugin_from_a_git_repository(harness: KairoxHarness, tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    make_plugin(repo / "tools" / "linter", "linter")
    shutil.rmtree(repo / "tools" / "linter" / ".git")
    env = {**harness.env, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@x"
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "init"]):
        await anyio.run_process(argv, cwd=repo, env=env, check=True)
    entry = CatalogEntry(
        name="linter",
        kind="plugin",
        source="test",
        install=InstallSource(type="git", url=f"file://{repo}", path="tools/linter", ref="main"),
    )
    async with harness.open(start=False) as rt:
        report = await Installer(rt).install(entry, InstallOptions(scope="workspace"))
        assert (report.target / ".claude-plugin" / "plugin.json").is_file()
        assert not (report.target / ".git").exists()
        bad = CatalogEntry(
            name="nope", kind="plugin", install=InstallSource(type="git", url=f"file://{tmp_path / 'missing'}")
        )
        with pytest.raises(InstallError, match="git clone"):
            await Installer(rt).install(bad, InstallOptions())
        escape = CatalogEntry(
            name="esc", kind="plugin", install=InstallSource(type="git", url=f"file://{repo}", path="../..")
        )
        with pytest.raises(InstallError, match="not a directory"):
            await Installer(rt).install(escape, InstallOptions())


@pytest.mark.anyio
async def test_skill_from_a_url_into_the_user_directory_asks_first(
    harness: KairoxHarness, catalog_server: CatalogServer
) -> None:
    url = catalog_server.serve("/skills/tidy.md", raw=SKILL.encode())
    harness.write_config("[policy]\ninclude_temp_dir = false\n")
    entry = CatalogEntry(name="tidy", kind="skill", source="test", install=InstallSource(type="url", url=url))
    target = harness.home / "skills" / "tidy"
    async with harness.open(start=False) as rt:
        with pytest.raises(PolicyDenied):
            await Installer(rt, approver=Approvals(False)).install(entry, InstallOptions(scope="user"))
        assert not target.exists()
        approvals = Approvals(True)
        report = await Installer(rt, approver=approvals).install(entry, InstallOptions(scope="user"))
        assert report.target == target and (target / "SKILL.md").read_text() == SKILL
        assert approvals.requests[0].arguments["path"] == str(target)
        missing = CatalogEntry(
            name="gone", kind="skill", install=InstallSource(type="url", url=catalog_server.url("/nope.md"))
        )
        with pytest.raises(InstallError, match="404"):
            await Installer(rt, approver=approvals).install(missing, InstallOptions(scope="user"))
