"""The kernel's SkillRegistry: scopes, shadowing, namespaces, sessions, settings,
matching, arguments, tools and the model pin."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs
import pytest

from kairox import SkillsChanged
from kairox._events import EventBus
from kairox._tool_registry import ToolRegistry
from kairox._tools import FunctionTool, ToolResult, ToolSpec
from kairox.ext import (
    SkillArgument,
    SkillDef,
    SkillError,
    SkillLoadFailed,
    SkillLoadWarning,
    SkillRegistry,
    SkillScope,
    SkillsScanned,
    SkillWarning,
    render_template,
)
from kairox_testing import EventLog

USER, WORKSPACE, SESSION, PLUGIN = SkillScope.USER, SkillScope.WORKSPACE, SkillScope.SESSION, SkillScope.PLUGIN


def skill(
    name: str,
    scope: SkillScope = USER,
    body: str = "",
    *,
    namespace: str | None = None,
    path: Path | None = None,
    **kw: Any,
) -> SkillDef:
    description = kw.pop("description", f"{name} skill")
    made = SkillDef.create(name, description, body, scope=scope, **kw)
    return SkillDef(made.frontmatter, scope, namespace=namespace, body_text=body, path=path)


class ListSource:
    def __init__(self, name: str, items: Iterable[Any]) -> None:
        self.name = name
        self.items = list(items)

    def scan(self, runtime: object) -> list[Any]:
        return self.items


class BrokenSource:
    name = "broken"

    def scan(self, runtime: object) -> list[Any]:
        raise OSError("disk on fire")


def winner(reg: SkillRegistry, name: str, session: str | None = None) -> SkillDef:
    found = reg.get(name, session_id=session)
    assert found is not None, name
    return found


async def registry_with(*sources: Any, events: EventBus | None = None) -> SkillRegistry:
    reg = SkillRegistry(events)
    await reg.scan(sources, None)
    return reg


# -- scopes and shadowing ------------------------------------------------------------------


@pytest.mark.anyio
async def test_workspace_beats_user_and_remembers_what_it_shadows() -> None:
    reg = await registry_with(
        ListSource("user", [skill("review", USER, "u"), skill("only-user", USER)]),
        ListSource("workspace", [skill("review", WORKSPACE, "w")]),
    )
    assert [s.name for s in reg.skills()] == ["only-user", "review"]
    winner = reg.get("review")
    assert winner is not None and winner.scope is WORKSPACE and winner.body() == "w"
    assert [s.scope for s in reg.shadowed("review")] == [USER]
    assert reg.shadowed("only-user") == ()
    assert len(reg) == 2


@pytest.mark.anyio
async def test_order_of_sources_does_not_decide_precedence() -> None:
    reg = await registry_with(
        ListSource("a-workspace", [skill("x", WORKSPACE)]),
        ListSource("z-user", [skill("x", USER)]),
    )
    assert winner(reg, "x").scope is WORKSPACE


@pytest.mark.anyio
async def test_same_scope_duplicate_first_wins_with_a_warning() -> None:
    a = skill("x", USER, "first", path=Path("/u/a.md"))
    b = skill("x", USER, "second", path=Path("/u/b.md"))
    reg = await registry_with(ListSource("user", [a, b]))
    assert winner(reg, "x").body() == "first"
    assert [w.file for w in reg.warnings] == ["/u/b.md"]
    assert "defined twice in the user scope" in reg.warnings[0].message


@pytest.mark.anyio
async def test_session_skills_beat_everything_only_in_their_session() -> None:
    reg = await registry_with(ListSource("workspace", [skill("review", WORKSPACE, "w")]))
    added = reg.add_session_skill("s1", skill("review", USER, "mine"))
    assert added.scope is SESSION and added.source == "session"
    assert winner(reg, "review", "s1").body() == "mine"
    assert winner(reg, "review", "s2").body() == "w"
    assert winner(reg, "review").body() == "w"
    assert [s.scope for s in reg.shadowed("review", session_id="s1")] == [WORKSPACE]
    reg.end_session("s1")
    assert winner(reg, "review", "s1").body() == "w"
    assert reg.session_skills("s1") == []


@pytest.mark.anyio
async def test_plugin_skills_are_namespaced_and_never_clash() -> None:
    reg = await registry_with(
        ListSource("user", [skill("lint", USER)]),
        ListSource("plugin:acme", [skill("lint", PLUGIN, namespace="acme")]),
        ListSource("plugin:other", [skill("lint", PLUGIN, namespace="other")]),
    )
    assert [s.name for s in reg.skills()] == ["acme:lint", "lint", "other:lint"]
    assert all(reg.shadowed(n) == () for n in ("acme:lint", "lint", "other:lint"))


@pytest.mark.anyio
async def test_add_and_remove_a_plugin_source_later() -> None:
    log = EventLog()
    bus = EventBus()
    log.attach(bus)
    reg = await registry_with(ListSource("user", [skill("a")]), events=bus)
    await reg.add_source(ListSource("plugin:acme", [skill("b", PLUGIN, namespace="acme")]))
    assert [s.name for s in reg.skills()] == ["a", "acme:b"]
    reg.remove_source("plugin:acme")
    assert [s.name for s in reg.skills()] == ["a"]
    changes = log.of(SkillsChanged)
    assert [(c.added, c.removed) for c in changes] == [(("acme:b",), ()), ((), ("acme:b",))]


@pytest.mark.anyio
async def test_a_failing_source_is_an_error_and_the_others_load() -> None:
    log = EventLog()
    bus = EventBus()
    log.attach(bus)
    bad = SkillError("frontmatter is not valid YAML: x", file="/w/bad.md", line=3, field="tools")
    warned = SkillDef(
        skill("warned").frontmatter, USER, warnings=(SkillWarning("odd", file="/w/w.md", line=2, field="name"),)
    )
    reg = await registry_with(BrokenSource(), ListSource("user", [skill("ok"), bad, warned, "junk"]), events=bus)
    assert [s.name for s in reg.skills()] == ["ok", "warned"]
    assert [str(e) for e in reg.errors] == [
        "skill source broken failed: OSError: disk on fire",
        "/w/bad.md:3: tools: frontmatter is not valid YAML: x",
        "skill source user yielded str, not a SkillDef",
    ]
    assert [str(w) for w in reg.warnings] == ["/w/w.md:2: name: odd"]
    assert [(e.file, e.line, e.field) for e in log.of(SkillLoadFailed)][1] == ("/w/bad.md", 3, "tools")
    assert [e.warning for e in log.of(SkillLoadWarning)] == ["odd"]
    scanned = log.of(SkillsScanned)
    assert [(s.sources, s.skills, s.errors, s.warnings) for s in scanned] == [(("broken", "user"), 2, 3, 1)]


@pytest.mark.anyio
async def test_rescan_replaces_what_a_source_found() -> None:
    source = ListSource("user", [skill("a"), skill("b")])
    reg = await registry_with(source)
    source.items = [skill("b"), SkillError("gone bad", file="/x.md")]
    await reg.rescan()
    assert [s.name for s in reg.skills()] == ["b"]
    assert [e.message for e in reg.errors] == ["gone bad"]


# -- settings ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_settings_disable_by_name_workspace_over_user() -> None:
    reg = await registry_with(ListSource("user", [skill("a"), skill("b"), skill("c")]))
    reg.set_overrides(USER, {"a": False, "b": False})
    reg.set_overrides(WORKSPACE, {"b": True})
    assert reg.enabled_state("a") == (False, USER)
    assert reg.enabled_state("b") == (True, WORKSPACE)
    assert reg.enabled_state("c") == (True, None)
    assert [s.name for s in reg.skills()] == ["b", "c"]
    assert [s.name for s in reg.skills(include_disabled=True)] == ["a", "b", "c"]
    assert len(reg) == 2
    with pytest.raises(SkillError, match="skill a is disabled in the user settings"):
        reg.prepare("a", tools=None)


@pytest.mark.anyio
async def test_list_by_scope() -> None:
    reg = await registry_with(ListSource("u", [skill("a", USER)]), ListSource("w", [skill("b", WORKSPACE)]))
    assert [s.name for s in reg.skills(scope="workspace")] == ["b"]
    reg.add_session_skill("s", skill("c"))
    assert [s.name for s in reg.skills(scope=SESSION, session_id="s")] == ["c"]


# -- matching -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_match_ranks_by_keywords_name_and_description() -> None:
    reg = await registry_with(
        ListSource(
            "user",
            [
                skill("pr-review", keywords=("review", "pull request"), description="Review a pull request"),
                skill("pdf", keywords=("pdf", "forms"), description="Fill PDF forms and extract text"),
                skill("commit", description="Write a commit message for staged changes"),
                skill("unrelated", description="Bake bread"),
            ],
        )
    )
    matches = reg.match("Please review this pull request and then write the commit message")
    assert [m.skill.name for m in matches] == ["pr-review", "commit"]
    top, second = matches
    assert top.score == pytest.approx(1.5 + 3 + 3 + 1.5)
    assert top.reasons == (
        "name words 'review'",
        "keyword 'review'",
        "keyword 'pull request'",
        "description words 'review', 'pull', 'request'",
    )
    assert second.score == pytest.approx(4 + 1.5)
    assert second.reasons == ("name 'commit'", "description words 'write', 'commit', 'message'")
    assert reg.match("fill the pdf forms")[0].skill.name == "pdf"
    assert reg.match("nothing relevant here") == []


@pytest.mark.anyio
async def test_match_by_explicit_name_limit_and_disabled() -> None:
    reg = await registry_with(ListSource("user", [skill(f"s{i}", keywords=("deploy",)) for i in range(5)]))
    assert [m.skill.name for m in reg.match("deploy now", limit=2)] == ["s0", "s1"]
    first = reg.match("run /s3 please")[0]
    assert (first.skill.name, first.reasons[0]) == ("s3", "invoked as /s3")
    reg.set_overrides(USER, {"s0": False})
    assert "s0" not in [m.skill.name for m in reg.match("deploy", limit=0)]


@pytest.mark.anyio
async def test_match_sees_session_skills() -> None:
    reg = await registry_with(ListSource("user", []))
    reg.add_session_skill("s", skill("triage", keywords=("incident",)))
    assert reg.match("an incident happened") == []
    assert [m.skill.name for m in reg.match("an incident happened", session_id="s")] == ["triage"]


# -- arguments ------------------------------------------------------------------------------------

ARGS = (
    SkillArgument("pr", "integer", "The PR number", required=True),
    SkillArgument("base", "string", default="main", choices=("main", "develop")),
    SkillArgument("ratio", "number"),
    SkillArgument("draft", "boolean", default=False),
)
BODY = "PR {{ pr }} vs {{base}}; ratio={{ ratio }} draft={{ draft }} \\{{ pr }} {{ other }}"


def test_arguments_are_validated_and_rendered() -> None:
    s = skill("r", body=BODY, arguments=ARGS)
    assert s.render({"pr": "42", "ratio": "0.5", "draft": "yes"}) == (
        "PR 42 vs main; ratio=0.5 draft=true {{ pr }} {{ other }}"
    )
    assert s.bind({"pr": 7, "base": "develop"}) == {"pr": 7, "base": "develop", "ratio": None, "draft": False}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({}, "skill r: missing required argument(s): pr (integer: The PR number)"),
        ({"pr": "x"}, "skill r: argument 'pr' expects an integer, got 'x'"),
        ({"pr": True}, "skill r: argument 'pr' expects an integer, got True"),
        ({"pr": 1, "ratio": "fast"}, "skill r: argument 'ratio' expects a number, got 'fast'"),
        ({"pr": 1, "draft": "perhaps"}, "skill r: argument 'draft' expects a boolean (true or false), got 'perhaps'"),
        ({"pr": 1, "base": "feature"}, "skill r: argument 'base' expects one of 'main', 'develop', got 'feature'"),
        ({"pr": 1, "colour": "red"}, "skill r: unknown argument(s) 'colour'; it declares pr, base, ratio, draft"),
    ],
)
def test_argument_errors_are_clear(given: dict[str, Any], message: str) -> None:
    s = skill("r", body=BODY, arguments=ARGS)
    with pytest.raises(SkillError) as info:
        s.render(given)
    assert info.value.message == message


def test_template_escapes_and_unknown_placeholders() -> None:
    assert render_template("a {{x}} \\{{x}} {{ y }} {{  x  }}", {"x": 1}) == "a 1 {{x}} {{ y }} 1"
    assert render_template("{{ x }}", {"x": None}) == ""


def test_a_skill_renders_with_its_own_template_else_placeholders_only() -> None:
    """The kernel knows ``{{ name }}`` only: ``$ARGUMENTS`` is the syntax a source gives
    (kairox-skills for Claude's formats) through :attr:`SkillDef.template`."""
    arguments = (SkillArgument("ARGUMENTS"),)
    plain = skill("p", body="Fix {{ ARGUMENTS }}: $ARGUMENTS", arguments=arguments)
    assert plain.render({"ARGUMENTS": "1"}) == "Fix 1: $ARGUMENTS"
    shouted = attrs.evolve(plain, template=lambda body, values: body.upper() + str(values["ARGUMENTS"]))
    assert shouted.render({"ARGUMENTS": "1"}) == "FIX {{ ARGUMENTS }}: $ARGUMENTS1"
    registry = SkillRegistry()
    registry.add_session_skill("s1", shouted)
    assert registry.prepare("p", {"ARGUMENTS": "2"}, tools=None, session_id="s1").text.endswith("$ARGUMENTS2")


# -- tools and model ---------------------------------------------------------------------------------


def _tool(tool_id: str) -> FunctionTool:
    return FunctionTool(ToolSpec(tool_id, description=tool_id), lambda: ToolResult.from_text("ok"))


@pytest.mark.anyio
async def test_prepare_requires_every_listed_tool() -> None:
    tools = ToolRegistry()
    tools.add(_tool("fs.read"), provider="p")
    reg = await registry_with(
        ListSource("user", [skill("r", body="go", tools=("fs.read", "search.grep", "git.log"), model="fast")])
    )
    with pytest.raises(SkillError) as info:
        reg.prepare("r", tools=tools)
    assert info.value.message == "skill r needs tools that are not registered: search.grep, git.log"
    assert info.value.field == "tools"
    tools.add(_tool("search.grep"), provider="p")
    tools.add(_tool("git.log"), provider="p")
    ready = reg.prepare("r", tools=tools)
    assert (ready.text, ready.model, ready.tools) == ("go", "fast", ("fs.read", "search.grep", "git.log"))


@pytest.mark.anyio
async def test_tools_may_be_named_by_exported_name() -> None:
    tools = ToolRegistry()
    tools.add(_tool("fs.read"), provider="p")
    reg = await registry_with(ListSource("user", [skill("r", tools=("fs_read",))]))
    assert reg.prepare("r", tools=tools).tools == ("fs_read",)


@pytest.mark.anyio
async def test_unknown_skill_suggests_a_close_name() -> None:
    reg = await registry_with(ListSource("user", [skill("pr-review")]))
    with pytest.raises(SkillError, match="no skill named 'pr-reveiw'; did you mean 'pr-review'"):
        reg.prepare("pr-reveiw", tools=None)


# -- file-backed skills -----------------------------------------------------------------------------------


def test_body_is_read_when_used(tmp_path: Path) -> None:
    path = tmp_path / "s.md"
    path.write_text("---\nname: s\ndescription: d\n---\nfirst\n")
    s = SkillDef(skill("s").frontmatter, USER, path=path)
    assert s.kind == "file" and s.root is None and s.resources() == {}
    assert s.body() == "first\n"
    path.write_text("---\nname: s\ndescription: d\n---\nsecond\n")
    assert s.body() == "second\n"
    path.unlink()
    with pytest.raises(SkillError, match="cannot read the skill"):
        s.body()


def test_folder_skill_knows_its_resources(tmp_path: Path) -> None:
    root = tmp_path / "pdf"
    for rel in ["SKILL.md", "scripts/fill.py", "references/forms.md", "assets/logo.png", "templates/a.txt", "NOTE"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    s = SkillDef(skill("pdf").frontmatter, USER, path=root / "SKILL.md")
    assert (s.kind, s.root) == ("folder", root)
    assert s.resources() == {
        ".": ["NOTE"],
        "assets": ["assets/logo.png"],
        "references": ["references/forms.md"],
        "scripts": ["scripts/fill.py"],
        "templates": ["templates/a.txt"],
    }
