"""The ``[serve]`` section decides what the gateway exposes and advertises (the gateway's
``Server`` with the SDK's in-process client; the built-in tools and a skill folder)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
from mcp.shared.exceptions import MCPError
from serve_helpers import SKILL
from shared_helpers import open_with_builtin_tools

import kairox_serve.hooks
import kairox_skills.hooks
from kairox import FunctionTool, ToolSpec
from kairox.ext import BrokenSection, SkillDef, SkillScope
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


async def test_a_bad_section_is_a_config_error_and_nothing_is_served_on_defaults(tmp_path: Path) -> None:
    opener = served(tmp_path, {"tools": ["fs_*", 3], "unknown": 1})
    async with opener as rt:
        errors = [str(e) for e in rt.config.errors]
        assert any(e.startswith("kairox.toml: serve") for e in errors), errors
        with pytest.raises(BrokenSection, match=r"kairox\.toml: serve"):
            serve_config(rt)


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


#: a skill [serve] hides; its name and description must reach no client
SECRET_SKILL = "---\nname: secret-plan\ndescription: CANARY merger plans\n---\nthe merger is on\n"


async def _answer(call: Any) -> str:
    """What a request answered: its result as JSON, or its error (code and message)."""
    try:
        result = await call
    except MCPError as exc:
        return f"error {exc.error.code}: {exc.error.message}"
    return str(result.model_dump_json(by_alias=True, exclude_none=True))


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed:mcp.MCPDeprecationWarning")
async def test_what_serve_hides_no_route_tells(tmp_path: Path) -> None:
    """The attack: a client asks every route of the gateway about a tool and a skill that
    ``[serve]`` hides (``deny_tools``, ``deny_skills``): the lists, a call by exported name and
    by canonical id, the search tools with the hidden names as queries, every tool taking a
    ``query``, prompts/get, resources/read, resource templates and completions. Each answers
    as it does for a name that never existed, and no answer carries a hidden name or text."""
    secret = tmp_path / "ws" / ".kairox" / "skills" / "secret-plan"
    opener = served(tmp_path, {"deny_tools": ["shell_*"], "deny_skills": ["secret-*"]})
    secret.mkdir(parents=True)
    (secret / "SKILL.md").write_text(SECRET_SKILL, encoding="utf-8")
    async with opener as rt:
        hidden_tool = rt.tools.get_spec("shell.exec")
        assert rt.skills.get("secret-plan") is not None  # both exist: [serve] alone hides them
        canaries = ["shell_exec", "shell.exec", hidden_tool.description, "secret-plan", "CANARY", "merger"]
        gateway = Gateway(rt, serve_config(rt))
        async with gateway.running(), Client(gateway.server, mode="legacy") as client:
            seen: list[str] = []

            async def same_as_missing(hidden: str, missing: str, ask: Any) -> None:
                """``ask(name)`` answers for ``hidden`` what it answers for ``missing``."""
                told, untold = await _answer(ask(hidden)), await _answer(ask(missing))
                assert told == untold.replace(missing, hidden), (told, untold)
                seen.append(told.replace(hidden, "<the name asked>"))

            listed = (await client.list_tools()).tools
            seen.append(str([t.model_dump_json() for t in listed]))
            await same_as_missing("shell_exec", "no_such_tool", lambda n: client.call_tool(n, {"command": "id"}))
            await same_as_missing("shell.exec", "no.such.tool", lambda n: client.call_tool(n, {"command": "id"}))
            for search in ("tools_search", "skills_search"):  # the kernel's search tools
                for word in ("shell", "exec", "secret", "CANARY merger"):
                    await same_as_missing(search, "no_such_search", lambda n, w=word: client.call_tool(n, {"query": w}))
            for tool in listed:  # any other tool that searches
                if "query" in (tool.input_schema.get("properties") or {}):
                    for word in ("shell", "secret", "CANARY"):
                        seen.append(await _answer(client.call_tool(tool.name, {"query": word})))
            seen.append(await _answer(client.list_prompts()))
            await same_as_missing("secret-plan", "no-such-skill", lambda n: client.get_prompt(n, {}))
            seen.append(await _answer(client.list_resources()))
            await same_as_missing(
                "secret-plan", "no-such-skill", lambda n: client.read_resource(f"skill://{n}/SKILL.md")
            )
            seen.append(await _answer(client.list_resource_templates()))
            await same_as_missing(
                "secret-plan", "no-such-skill", lambda n: client.subscribe_resource(f"skill://{n}/SKILL.md")
            )
            await same_as_missing(
                "secret-plan",
                "no-such-skill",
                lambda n: client.complete(types.PromptReference(name=n), {"name": "who", "value": ""}),
            )
    assert "greet" in " ".join(seen)  # what is exposed is there
    for answer in seen:
        for canary in canaries:
            assert canary not in answer, (canary, answer)


class _Skills:
    """A skill source of the skills it is given (a plugin's bundled skills, say)."""

    def __init__(self, name: str, *skills: SkillDef) -> None:
        self.name = name
        self.skills = skills

    def scan(self, runtime: Any) -> list[SkillDef]:
        return list(self.skills)


async def test_a_change_of_what_serve_hides_is_not_announced(tmp_path: Path) -> None:
    """A hidden tool or skill that comes is no ``list_changed`` (a client would learn that
    something it cannot see changed); one it can see is. A listen stream keeps the order of
    its events, so the first ones, those of the visible skill, say the hidden ones sent none
    (the gateway hears of each change in a task; a skill source's scan runs on a thread, so
    those of the hidden ones have run before the visible skill is there)."""
    opener = served(tmp_path, {"deny_tools": ["shell_*"], "deny_skills": ["secret-*"]})
    async with opener as rt:
        gateway = Gateway(rt, serve_config(rt))
        async with gateway.running(), Client(gateway.server, mode="auto") as client:
            kinds = {"tools_list_changed": True, "prompts_list_changed": True, "resources_list_changed": True}
            async with client.listen(**kinds) as sub:
                hidden = ToolSpec(id="shell.extra", description="CANARY hidden tool")
                rt.tools.add(FunctionTool(hidden, lambda: "x"), provider="extra")
                secret = SkillDef.create("secret-plan", "CANARY merger plans", scope=SkillScope.WORKSPACE)
                await rt.skills.add_source(_Skills("secret", secret), rt)  # (its scan runs on a thread)
                assert rt.skills.get("secret-plan") is not None and "shell_extra" in rt.tools
                shown = SkillDef.create("shown", "seen", scope=SkillScope.WORKSPACE)
                await rt.skills.add_source(_Skills("shown", shown), rt)
                with anyio.fail_after(10):
                    first = [type(await sub.__anext__()) for _ in range(2)]
                rt.tools.add(FunctionTool(ToolSpec(id="fs.extra", description="seen"), lambda: "x"), provider="more")
                with anyio.fail_after(10):
                    then = type(await sub.__anext__())
            assert "fs_extra" in {t.name for t in (await client.list_tools()).tools}
            assert "shown" in {p.name for p in (await client.list_prompts()).prompts}
    assert first == [PromptsListChanged, ResourcesListChanged]  # the visible skill's, nothing before
    assert then is ToolsListChanged
