"""Agents: a registry from bundles' ``agents/``, ``.claude/agents/`` and ``~/.claude/agents/``;
the agents index in the turn context; ``kairox_agents.prepare(session, name)``; ``kairox agents list|show``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import attrs
import pytest

import kairox
import kairox_agents.hooks
from kairox import FunctionTool, ToolSpec
from kairox_agents import (
    AgentError,
    AgentPrepared,
    agents_index,
    agents_of,
    available_agents_xml,
    claude_tool_ids,
    prepare,
)
from kairox_testing import EventLog, InMemoryToolProvider, KairoxHarness

pytestmark = pytest.mark.anyio

BUNDLE = Path(__file__).resolve().parent.parent / "fixtures" / "bundles" / "claude" / "agents-and-styles"
PLUGIN = "agents-and-styles"


def install_bundle(harness: KairoxHarness, where: str = "user") -> Path:
    base = harness.home / "plugins" if where == "user" else harness.workspace / ".kairox" / "plugins"
    base.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copytree(BUNDLE, base / PLUGIN))


def write_agent(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def agent_text(name: str, description: str, *, tools: str | None = None, model: str | None = None) -> str:
    lines = ["---", f"name: {name}", f"description: {description}"]
    if tools is not None:
        lines.append(f"tools: {tools}")
    if model is not None:
        lines.append(f"model: {model}")
    return "\n".join([*lines, "---", f"You are {name}.", ""])


def builtin_tools() -> InMemoryToolProvider:
    """Tools under the ids of kairox-tools' built-ins, so Claude's names have something to resolve to."""
    specs = [("fs.read", "read"), ("fs.list", "read"), ("search.grep", "read"), ("shell.exec", "execute")]
    return InMemoryToolProvider(
        "builtin",
        [FunctionTool(ToolSpec(i, i, domain="local", capability=c), lambda **kw: "ok") for i, c in specs],
    )


# -- the registry -----------------------------------------------------------------------------


async def test_agents_come_from_bundles_the_workspace_and_the_user(
    kairox_harness: KairoxHarness, user_home: Path
) -> None:
    install_bundle(kairox_harness)
    ws_agents = kairox_harness.workspace / ".claude" / "agents"
    user_agents = user_home / ".claude" / "agents"
    write_agent(ws_agents, "planner", agent_text("planner", "Plans the work (workspace)"))
    write_agent(user_agents, "planner", agent_text("planner", "Plans the work (user)"))
    write_agent(user_agents / "nested", "scribe", agent_text("scribe", "Writes notes", tools="[]"))
    async with kairox_harness.open(start=False) as rt:
        agents = {a.name: a for a in agents_of(rt).all()}
        assert sorted(agents) == [f"{PLUGIN}:code-reviewer", f"{PLUGIN}:researcher", "planner", "scribe"]
        reviewer = agents[f"{PLUGIN}:code-reviewer"]
        assert (reviewer.scope, reviewer.source, reviewer.namespace) == ("plugin", f"plugin:{PLUGIN}", PLUGIN)
        assert reviewer.tools == ("Read", "Grep", "Glob", "Bash(git diff:*)")
        assert reviewer.model == "sonnet" and reviewer.extra == {"color": "blue"}
        assert reviewer.prompt.startswith("You are a senior code reviewer.")
        # the workspace's planner wins over the user's, which it shadows
        planner = agents["planner"]
        assert (planner.scope, planner.source, planner.description) == (
            "workspace",
            "claude-workspace",
            "Plans the work (workspace)",
        )
        assert [(s.scope, s.source) for s in agents_of(rt).shadowed("planner")] == [("user", "claude-user")]
        # `tools: []` is no tools; an omitted list is every tool
        assert agents["scribe"].tools == () and planner.tools is None
        # a plugin's agent is found by its own name too, when only one has it
        assert agents_of(rt).get("code-reviewer") is reviewer


async def test_a_description_that_is_not_valid_yaml_is_read_leniently(kairox_harness: KairoxHarness) -> None:
    install_bundle(kairox_harness)
    async with kairox_harness.open(start=False) as rt:
        researcher = agents_of(rt).require(f"{PLUGIN}:researcher")
    assert researcher.description.startswith(
        "Use this agent when the answer needs reading the web. Examples: <example>"
    )
    assert researcher.model is None  # `inherit` is the host's model
    assert researcher.disallowed_tools == ("Bash",)
    assert any("not valid YAML" in w and "researcher.md" in w for w in researcher.warnings)


async def test_a_broken_agent_file_is_reported_with_its_file_and_field(kairox_harness: KairoxHarness) -> None:
    folder = kairox_harness.workspace / ".claude" / "agents"
    bad = write_agent(folder, "nameless", "---\nname: nameless\ntools: Read\n---\nNo description.\n")
    worse = write_agent(folder, "listy", "---\nname: listy\ndescription: d\ntools: {Read: yes}\n---\nx\n")
    write_agent(folder, "fine", agent_text("fine", "Works"))
    async with kairox_harness.open(start=False) as rt:
        assert agents_of(rt).names() == ["fine"]
        errors = {e.file: e for e in agents_of(rt).errors}
    assert isinstance(errors[str(bad)], AgentError)
    assert errors[str(bad)].field == "description"
    assert errors[str(worse)].field == "tools"
    assert str(bad) in str(errors[str(bad)])


def test_a_bundle_agent_that_does_not_parse_fails_that_contribution_only(kairox_harness: KairoxHarness) -> None:
    root = install_bundle(kairox_harness)
    (root / "agents" / "broken.md").write_text("no frontmatter at all\n", encoding="utf-8")
    result = kairox_harness.cli("plugin", "inspect", PLUGIN, "--json")
    assert result.exit_code == 0, result.stderr
    items = {i["kind"] + "/" + i["name"]: i for i in json.loads(result.stdout)["inventory"]}
    assert items["agent/broken"]["loaded"] is False
    assert "broken.md" in items["agent/broken"]["detail"] and "frontmatter" in items["agent/broken"]["detail"]
    # the others load: agents and output styles are no longer "listed, not loaded"
    for key in ("agent/code-reviewer", "agent/review:researcher", "output_style/teaching", "output_style/terse"):
        assert items[key]["loaded"] is True, items[key]
        assert items[key]["detail"] == ""


async def test_an_untrusted_workspace_bundle_adds_no_agent_but_workspace_folders_are_read(
    kairox_harness: KairoxHarness,
) -> None:
    install_bundle(kairox_harness, where="workspace")
    write_agent(kairox_harness.workspace / ".claude" / "agents", "local", agent_text("local", "A workspace agent"))
    async with kairox_harness.open(start=False) as rt:
        assert agents_of(rt).names() == ["local"]  # markdown in the workspace runs nothing: read like its skills
    kairox_harness.trust()
    async with kairox_harness.open(start=False) as rt:
        assert agents_of(rt).names() == [f"{PLUGIN}:code-reviewer", f"{PLUGIN}:researcher", "local"]


async def test_user_agents_come_from_the_runtimes_home_only(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    other = tmp_path / "other-home"
    write_agent(other / ".claude" / "agents", "elsewhere", agent_text("elsewhere", "From another HOME"))
    env = {"KAIROX_HOME": str(kairox_harness.home), "HOME": str(other)}
    async with kairox.Runtime.open(
        kairox_harness.workspace,
        home=kairox_harness.home,
        env=env,
        load_entrypoints=False,
        start=False,
        plugins=[kairox_agents.hooks],
    ) as rt:
        assert agents_of(rt).names() == ["elsewhere"]
    # no HOME in the runtime's environment: no user folder is read (never the process's own home)
    async with kairox.Runtime.open(
        kairox_harness.workspace,
        home=kairox_harness.home,
        env={},
        load_entrypoints=False,
        start=False,
        plugins=[kairox_agents.hooks],
    ) as rt:
        assert agents_of(rt).names() == []


# -- the turn context -----------------------------------------------------------------------------


async def test_the_turn_context_carries_the_agents_index(kairox_harness: KairoxHarness) -> None:
    install_bundle(kairox_harness)
    async with kairox_harness.open() as rt, rt.session() as session:
        tc = await session.turn_context("review my change")
        index, omitted = agents_index(rt)
    entries = {a.name: a for a in index}
    reviewer = entries[f"{PLUGIN}:code-reviewer"]
    assert reviewer.tools == ["Read", "Grep", "Glob", "Bash(git diff:*)"]
    assert (reviewer.model, reviewer.scope) == ("sonnet", "plugin")
    assert reviewer.description == "Reviews a change for bugs and missing tests. Use after code changes."
    rendered = tc.render()
    assert "<available_agents>" in rendered and f"<name>{PLUGIN}:code-reviewer</name>" in rendered
    assert "<model>sonnet</model>" in rendered
    assert [(p.source, p.title) for p in tc.injected] == [("agents", "available agents")]
    assert omitted == 0
    assert attrs.asdict(index[0]) == {
        "name": f"{PLUGIN}:code-reviewer",
        "description": reviewer.description,
        "tools": ["Read", "Grep", "Glob", "Bash(git diff:*)"],
        "model": "sonnet",
        "scope": "plugin",
    }


async def test_the_agents_index_is_bounded(kairox_harness: KairoxHarness) -> None:
    folder = kairox_harness.workspace / ".claude" / "agents"
    long = "word " * 600
    for i in range(300):
        write_agent(folder, f"agent-{i:03}", agent_text(f"agent-{i:03}", f"Agent number {i}. {long}"))
    async with kairox_harness.open(start=False) as rt, rt.session() as session:
        tc = await session.turn_context("hi")
        index, omitted = agents_index(rt)
        unbounded, none_omitted = agents_index(rt, budget=None)
    assert len(unbounded) == 300 and none_omitted == 0
    assert 0 < len(index) < 300 and omitted == 300 - len(index)
    assert all(len(a.description) <= 1024 for a in index)
    assert len(available_agents_xml(index, omitted)) < 4 * 2_000 + 2_000  # about the budget's characters
    assert f"({omitted} more agents are available)" in tc.render()


# -- prepare ----------------------------------------------------------------------------------------


async def test_prepare_gives_a_definition_to_run(kairox_harness: KairoxHarness) -> None:
    install_bundle(kairox_harness)
    provider = builtin_tools()
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        log = EventLog(rt.events)
        async with rt.session() as session:
            run = prepare(session, f"{PLUGIN}:code-reviewer")
            assert run.prompt.startswith("You are a senior code reviewer.")
            assert run.model == "sonnet"
            # Claude's names resolve to the registered tools: Read, Grep, Glob, Bash(git diff:*)
            assert run.tools == ("fs.read", "search.grep", "fs.list", "shell.exec")
            assert run.unknown_tools == ()
            assert [t["name"] for t in run.model_tools()] == ["fs_read", "search_grep", "fs_list", "shell_exec"]

            researcher = prepare(session, "researcher")
            assert researcher.unknown_tools == ("WebFetch", "WebSearch")  # reported, not hidden
            assert researcher.tools == ("fs.read",)
            with pytest.raises(AgentError) as err:
                prepare(session, "researcher", strict=True)
            assert err.value.field == "tools" and "WebFetch, WebSearch" in str(err.value)
            assert str(err.value).startswith(f"{researcher.agent.file}: tools: ")
        prepared = log.of(AgentPrepared)
        assert [(e.agent, e.unknown_tools) for e in prepared] == [
            (f"{PLUGIN}:code-reviewer", ()),
            (f"{PLUGIN}:researcher", ("WebFetch", "WebSearch")),
        ]
        assert prepared[0].session_id == session.id


async def test_an_agent_without_a_tool_list_gets_every_tool_but_the_disallowed(kairox_harness: KairoxHarness) -> None:
    write_agent(
        kairox_harness.workspace / ".claude" / "agents",
        "helper",
        "---\nname: helper\ndescription: Helps\ndisallowedTools: Bash, Write\n---\nHelp.\n",
    )
    async with kairox_harness.open(plugins=[builtin_tools().plugin()]) as rt, rt.session() as session:
        run = prepare(session, "helper")
        assert "shell.exec" not in run.tools
        assert {"fs.read", "fs.list", "search.grep", "tools.search", "skills.search"} <= set(run.tools)
        assert run.model is None


async def test_an_unknown_agent_names_the_close_match(kairox_harness: KairoxHarness) -> None:
    install_bundle(kairox_harness)
    async with kairox_harness.open(start=False) as rt, rt.session() as session:
        with pytest.raises(AgentError, match=r"no agent named 'agents-and-styles:code-reviwer'; did you mean"):
            prepare(session, f"{PLUGIN}:code-reviwer")


def test_claude_tool_names_map_onto_kairox_ids() -> None:
    ids = ["fs.read", "fs.write", "git.status", "git.log", "kit.db.query", "shell.exec"]
    assert claude_tool_ids("Read", ids) == ["fs.read"]
    assert claude_tool_ids("Edit", ids) == ["fs.write"]
    assert claude_tool_ids("Bash(npm test:*)", ids) == ["shell.exec"]
    assert claude_tool_ids("fs.read", ids) == ["fs.read"]
    assert claude_tool_ids("mcp__git__status", ids) == ["git.status"]
    assert claude_tool_ids("mcp__git", ids) == ["git.status", "git.log"]
    assert claude_tool_ids("mcp__db__query", ids, namespace="kit") == ["kit.db.query"]
    assert claude_tool_ids("WebFetch", ids) == []
    assert claude_tool_ids("Grep", ids) == []  # Claude's name of a tool that is not registered


# -- the command line -------------------------------------------------------------------------------


def test_agents_list_shows_each_agents_origin(kairox_harness: KairoxHarness) -> None:
    install_bundle(kairox_harness)
    write_agent(
        kairox_harness.workspace / ".claude" / "agents", "planner", agent_text("planner", "Plans", tools="Read")
    )
    result = kairox_harness.cli("agents", "list", "--json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    origins = {a["name"]: (a["origin"], a["scope"]) for a in data["agents"]}
    assert origins == {
        f"{PLUGIN}:code-reviewer": (f"plugin:{PLUGIN}", "plugin"),
        f"{PLUGIN}:researcher": (f"plugin:{PLUGIN}", "plugin"),
        "planner": ("claude-workspace", "workspace"),
    }
    assert any("researcher.md" in w for w in data["warnings"])
    text = kairox_harness.cli("agents", "list")
    assert text.exit_code == 0
    assert f"{PLUGIN}:code-reviewer" in text.stdout and f"plugin:{PLUGIN}" in text.stdout
    assert "claude-workspace" in text.stdout and "Read, Grep, Glob, Bash(git diff:*)  model sonnet" in text.stdout


def test_agents_show_prints_the_definition_and_checks_tools(kairox_harness: KairoxHarness) -> None:
    install_bundle(kairox_harness)
    result = kairox_harness.cli("agents", "show", "researcher")
    assert result.exit_code == 0, result.stderr
    assert f"origin:      plugin:{PLUGIN} (plugin)" in result.stdout
    assert "You find facts and cite where each one came from." in result.stdout
    checked = kairox_harness.cli("agents", "show", "researcher", "--check-tools", "--json")
    assert checked.exit_code == 0, checked.stderr
    data = json.loads(checked.stdout)
    assert data["unknown_tools"] == ["WebFetch", "WebSearch", "Read"]  # no tool provider in this harness
    missing = kairox_harness.cli("agents", "show", "nobody")
    assert missing.exit_code == 1
    assert "no agent named 'nobody'" in missing.stderr
