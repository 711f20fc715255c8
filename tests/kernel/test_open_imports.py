"""Opening a workspace costs a plugin nothing when it has nothing to do there.

``Runtime.open`` of an empty workspace (empty ``KAIROX_HOME``) with every installed
plugin must not import the heavy modules of the features that have nothing declared:
PyYAML, the manifest model and formats, the MCP/LSP/DAP lifecycles with their event
classes, and each feature's config schema (``[mcp_servers]``, ``[lsp_servers]``, ...:
the kernel imports a schema when a file sets its section) and discovery code. Each
comes in on the path that has something to do: a server declared, a skill file found,
a plugin directory present. Checked in fresh interpreters (this one
has imported everything already); the speed itself is benchmarks/bench_open.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

#: what no plugin may import to open a workspace that declares nothing for it
HEAVY = (
    "yaml",
    "packaging",
    "mcp",
    "kairox_skills._simpleyaml",
    "kairox_skills._format",
    "kairox_skills._structure",
    "kairox_skills._sources",
    "kairox_skills._cache",
    "kairox_skills._config",
    "kairox_skills._imports",
    "kairox_skills._settings",
    "kairox_stdio.stdio",
    "kairox_sse.sse",
    "kairox_streamable_http.streamable_http",
    "kairox_manifests.config",
    "kairox_manifests.discovery",
    "kairox_manifests.errors",
    "kairox_manifests.paths",
    "kairox_manifests.settings",
    "kairox_manifests.model",
    "kairox_manifests.compat",
    "kairox_manifests.formats",
    "kairox_manifests.formats._meta",
    "kairox_manifests.events",
    "kairox_manifests.inventory",
    "kairox_manifests.hookscripts",
    "kairox_manifests.routing",
    "kairox_philont.manifest",
    "kairox_philont.config",
    "kairox_mcp.config",
    "kairox_mcp.sources",
    "kairox_mcp.lifecycle",
    "kairox_mcp.events",
    "kairox_mcp.resources",
    "kairox_mcp.client",
    "kairox_mcp.transport",
    "kairox_mcp._sdklog",
    "kairox_peer._config",
    "kairox_peer._managed",
    "kairox_peer._process",
    "kairox_peer._framing",
    "kairox_peer._client",
    "kairox_peer._tools",
    "kairox_peer._text",
    "kairox_lsp._config",
    "kairox_lsp._lifecycle",
    "kairox_lsp._events",
    "kairox_lsp._tools",
    "kairox_dap._config",
    "kairox_dap._lifecycle",
    "kairox_dap._events",
    "kairox_dap._session",
    "kairox_dap._tools",
    "kairox_agents._registry",
    "kairox_agents._model",
    "kairox_agents._parse",
    "kairox_agents._plugin",
    # not listed: the modules of the tool providers (kairox_mcp.manager, kairox_lsp._provider
    # with kairox_peer's _control and _errors, kairox_dap._provider, kairox_manifests.loader) and of the transports
    # (each package's _transport): what they register is built at every open, so they are
    # imported at every open and import only what building it needs
)

PROBE = """
import json, sys
import anyio, kairox

async def main():
    async with kairox.Runtime.open(workspace=sys.argv[1]):
        pass

anyio.run(main)
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def opened(workspace: Path, home: Path) -> set[str]:
    """The :data:`HEAVY` modules a fresh interpreter has imported once ``Runtime.open`` returned."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    env.update(KAIROX_HOME=str(home), HOME=str(home.parent))
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), str(workspace)],
        capture_output=True,
        text=True,
        env=env,
        cwd=workspace,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    workspace, home = tmp_path / "workspace", tmp_path / "home" / ".kairox"
    workspace.mkdir()
    home.mkdir(parents=True)
    return workspace, home


def test_an_empty_workspace_opens_without_the_heavy_modules(dirs: tuple[Path, Path]) -> None:
    assert opened(*dirs) == set()


def _user_config(home: Path, text: str) -> None:
    (home / "kairox.toml").write_text(textwrap.dedent(text), encoding="utf-8")


#: a server command that exits at once (the tests look at what was imported, not at the server)
QUICK_EXIT = f'command = {json.dumps(sys.executable)}\nargs = ["-c", "pass"]\n'


def mcp_server(workspace: Path, home: Path) -> None:
    _user_config(home, "[mcp_servers.quick]\n" + QUICK_EXIT)


def lsp_server(workspace: Path, home: Path) -> None:
    _user_config(home, "[lsp_servers.quick]\n" + QUICK_EXIT + 'languages = ["python"]\n')


def dap_server(workspace: Path, home: Path) -> None:
    _user_config(home, "[dap_servers.quick]\n" + QUICK_EXIT)


def skill_file(workspace: Path, home: Path) -> None:
    skills = workspace / ".kairox" / "skills"
    skills.mkdir(parents=True)
    (skills / "hello.md").write_text("---\nname: hello\ndescription: Say hello.\n---\nHello!\n", encoding="utf-8")


def bundle_dir(workspace: Path, home: Path) -> None:
    manifest = home / "plugins" / "hello" / ".kairox-plugin" / "plugin.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"name": "hello", "version": "1.0.0", "description": "x"}), encoding="utf-8")


def mcp_json(workspace: Path, home: Path) -> None:
    server = {"command": sys.executable, "args": ["-c", "pass"]}
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"quick": server}}), encoding="utf-8")


def claude_command(workspace: Path, home: Path) -> None:
    commands = workspace / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("Review the change.\n", encoding="utf-8")


def plugin_settings(workspace: Path, home: Path) -> None:
    (home / "plugin-settings.json").write_text(json.dumps({"version": 1, "plugins": {}}), encoding="utf-8")


def skills_section(workspace: Path, home: Path) -> None:
    _user_config(home, '[skills]\nimport_from = ["claude"]\n')


def skill_settings(workspace: Path, home: Path) -> None:
    (home / "settings.json").write_text(json.dumps({"skills": {"enabled": {"x": False}}}), encoding="utf-8")


def philont_section(workspace: Path, home: Path) -> None:
    _user_config(home, "[philont]\nplugins = false\n")


def philont_plugin(workspace: Path, home: Path) -> None:
    root = workspace / ".philont" / "plugins" / "hello"
    root.mkdir(parents=True)
    (root / "plugin.json").write_text(json.dumps({"id": "hello", "main": "index.py"}), encoding="utf-8")
    (root / "index.py").write_text("def register(ctx):\n    pass\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("declare", "loaded"),
    [
        (
            mcp_server,
            {
                "kairox_mcp.config",
                "kairox_mcp.sources",
                "kairox_mcp.lifecycle",
                "kairox_mcp.events",
                "kairox_mcp._sdklog",
                "kairox_mcp.transport",
                "kairox_stdio.stdio",
            },
        ),
        (mcp_json, {"kairox_mcp.config", "kairox_mcp.sources"}),
        (
            lsp_server,
            {
                "kairox_lsp._config",
                "kairox_lsp._lifecycle",
                "kairox_lsp._events",
                "kairox_peer._config",
                "kairox_peer._managed",
            },
        ),
        (
            dap_server,
            {
                "kairox_dap._config",
                "kairox_dap._lifecycle",
                "kairox_dap._events",
                "kairox_dap._tools",
                "kairox_peer._config",
                "kairox_peer._managed",
            },
        ),
        (
            skill_file,
            {
                "yaml",
                "kairox_skills._simpleyaml",
                "kairox_skills._format",
                "kairox_skills._structure",
                "kairox_skills._sources",
                "kairox_skills._cache",
            },
        ),
        (claude_command, {"kairox_skills._format", "kairox_skills._structure", "kairox_skills._imports"}),
        (skills_section, {"kairox_skills._config"}),
        (skill_settings, {"kairox_skills._settings"}),
        (
            bundle_dir,
            {
                "kairox_manifests.config",
                "kairox_manifests.discovery",
                "kairox_manifests.settings",
                "kairox_manifests.model",
                "kairox_manifests.formats._meta",
                "kairox_manifests.inventory",
            },
        ),
        (plugin_settings, {"kairox_manifests.discovery", "kairox_manifests.settings"}),
        (philont_section, {"kairox_philont.config"}),
        (
            philont_plugin,
            {
                "kairox_philont.manifest",
                "kairox_manifests.discovery",
                "kairox_manifests.model",
            },
        ),
    ],
    ids=lambda v: getattr(v, "__name__", "") if callable(v) else "",
)
def test_what_is_declared_brings_its_modules(
    dirs: tuple[Path, Path], declare: Callable[[Path, Path], None], loaded: set[str]
) -> None:
    declare(*dirs)
    assert opened(*dirs) >= loaded
