"""Agent Plugins 1.0.0 plugins in a real runtime: skills as ``plugin:name``, a real stdio MCP
server started with PLUGIN_ROOT / PLUGIN_DATA / cwd as the specification says, extensions in
``kairox plugin inspect``, a failing component that costs only itself, and the containment
attacks against real processes (a would-be command writes a marker file)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from plugin_helpers import real, write_executable, write_plugin

from kairox import ApprovalAnswer, ServerState
from kairox_manifests.formats.agent_plugins import PLUGIN_SCHEMA
from kairox_manifests.formats.agent_plugins_mcp import MCP_SCHEMA
from kairox_manifests.loader import loader_of
from kairox_manifests.plugindata import plugin_data_dir
from kairox_testing import Approvals, KairoxHarness

BUNDLES = Path(__file__).resolve().parent.parent / "fixtures" / "bundles" / "agent-plugins"


@pytest.fixture
def kairox_plugins() -> list[object]:
    import kairox_manifests.hooks
    import kairox_mcp.hooks
    import kairox_philont.hooks
    import kairox_skills.hooks
    import kairox_stdio.hooks

    return [kairox_manifests.hooks, kairox_philont.hooks, kairox_mcp.hooks, kairox_stdio.hooks, kairox_skills.hooks]


def install(h: KairoxHarness, name: str) -> Path:
    """Copy a fixture plugin into the user's plugin folder (user plugins need no workspace trust)."""
    return Path(shutil.copytree(BUNDLES / name, h.home / "plugins" / name))


@pytest.mark.anyio
async def test_skills_and_a_real_server_as_the_specification_says(kairox_harness: KairoxHarness) -> None:
    h = kairox_harness
    root = real(install(h, "devtools"))
    data = plugin_data_dir("devtools", root, h.home)
    async with h.open(approver=Approvals(ApprovalAnswer.ALLOW_ONCE)) as rt:
        names = {s.name for s in rt.skills.skills()}
        assert {"devtools:summarize", "devtools:release-checklist"} <= names
        assert not any(n.startswith("devtools:drafts") for n in names)
        servers = {(s.kind, s.name): s for s in rt.status().servers}
        assert servers[("mcp", "devtools:probe")].state is ServerState.READY
        # §9.1: made before the subprocess started, private to the user
        assert data.is_dir() and stat.S_IMODE(data.stat().st_mode) == 0o700
        async with rt.session() as session:
            started = json.loads((await session.call_tool("devtools.probe.started", {})).text)
            written = (await session.call_tool("devtools.probe.remember", {"text": "kept"})).text
    assert started == {
        # one pass, only the two placeholders; ${HOME} and the unterminated one stay literal
        "argv": ["--config", f"{root}/server/config.json", f"--cache={data}/cache", "${HOME}", "${PLUGIN_ROOT"],
        "cwd": str(data),
        "env": {
            "PLUGIN_ROOT": str(root),
            "PLUGIN_DATA": str(data),
            "DATA_DIR": f"{data}/db",
            "GREETING": f"${root} stays ${{NOT_EXPANDED}}",
        },
    }
    assert Path(written) == data / "memory.txt" and (data / "memory.txt").read_text() == "kept"


def test_inspect_shows_the_extensions_and_the_data_folder(kairox_harness: KairoxHarness) -> None:
    h = kairox_harness
    root = real(install(h, "devtools"))
    result = h.cli("plugin", "inspect", "devtools", load_entrypoints=False)
    assert result.exit_code == 0, result.stderr
    assert "devtools 0.3.1  (agent-plugins, user)" in result.stdout
    assert f"data folder:   {plugin_data_dir('devtools', root, h.home)}" in result.stdout
    assert "extensions:    (kept, not used by kairox)" in result.stdout
    assert '  com.example.client: {"hooks": "./com.example.client/hooks/hooks.json", "panel": "left"}' in result.stdout
    assert '  org.example.other: {"experimental": true}' in result.stdout
    data = json.loads(h.cli("plugin", "inspect", "devtools", "--json").stdout)
    assert data["metadata"]["extensions"]["org.example.other"] == {"experimental": True}


@pytest.mark.anyio
async def test_a_failing_component_costs_only_itself(kairox_harness: KairoxHarness) -> None:
    h = kairox_harness
    install(h, "partly-broken")
    async with h.open(start=False) as rt:
        loader = loader_of(rt)
        assert loader is not None
        [view] = loader.views()
        assert view.state == "available"
        items = {i.name: i for i in view.inventory}
        assert items["lint"].loaded
        assert not items["no-frontmatter"].loaded and "no frontmatter" in items["no-frontmatter"].detail
        assert items["good"].loaded  # defined; the seven invalid entries are errors of their own
        assert "partly-broken:lint" in {s.name for s in rt.skills.skills()}
        assert sum(p.severity == "error" for p in view.problems) == 7


def test_inspect_lists_each_failing_component(kairox_harness: KairoxHarness) -> None:
    h = kairox_harness
    install(h, "partly-broken")
    result = h.cli("plugin", "inspect", "partly-broken")
    assert result.exit_code == 0
    assert "mcp.json: mcpServers.sets-root.env.PLUGIN_ROOT: PLUGIN_ROOT is set by the client" in result.stdout
    assert "plugin.json: commands: unknown field (ignored)" in result.stdout


@pytest.mark.anyio
async def test_a_data_folder_that_cannot_be_made_fails_only_the_servers(kairox_harness: KairoxHarness) -> None:
    h = kairox_harness
    install(h, "devtools")
    (h.home / "plugin-data").write_text("a file where the data folders go")
    async with h.open(start=False) as rt:
        loader = loader_of(rt)
        assert loader is not None
        [view] = loader.views()
        items = {i.name: i for i in view.inventory}
        assert items["summarize"].loaded and items["release-checklist"].loaded
        assert not items["probe"].loaded and "its data folder" in items["probe"].detail
        assert "devtools:summarize" in {s.name for s in rt.skills.skills()}


# -- the attacks, against real processes -----------------------------------------------------------


def _marker_script(path: Path, marker: Path) -> Path:
    return write_executable(path, f"#!/bin/sh\necho ran > '{marker}'\nexec sleep 5\n")


def _plugin(h: KairoxHarness, servers: dict[str, object]) -> Path:
    root = h.home / "plugins" / "attack"
    write_plugin(root, {"plugin.json": {"$schema": PLUGIN_SCHEMA, "name": "attack"}})
    write_plugin(root, {"mcp.json": {"$schema": MCP_SCHEMA, "mcpServers": servers}})
    return root


@pytest.mark.anyio
async def test_a_command_linked_out_of_the_root_never_runs(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    h = kairox_harness
    marker = tmp_path / "marker"
    outside = _marker_script(tmp_path / "outside" / "run.sh", marker)
    root = _plugin(h, {"linked": {"type": "stdio", "command": "./bin/run.sh"}})
    (root / "bin").mkdir()
    (root / "bin" / "run.sh").symlink_to(outside)
    async with h.open() as rt:
        names = {s.name for s in rt.status().servers}
    assert not marker.exists()  # the outside script never ran
    assert "attack:linked" not in names


@pytest.mark.anyio
async def test_a_cwd_out_of_the_root_never_runs_there(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    h = kairox_harness
    root = _plugin(h, {"escape": {"type": "stdio", "command": "./bin/mark.sh", "cwd": "${PLUGIN_ROOT}/../outside"}})
    write_executable(root / "bin" / "mark.sh", "#!/bin/sh\necho ran > marker\nexec sleep 5\n")
    outside = root.parent / "outside"
    outside.mkdir()
    async with h.open() as rt:
        names = {s.name for s in rt.status().servers}
    assert os.listdir(outside) == []  # nothing ran there
    assert list(h.home.rglob("marker")) == []  # nor anywhere else
    assert "attack:escape" not in names


def test_a_workspace_plugin_running_in_its_data_folder_is_refused_trust(kairox_harness: KairoxHarness) -> None:
    """The data folder is outside the workspace: what runs there cannot be fingerprinted."""
    h = kairox_harness
    shutil.copytree(BUNDLES / "devtools", h.workspace / ".kairox" / "plugins" / "devtools")
    h.trust()
    listed = h.cli("plugin", "list").stdout
    assert "devtools  agent-plugins workspace untrusted" in listed
    assert "plugin-data/devtools-" in listed and "is outside the workspace" in listed
