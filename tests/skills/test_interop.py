"""Skills as other tools write them: ``disable-model-invocation``, plugin namespaces in
matching, Agent Skills name warnings, and the skill folders of Claude Code, Codex and the
``.agents`` convention (``[skills] import_from``).

``HOME`` is a temporary directory in every test here (``user_home`` in ``conftest.py``):
the real ``~/.claude``, ``~/.codex`` and ``~/.agents`` are never read."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skills_helpers import write

from kairox import ConfigError
from kairox.ext import SkillDef, SkillError, SkillScope
from kairox_skills import bundle_skill_source, render_claude, template_for
from kairox_skills._config import IMPORT_KINDS, import_kinds
from kairox_skills._imports import parse_command
from kairox_skills._structure import frontmatter_from_mapping
from kairox_testing import KairoxHarness


def md(name: str, description: str, extra: str = "", body: str = "Body.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


# -- disable-model-invocation ------------------------------------------------------------------


@pytest.fixture
def grill(kairox_harness: KairoxHarness) -> KairoxHarness:
    ws = kairox_harness.workspace / ".kairox" / "skills"
    write(
        ws / "grill-me" / "SKILL.md",
        md("grill-me", "Interview me relentlessly about a plan", "disable-model-invocation: true\n"),
    )
    write(ws / "plan-review" / "SKILL.md", md("plan-review", "Review a plan before it is built"))
    return kairox_harness


@pytest.mark.anyio
async def test_a_user_only_skill_is_listed_and_runnable_but_never_offered_to_the_model(grill: KairoxHarness) -> None:
    async with grill.open(start=False) as rt, rt.session() as session:
        grill_me = rt.skills.get("grill-me")
        assert grill_me is not None and not grill_me.model_invocable
        assert [s.name for s in rt.skills.skills()] == ["plan-review"]
        assert [s.name for s in rt.skills.skills(include_user_only=True)] == ["grill-me", "plan-review"]
        assert "grill-me" not in [m.skill.name for m in rt.skills.match("/grill-me about my plan")]
        context = await session.turn_context("grill me about my plan, review the plan")
        assert [e.name for e in context.skills] == ["plan-review"]
        assert [m.name for m in context.matched_skills] == ["plan-review"]
        assert "grill-me" not in context.render()
        assert rt.skills.prepare("grill-me", tools=None).text == "Body.\n"  # the user runs it
        assert len(rt.skills) == 2  # it counts as an effective skill


def test_user_only_skills_in_the_cli(grill: KairoxHarness) -> None:
    listed = grill.cli("skills", "list")
    assert listed.exit_code == 0
    assert "grill-me     workspace kairox  on  Interview me relentlessly about a plan (user only)" in listed.stdout
    data = json.loads(grill.cli("skills", "list", "--json").stdout)
    assert {s["name"]: s["model_invocable"] for s in data["skills"]} == {"grill-me": False, "plan-review": True}
    assert "user only (disable-model-invocation)" in grill.cli("skills", "show", "grill-me").stdout
    assert grill.cli("skills", "render", "grill-me", "--no-check-tools").stdout == "Body.\n"
    assert "grill-me" not in grill.cli("skills", "match", "/grill-me").stdout


@pytest.mark.parametrize(
    ("value", "expected", "warned"),
    [("true", True, False), ("false", False, False), ('"true"', True, False), ("yes please", False, True)],
)
def test_disable_model_invocation_values(value: str, expected: bool, warned: bool) -> None:
    fm, warnings = frontmatter_from_mapping(
        {"name": "x", "description": "d", "disable-model-invocation": __import__("yaml").safe_load(value)}
    )
    assert fm.disable_model_invocation is expected
    assert [w.field for w in warnings] == (["disable-model-invocation"] if warned else [])
    assert "disable-model-invocation" not in fm.extra


def test_the_scan_cache_keeps_disable_model_invocation() -> None:
    from kairox_skills._cache import _decode, _encode

    fm, _ = frontmatter_from_mapping({"name": "x", "description": "d", "disable-model-invocation": True})
    row = json.loads(json.dumps(_encode((fm, ()))))
    assert _decode("/x/SKILL.md", row) == (fm, ())
    plain, _ = frontmatter_from_mapping({"name": "x", "description": "d", "license": "MIT"})
    assert _decode("/x/SKILL.md", json.loads(json.dumps(_encode((plain, ()))))) == (plain, ())


# -- matching never scores a plugin namespace ----------------------------------------------------


@pytest.mark.anyio
async def test_the_plugin_namespace_is_not_scored(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle" / "skills"
    write(bundle / "swiftui-preview" / "SKILL.md", md("swiftui-preview", "Render SwiftUI previews"))
    write(bundle / "build" / "SKILL.md", md("build", "Compile the app with xcodebuild"))
    async with kairox_harness.open(start=False) as rt:
        await rt.skills.add_source(bundle_skill_source("build-ios-apps", bundle), rt)
        matches = rt.skills.match("build the website and deploy")
        assert [(m.skill.name, m.reasons) for m in matches] == [("build-ios-apps:build", ("name 'build'",))]
        invoked = rt.skills.match("show /build-ios-apps:swiftui-preview")
        assert (invoked[0].skill.name, invoked[0].score) == ("build-ios-apps:swiftui-preview", 15.0)
        (m,) = rt.skills.match("try $swiftui-preview now")
        assert m.reasons[0] == "invoked as /swiftui-preview"


# -- Agent Skills name rules are warnings shown by `skills list` ---------------------------------


def test_name_problems_are_warnings_in_skills_list(kairox_harness: KairoxHarness) -> None:
    ws = kairox_harness.workspace / ".kairox" / "skills"
    write(ws / "PDF_Tools" / "SKILL.md", md("PDF_Tools", "Work with PDF files"))
    write(ws / "data-viz" / "SKILL.md", md("charts", "Draw charts"))
    write(ws / "ok-skill" / "SKILL.md", md("ok-skill", "Fine"))
    result = kairox_harness.cli("skills", "list")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "PDF_Tools  workspace kairox  on  Work with PDF files (1 warning)",
        "charts     workspace kairox  on  Draw charts (1 warning)",
        "ok-skill   workspace kairox  on  Fine",
    ]
    assert f"warning: {ws / 'PDF_Tools' / 'SKILL.md'}:2 [name]: 'PDF_Tools' should be 1-64 lowercase" in result.stderr
    assert f"warning: {ws / 'data-viz' / 'SKILL.md'}:2 [name]: 'charts' does not match its folder" in result.stderr


_SPEC_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


@settings(max_examples=400)
@given(st.one_of(st.text(max_size=70), st.from_regex(r"[a-z0-9-]{1,70}", fullmatch=True)))
def test_name_warnings_follow_the_agent_skills_spec(name: str) -> None:
    """A name that breaks the spec (1-64 lowercase letters, digits, single inner hyphens, the
    folder's name) is loaded with a warning; one the spec allows, with none. Names with ':',
    '/', '\\' or control characters are refused (':' is the plugin namespace)."""
    try:
        fm, warnings = frontmatter_from_mapping({"name": name, "description": "d"}, folder="the-folder")
    except SkillError as exc:
        assert exc.field in ("name", "description")
        assert not name.strip() or re.search(r"[:/\\\x00-\x1f\x7f]", name.strip())
        return
    messages = [w.message for w in warnings if w.field == "name"]
    valid = len(fm.name) <= 64 and _SPEC_NAME.fullmatch(fm.name) is not None
    assert any("should be 1-64" in m for m in messages) == (not valid)
    assert any("does not match its folder" in m for m in messages) == (fm.name != "the-folder")


# -- the skill folders of other tools --------------------------------------------------------------


@pytest.fixture
def folders(kairox_harness: KairoxHarness, user_home: Path) -> KairoxHarness:
    ws, home = kairox_harness.workspace, kairox_harness.home
    kairox_harness.env["HOME"] = str(user_home)  # the harness's own HOME is its KAIROX_HOME
    write(user_home / ".claude" / "skills" / "explain" / "SKILL.md", md("explain", "Explain code (Claude user)"))
    write(user_home / ".claude" / "skills" / "tidy" / "SKILL.md", md("tidy", "Tidy imports (Claude user)"))
    write(user_home / ".claude" / "commands" / "standup.md", "Summarise yesterday's commits for a standup.\n")
    write(user_home / ".codex" / "skills" / "migrate" / "SKILL.md", md("migrate", "Write a migration (Codex)"))
    write(user_home / ".agents" / "skills" / "triage" / "SKILL.md", md("triage", "Triage issues (agents user)"))
    write(ws / ".claude" / "skills" / "release" / "SKILL.md", md("release", "Cut a release (Claude workspace)"))
    write(
        ws / ".claude" / "commands" / "fix-issue.md",
        "---\nargument-hint: ISSUE [PRIORITY]\ndescription: Fix a GitHub issue\nallowed-tools: Bash(gh:*)\n---\n"
        "Fix issue $1 with priority $2: $ARGUMENTS\n",
    )
    write(ws / ".claude" / "commands" / "frontend" / "component.md", "# Make a React component\n\nMake $ARGUMENTS.\n")
    write(ws / ".agents" / "skills" / "lint" / "SKILL.md", md("lint", "Lint the tree (agents workspace)"))
    write(home / "skills" / "tidy.md", md("tidy", "Tidy imports (kairox user)"))  # shadows Claude's
    return kairox_harness


def rows(h: KairoxHarness, *args: str) -> list[list[str]]:
    result = h.cli("skills", "list", *args)
    assert result.exit_code == 0, result.stderr
    return [line.split()[:3] for line in result.stdout.splitlines()]


def test_the_folders_users_already_have_are_read_with_their_origin(folders: KairoxHarness) -> None:
    assert rows(folders) == [
        ["component", "workspace", "claude"],
        ["explain", "user", "claude"],
        ["fix-issue", "workspace", "claude"],
        ["lint", "workspace", "agents"],
        ["migrate", "user", "codex"],
        ["release", "workspace", "claude"],
        ["standup", "user", "claude"],
        ["tidy", "user", "kairox"],
        ["triage", "user", "agents"],
    ]
    data = json.loads(folders.cli("skills", "list", "--json").stdout)
    tidy = next(s for s in data["skills"] if s["name"] == "tidy")
    assert [(s["origin"], s["source"]) for s in tidy["shadows"]] == [("claude", "claude-user")]
    assert data["warnings"] == []  # kairox over an imported skill is precedence, not a duplicate
    assert "(shadows user claude)" in folders.cli("skills", "list").stdout


def test_claude_commands_take_arguments(folders: KairoxHarness) -> None:
    shown = json.loads(folders.cli("skills", "show", "fix-issue", "--json").stdout)
    assert shown["description"] == "Fix a GitHub issue"
    assert shown["arguments"][0]["name"] == "ARGUMENTS"
    assert shown["extra"] == {"argument-hint": "ISSUE [PRIORITY]"}
    assert shown["allowed_tools"] == ["Bash(gh:*)"]
    out = folders.cli("skills", "render", "fix-issue", "--no-check-tools", "--arg", "ARGUMENTS=123 high")
    assert out.stdout == "Fix issue 123 with priority high: 123 high\n"
    component = folders.cli("skills", "render", "component", "--no-check-tools", "--arg", "ARGUMENTS=a navbar")
    assert component.stdout == "# Make a React component\n\nMake a navbar.\n"
    standup = json.loads(folders.cli("skills", "show", "standup", "--json").stdout)
    assert standup["description"] == "Summarise yesterday's commits for a standup."
    rendered = folders.cli("skills", "render", "standup", "--no-check-tools", "--arg", "ARGUMENTS=only main")
    assert rendered.stdout.endswith("\n\nARGUMENTS: only main\n")


@pytest.mark.parametrize(
    ("setting", "origins"),
    [
        ('import_from = ["codex"]', {"kairox", "codex"}),
        ("import_from = false", {"kairox"}),
        ("import_from = []", {"kairox"}),
        ("import_from = true", {"kairox", "claude", "codex", "agents"}),
        ("import_from = { claude = false }", {"kairox", "codex", "agents"}),
    ],
)
def test_import_from_switches_the_folders(folders: KairoxHarness, setting: str, origins: set[str]) -> None:
    folders.write_config(f"[skills]\n{setting}\n", where="user")
    assert {r[2] for r in rows(folders)} == origins


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            'import_from = ["claude", "cursor"]',
            "skills.import_from[1]: expected one of claude, codex, agents, got 'cursor'",
        ),
        ("import_from = { zed = true }", "skills.import_from.zed: unknown kind; expected one of claude, codex, agents"),
        ("import_from = { codex = 1 }", "skills.import_from.codex: expected true or false, got 1"),
        ('import_from = "claude"', "skills.import_from: expected true, false, a list of kinds"),
    ],
)
def test_a_bad_import_from_names_the_field(folders: KairoxHarness, setting: str, message: str) -> None:
    path = folders.write_config(f"[skills]\n{setting}\n")
    folders.trust()  # a workspace's [skills] applies (and is checked) once trusted
    result = folders.cli("skills", "list")  # a config problem is reported; the command still lists
    assert f"kairox: config problem: {path}: {message}" in result.stderr


def test_codex_home_is_honoured(folders: KairoxHarness, tmp_path: Path) -> None:
    codex = tmp_path / "codex-home"
    write(codex / "skills" / "bench" / "SKILL.md", md("bench", "Run the benchmarks (CODEX_HOME)"))
    folders.env["CODEX_HOME"] = str(codex)
    names = [r[0] for r in rows(folders) if r[2] == "codex"]
    assert names == ["bench"]


def test_a_folder_kairox_already_reads_is_not_read_twice(folders: KairoxHarness) -> None:
    folders.write_config('[skills]\nworkspace_dirs = [".claude/skills"]\n')
    folders.trust()
    assert ["release", "workspace", "kairox"] in rows(folders)
    assert folders.cli("skills", "list").stderr == ""


@pytest.mark.anyio
async def test_workspace_folders_are_workspace_content_under_trust(folders: KairoxHarness) -> None:
    """Untrusted, the workspace's .claude and .agents skills are listed and usable exactly like
    its .kairox/skills (a skill is markdown and runs nothing)."""
    write(folders.workspace / ".kairox" / "skills" / "own.md", md("own", "The workspace's own skill"))
    async with folders.open(start=False) as rt:
        assert not rt.trust.trusted
        scopes = {s.name: s.scope for s in rt.skills.skills()}
        assert scopes["own"] is scopes["release"] is scopes["lint"] is scopes["fix-issue"] is SkillScope.WORKSPACE
        assert rt.skills.prepare("release", tools=None).text == "Body.\n"


# -- properties ---------------------------------------------------------------------------------------

_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8), st.sampled_from(IMPORT_KINDS)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=400)
@given(
    st.one_of(
        _json, st.lists(st.sampled_from(IMPORT_KINDS)), st.dictionaries(st.sampled_from(IMPORT_KINDS), st.booleans())
    )
)
def test_import_from_is_kinds_or_an_error_naming_the_field(value: Any) -> None:
    try:
        kinds = import_kinds(value)
    except ConfigError as exc:
        assert exc.path.startswith("import_from")
        return
    assert set(kinds) <= set(IMPORT_KINDS) and len(set(kinds)) == len(kinds)
    if isinstance(value, list):
        assert set(kinds) == set(value)
    if isinstance(value, dict):
        assert set(kinds) == {k for k in IMPORT_KINDS if value.get(k, True)}


@settings(max_examples=300)
@given(st.text(max_size=300), st.sampled_from(["cmd.md", "a-b.md", "X.md"]))
def test_any_command_file_is_a_skill_or_an_error(text: str, filename: str) -> None:
    item = parse_command(text, f"/c/{filename}", scope=SkillScope.WORKSPACE, source="claude-workspace-commands")
    assert isinstance(item, (SkillDef, SkillError))
    if isinstance(item, SkillDef):
        assert item.name == filename[:-3]
        assert item.description.strip()
        assert [a.name for a in item.arguments] == ["ARGUMENTS"] or item.arguments


@settings(max_examples=300)
@given(st.text(max_size=80), st.text(max_size=40))
def test_arguments_are_rendered_once(body: str, value: str) -> None:
    """``$ARGUMENTS`` placeholders inside the value are never expanded again, and a body without
    placeholders keeps its text (the value is appended)."""
    out = render_claude(body, {"ARGUMENTS": value})
    if "$" not in body and "{{" not in body:
        assert out == (f"{body.rstrip()}\n\nARGUMENTS: {value}\n" if value else body)
    if body == "$ARGUMENTS":
        assert out == value


def test_claude_syntax_is_for_skills_that_take_arguments(tmp_path: Path) -> None:
    """A skill declaring ``ARGUMENTS`` (every Claude command and skill) is rendered by
    :func:`render_claude`; any other keeps kairox's ``{{ name }}`` alone."""
    claude = parse_command("Fix $1: $ARGUMENTS\n", str(tmp_path / "fix.md"), scope=SkillScope.USER, source="c")
    assert isinstance(claude, SkillDef) and claude.template is render_claude
    assert claude.render({"ARGUMENTS": "12 now"}) == "Fix 12: 12 now\n"
    plain = frontmatter_from_mapping({"name": "p", "description": "d", "arguments": {"x": {}}})[0]
    assert template_for(plain) is None
    assert render_claude("$ARGUMENTS {{ x }}", {"x": 1}) == "$ARGUMENTS 1"


@pytest.mark.anyio
async def test_a_plugin_loader_reads_its_commands_namespaced(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    from kairox_skills import CommandSkillSource

    one = write(tmp_path / "bundle" / "commands" / "ship.md", "Ship $ARGUMENTS to production.\n")
    write(tmp_path / "bundle" / "commands" / "other.md", "Not listed.\n")
    source = CommandSkillSource("plugin:acme", SkillScope.PLUGIN, [one], origin=None, namespace="acme")
    async with kairox_harness.open(start=False) as rt:
        await rt.skills.add_source(source, rt)
        assert [s.name for s in rt.skills.skills(scope="plugin")] == ["acme:ship"]
        assert rt.skills.warnings == []
        assert rt.skills.prepare("acme:ship", {"ARGUMENTS": "v2"}, tools=None).text == "Ship v2 to production.\n"
