"""The ``[serve]`` section decides what the gateway exposes and advertises (the gateway's
``Server`` with the SDK's in-process client; the built-in tools and a skill folder)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from serve_helpers import SKILL
from shared_helpers import open_with_builtin_tools

import kairox_serve.hooks
import kairox_skills.hooks
from kairox_serve.config import ServeConfig
from kairox_serve.gateway import Gateway
from kairox_serve.runtime import serve_config

pytestmark = pytest.mark.anyio


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".kairox" / "skills" / "greet").mkdir(parents=True)
    (ws / ".kairox" / "skills" / "greet" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (ws / ".kairox" / "skills" / "other").mkdir(parents=True)
    (ws / ".kairox" / "skills" / "other" / "SKILL.md").write_text(
        "---\nname: other\ndescription: Another skill\n---\nbody\n", encoding="utf-8"
    )
    return ws


def served(tmp_path: Path, serve: dict[str, Any]) -> Any:
    """``Runtime.open`` of the workspace with the built-in tools, skills and ``[serve]`` = ``serve``."""
    docs = [("kairox.toml", {"serve": serve, "policy": {"include_temp_dir": False}})]
    return open_with_builtin_tools(workspace(tmp_path), kairox_serve.hooks, kairox_skills.hooks, documents=docs)


async def test_allow_deny_and_advertised_identity(tmp_path: Path) -> None:
    serve = {
        "name": "team-tools",
        "version": "9.9",
        "instructions": "Use fs_read.",
        "tools": ["fs_*", "search.*"],
        "deny_tools": ["fs_write"],
        "skills": ["greet"],
    }
    opener = served(tmp_path, serve)
    async with opener as rt:
        config = serve_config(rt)
        assert config.name == "team-tools" and config.deny_tools == ["fs_write"]
        gateway = Gateway(rt, config)
        async with gateway.running(), Client(gateway.server, mode="legacy") as client:
            assert client.server_info is not None
            assert (client.server_info.name, client.server_info.version) == ("team-tools", "9.9")
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {"fs_read", "fs_list", "search_grep"}  # fs_write denied; shell_exec not allowed
            with pytest.raises(MCPError, match="Unknown tool: fs_write"):
                await client.call_tool("fs_write", {"path": "x", "content": "y"})
            with pytest.raises(MCPError, match="Unknown tool: shell_exec"):
                await client.call_tool("shell_exec", {"command": "true"})
            assert [p.name for p in (await client.list_prompts()).prompts] == ["greet"]
            with pytest.raises(MCPError, match="Unknown prompt"):
                await client.get_prompt("other", {})
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            assert uris == ["skill://greet/SKILL.md"]


async def test_prompts_and_resources_off(tmp_path: Path) -> None:
    opener = served(tmp_path, {"prompts": False, "resources": False})
    async with opener as rt:
        gateway = Gateway(rt, serve_config(rt))
        async with gateway.running(), Client(gateway.server, mode="legacy") as client:
            caps = client.server_capabilities
            assert caps.prompts is None and caps.resources is None and caps.tools is not None
            assert "shell_exec" in {t.name for t in (await client.list_tools()).tools}


async def test_a_bad_section_is_a_config_error_and_defaults_apply(tmp_path: Path) -> None:
    opener = served(tmp_path, {"tools": ["fs_*", 3], "unknown": 1})
    async with opener as rt:
        errors = [str(e) for e in rt.config.errors]
        assert any(e.startswith("kairox.toml: serve") for e in errors), errors
        assert serve_config(rt) == ServeConfig()


def test_importing_the_hooks_stays_cheap() -> None:
    code = "import sys, kairox_serve.hooks; print(sorted(m for m in ('mcp', 'starlette', 'uvicorn', 'httpx2') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


async def test_a_symlink_out_of_the_skill_is_neither_listed_nor_read(tmp_path: Path) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("not for the client\n" * 50)
    opener = served(tmp_path, {})
    refs = tmp_path / "ws" / ".kairox" / "skills" / "greet" / "references"
    refs.mkdir()
    (refs / "pw.md").symlink_to(secret)
    (refs / "notes.md").write_text("# fine\n")
    async with opener as rt:
        gateway = Gateway(rt, serve_config(rt))
        async with gateway.running(), Client(gateway.server, mode="legacy") as client:
            listed = {str(r.uri): r for r in (await client.list_resources()).resources}
            assert "skill://greet/references/notes.md" in listed
            assert "skill://greet/references/pw.md" not in listed  # its size would tell about the target
            with pytest.raises(MCPError, match="no file"):
                await client.read_resource("skill://greet/references/pw.md")
