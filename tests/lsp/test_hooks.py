"""The plugin's hooks: cheap to import, register the section and the provider."""

from __future__ import annotations

from pathlib import Path

import pytest
from shared_helpers import loaded_after

import kairox_lsp.hooks
from kairox import Runtime, ServerState
from kairox_lsp._config import LspServerConfig
from kairox_lsp._provider import LspToolProvider
from kairox_peer import ToolInputError


def test_importing_hooks_loads_none_of_the_work_modules() -> None:
    loaded = loaded_after("import kairox_lsp.hooks", "kairox_lsp", "kairox_peer", "mcp", "httpx", "pydantic", "anyio")
    assert loaded == ["kairox_lsp", "kairox_lsp.hooks"]


def test_hooks_register_section_and_provider(tmp_path: Path) -> None:
    rt = Runtime(tmp_path, home=tmp_path / "h", load_entrypoints=False, plugins=[kairox_lsp.hooks], config_files=[])
    assert "lsp_servers" in rt.config_sections
    assert rt.config_sections["lsp_servers"].entries is True
    assert isinstance(rt.providers.get("lsp"), LspToolProvider)
    assert rt.config.section("lsp_servers") == {}


def test_routing_by_pattern_and_name(tmp_path: Path) -> None:
    provider = LspToolProvider(workspace=tmp_path, env={})
    provider.add_server("py", LspServerConfig(command="a", languages=["python"]))
    provider.add_server("ts", LspServerConfig(command="b", file_patterns=["web/**/*.ts", "*.tsx"]))
    assert provider.server_for(tmp_path / "pkg" / "m.py").name == "py"
    assert provider.server_for(tmp_path / "web" / "app" / "x.ts").name == "ts"
    assert provider.server_for(tmp_path / "ui.tsx").name == "ts"
    assert provider.server_for(Path("/elsewhere/lib.pyi")).name == "py"
    assert provider.server_for(None, "ts").name == "ts"
    with pytest.raises(ToolInputError, match=r"no language server handles notes\.txt"):
        provider.server_for(tmp_path / "notes.txt")
    with pytest.raises(ToolInputError, match="no language server named 'rust'"):
        provider.server_for(None, "rust")
    with pytest.raises(ValueError, match="exists already"):
        provider.add_server("py", LspServerConfig(command="c"))
    assert [s.state for s in provider.status()] == [ServerState.STOPPED, ServerState.STOPPED]
