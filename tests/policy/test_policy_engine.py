"""PolicyEngine on real directories: roots, write targets, rules, declared permissions, config."""

from __future__ import annotations

import itertools
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairox._policy import (
    LOCATIONS,
    Allow,
    Ask,
    Deny,
    Location,
    PolicyConfig,
    PolicyEngine,
    RuleAction,
    _specificity,
)
from kairox._runtime import Runtime
from kairox._tools import ToolSpec
from kairox._types import ApprovalPolicy, Capability, Domain, Permissions, SandboxPolicy
from kairox.errors import PolicyDenied
from kairox.files import resolve_path

RANK = {"allow": 0, "ask": 1, "deny": 2}


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    home = tmp_path / "home"
    for d in (ws / "sub", outside, home):
        d.mkdir(parents=True)
    (ws / "to_outside").symlink_to(outside)
    (ws / "dangling").symlink_to(outside / "not-yet")
    (ws / "to_sub").symlink_to(ws / "sub")
    (outside / "to_ws").symlink_to(ws)
    return {"ws": ws, "outside": outside, "home": home, "base": tmp_path}


def engine(
    ws: Path,
    *,
    approval: ApprovalPolicy = ApprovalPolicy.ON_REQUEST,
    sandbox: SandboxPolicy = SandboxPolicy.WORKSPACE_WRITE,
    rules: dict[str, RuleAction] | None = None,
) -> PolicyEngine:
    config = PolicyConfig(approval=approval, sandbox=sandbox, rules=rules or {}, include_temp_dir=False)
    return PolicyEngine.build(config, ws)


WRITE = ToolSpec(id="x.write", domain="local", capability="write", path_arguments=("path",))
UNDECLARED_WRITE = ToolSpec(id="mcp.edit", domain="local", capability="write")


# -- roots -------------------------------------------------------------------------


def test_roots_are_the_workspace_extra_roots_and_the_temp_dir(
    tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tree["home"]))
    e = PolicyEngine.build(
        PolicyConfig(writable_roots=["~/notes", "../outside", str(tree["base"] / "abs")]), tree["ws"]
    )
    assert e.roots == (
        tree["ws"].resolve(),
        tree["home"].resolve() / "notes",
        tree["outside"].resolve(),
        tree["base"].resolve() / "abs",
        Path(os.path.realpath(tempfile.gettempdir())),
    )
    assert e.writable_roots == e.roots
    no_temp = engine(tree["ws"])
    assert no_temp.roots == (tree["ws"].resolve(),)
    assert engine(tree["ws"], sandbox=SandboxPolicy.READ_ONLY).writable_roots == ()


def test_the_temp_dir_is_writable_only_when_included(tree: dict[str, Path]) -> None:
    target = str(Path(tempfile.gettempdir()) / "kairox-policy-probe.txt")
    with_temp = PolicyEngine.build(PolicyConfig(), tree["ws"])
    assert with_temp.location(WRITE, {"path": target}) == "inside"
    assert engine(tree["ws"]).location(WRITE, {"path": target}) == "outside"


# -- where a write lands ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a.txt", "inside"),
        ("sub/new/deeper.txt", "inside"),
        ("./sub/../a.txt", "inside"),
        ("to_sub/x", "inside"),
        ("", "inside"),
        ("../outside/x", "outside"),
        ("sub/../../outside/x", "outside"),
        ("to_outside/x", "outside"),
        ("dangling", "outside"),
        ("to_outside/to_ws/x", "inside"),
        ("missing/../../outside/x", "outside"),
        ("/etc/passwd", "outside"),
        ("/", "outside"),
        ("~/x", "outside"),
        ("nul\x00byte", "outside"),
    ],
)
def test_write_targets_resolve_like_the_os(
    tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch, path: str, expected: Location
) -> None:
    monkeypatch.setenv("HOME", str(tree["home"]))
    assert engine(tree["ws"]).location(WRITE, {"path": path}) == expected


def test_absolute_paths_into_the_workspace_are_inside(tree: dict[str, Path]) -> None:
    e = engine(tree["ws"])
    assert e.location(WRITE, {"path": str(tree["ws"] / "sub" / "f")}) == "inside"
    assert e.location(WRITE, {"path": str(tree["outside"] / "to_ws" / "f")}) == "inside"
    assert e.location(WRITE, {"path": str(tree["ws"]) + "-sibling/f"}) == "outside"


def test_home_inside_the_workspace_makes_tilde_inside(tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tree["ws"] / "sub"))
    assert engine(tree["ws"]).location(WRITE, {"path": "~/notes.txt"}) == "inside"


def test_file_uris_are_paths(tree: dict[str, Path]) -> None:
    e = engine(tree["ws"])
    inside = (tree["ws"] / "sub" / "a b.txt").as_uri()
    assert e.location(WRITE, {"path": inside}) == "inside"
    assert e.location(WRITE, {"path": "file:///etc/x"}) == "outside"
    assert e.location(WRITE, {"path": "file://localhost" + str(tree["ws"] / "x")}) == "inside"
    assert e.location(WRITE, {"path": "file://evil.example" + str(tree["ws"] / "x")}) == "outside"
    assert e.location(WRITE, {"path": "file:" + str(tree["ws"] / "%2E%2E" / "outside" / "x")}) == "outside"


def test_every_target_must_be_inside(tree: dict[str, Path]) -> None:
    spec = ToolSpec(id="x.move", domain="local", capability="write", path_arguments=("source", "destination"))
    e = engine(tree["ws"])
    assert e.location(spec, {"source": "a", "destination": "sub/b"}) == "inside"
    assert e.location(spec, {"source": "a", "destination": "../outside/b"}) == "outside"
    assert e.location(spec, {"source": ["a", "b"], "destination": "c"}) == "inside"
    assert e.location(spec, {"source": ["a", "/etc/b"], "destination": "c"}) == "outside"
    assert e.location(spec, {}) == "none"


def test_declared_path_arguments_that_are_not_strings_cannot_be_checked(tree: dict[str, Path]) -> None:
    e = engine(tree["ws"])
    assert e.location(WRITE, {"path": {"nested": "a"}}) == "outside"
    assert e.location(WRITE, {"path": 3}) == "outside"
    assert e.location(WRITE, {"path": ["a", 3]}) == "outside"
    assert e.location(WRITE, {"path": None}) == "none"
    assert e.location(WRITE, {"other": "/etc/x"}) == "none"  # only the declared names count


def test_undeclared_tools_are_searched_at_any_depth(tree: dict[str, Path]) -> None:
    e = engine(tree["ws"])
    assert e.location(UNDECLARED_WRITE, {"edits": [{"file_path": "a"}, {"FILE": "sub/b"}]}) == "inside"
    assert e.location(UNDECLARED_WRITE, {"edits": [{"file_path": "a"}, {"path": "/etc/b"}]}) == "outside"
    assert e.location(UNDECLARED_WRITE, {"options": {"output": {"dir": "../outside"}}}) == "outside"
    assert e.location(UNDECLARED_WRITE, {"uri": "file:///etc/hosts"}) == "outside"
    assert e.location(UNDECLARED_WRITE, {"paths": ["a", "../outside/b"]}) == "outside"
    assert e.location(UNDECLARED_WRITE, {"text": "/etc/passwd", "count": 3}) == "none"


def test_decide_uses_the_resolved_location(tree: dict[str, Path]) -> None:
    e = engine(tree["ws"])
    assert isinstance(e.decide(WRITE, {"path": "sub/ok.txt"}), Allow)
    d = e.decide(WRITE, {"path": "to_outside/x"})
    assert isinstance(d, Ask) and "outside the writable roots" in d.reason
    assert isinstance(engine(tree["ws"], approval=ApprovalPolicy.NEVER).decide(WRITE, {"path": "/etc/x"}), Deny)
    # reads never look at paths
    read = ToolSpec(id="x.read", domain="local", capability="read", path_arguments=("path",))
    assert isinstance(e.decide(read, {"path": "/etc/shadow"}), Allow)


def test_undeclared_domain_and_capability_mean_system_execute(tree: dict[str, Path]) -> None:
    spec = ToolSpec(id="mystery.tool")
    assert (spec.domain, spec.capability) == (Domain.SYSTEM, Capability.EXECUTE)
    d = engine(tree["ws"]).decide(spec, {})
    assert isinstance(d, Ask) and "system/execute" in d.reason


def test_resolve_path_is_what_tools_must_use(tree: dict[str, Path]) -> None:
    assert resolve_path("to_sub/../x", tree["ws"]) == tree["ws"].resolve() / "x"
    assert resolve_path("to_outside/x", tree["ws"]) == tree["outside"].resolve() / "x"


# -- rules -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "tool", "expected"),
    [
        ({}, "git.status", None),
        ({"git.*": "allow"}, "git.status", "allow"),
        ({"git.*": "allow"}, "gitx.status", None),
        ({"git.*": "allow", "git.push": "ask"}, "git.push", "ask"),
        ({"git.*": "allow", "git.push": "ask"}, "git.status", "allow"),
        ({"git.*": "ask", "git.status": "allow"}, "git.status", "allow"),
        ({"*": "allow", "git.*": "deny"}, "git.status", "deny"),
        ({"git.status": "allow", "*": "deny"}, "git.status", "deny"),
        ({"git.st*": "allow", "git.*": "ask"}, "git.status", "allow"),
        ({"git.?tatus": "allow", "git.s*": "ask"}, "git.status", "allow"),
        ({"git.s*": "allow", "git.*s": "ask"}, "git.status", "ask"),
        ({"shell.exec": "deny"}, "shell.exec", "deny"),
        ({"Shell.exec": "deny"}, "shell.exec", None),
    ],
)
def test_rule_precedence(tree: dict[str, Path], rules: dict[str, RuleAction], tool: str, expected: str | None) -> None:
    assert engine(tree["ws"], rules=rules).rule_for(tool) == expected


def test_rules_apply_through_decide(tree: dict[str, Path]) -> None:
    e = engine(tree["ws"], rules={"shell.exec": "deny", "git.*": "allow", "fs.read": "ask"})
    shell = ToolSpec(id="shell.exec", domain="system", capability="execute")
    git = ToolSpec(id="git.commit", domain="local", capability="execute")
    read = ToolSpec(id="fs.read", domain="local", capability="read")
    assert isinstance(e.decide(shell), Deny)
    assert isinstance(e.decide(git), Allow)
    assert isinstance(e.decide(read), Ask)


# -- declared permissions only narrow ------------------------------------------------------


def test_a_tools_allow_list_denies_the_rest(tree: dict[str, Path]) -> None:
    perms = Permissions(tools=("srv.read_*",))
    e = engine(tree["ws"], approval=ApprovalPolicy.NEVER, sandbox=SandboxPolicy.DANGER_FULL_ACCESS)
    ok = ToolSpec(id="srv.read_file", domain="local", capability="read", permissions=perms)
    other = ToolSpec(id="srv.delete", domain="local", capability="write", permissions=perms)
    assert isinstance(e.decide(ok), Allow)
    d = e.decide(other)
    assert isinstance(d, Deny) and "permissions" in d.reason


APPROVALS_OR_NONE: list[ApprovalPolicy | None] = [None, *ApprovalPolicy]
SANDBOXES_OR_NONE: list[SandboxPolicy | None] = [None, *SandboxPolicy]


def _args_for(location: Location, tree: dict[str, Path]) -> dict[str, str]:
    return {
        "inside": {"path": str(tree["ws"] / "f")},
        "outside": {"path": str(tree["outside"] / "f")},
        "none": {},
    }[location]


def test_declared_permissions_never_widen_the_users_decision(tree: dict[str, Path]) -> None:
    checked = 0
    actions: tuple[RuleAction | None, ...] = (None, "allow", "ask", "deny")
    for approval, sandbox, rule in itertools.product(ApprovalPolicy, SandboxPolicy, actions):
        rules: dict[str, RuleAction] = {"p.*": rule} if rule else {}
        e = engine(tree["ws"], approval=approval, sandbox=sandbox, rules=rules)
        for domain, capability, location in itertools.product(Domain, Capability, LOCATIONS):
            args = _args_for(location, tree)
            base = ToolSpec(id="p.t", domain=domain, capability=capability, path_arguments=("path",))
            assert e.location(base, args) == location
            user = e.decide(base, args)
            for p_approval, p_sandbox in itertools.product(APPROVALS_OR_NONE, SANDBOXES_OR_NONE):
                spec = ToolSpec(
                    id="p.t",
                    domain=domain,
                    capability=capability,
                    path_arguments=("path",),
                    permissions=Permissions(approval=p_approval, sandbox=p_sandbox),
                )
                narrowed = e.decide(spec, args)
                assert RANK[narrowed.kind] >= RANK[user.kind], (
                    approval,
                    sandbox,
                    rule,
                    domain,
                    capability,
                    location,
                    p_approval,
                    p_sandbox,
                    user,
                    narrowed,
                )
                checked += 1
    assert checked == 4 * 3 * 4 * 27 * 20


def test_declared_permissions_do_narrow(tree: dict[str, Path]) -> None:
    e = engine(tree["ws"])  # on_request + workspace_write
    write = ToolSpec(
        id="p.w",
        domain="local",
        capability="write",
        path_arguments=("path",),
        permissions=Permissions(sandbox=SandboxPolicy.READ_ONLY),
    )
    d = e.decide(write, {"path": "inside.txt"})
    assert isinstance(d, Ask) and "read_only" in d.reason and "permissions its plugin declares" in d.reason
    never = attrs_evolve(write, Permissions(approval=ApprovalPolicy.NEVER))
    assert isinstance(e.decide(never, {"path": "/etc/x"}), Deny)
    # a plugin declaring on_request under the user's never cannot turn a deny into a prompt
    user_never = engine(tree["ws"], approval=ApprovalPolicy.NEVER)
    lenient = attrs_evolve(write, Permissions(approval=ApprovalPolicy.ON_REQUEST))
    assert isinstance(user_never.decide(lenient, {"path": "/etc/x"}), Deny)


def attrs_evolve(spec: ToolSpec, perms: Permissions) -> ToolSpec:
    import attrs

    return attrs.evolve(spec, permissions=perms)


# -- the [policy] config section -------------------------------------------------------------


@pytest.mark.anyio
async def test_policy_section_is_read_from_kairox_toml(tree: dict[str, Path]) -> None:
    (tree["ws"] / "kairox.toml").write_text(
        """
[policy]
approval = "untrusted"
sandbox = "read_only"
writable_roots = ["../outside"]
include_temp_dir = false

[policy.rules]
"git.*" = "allow"
"shell.exec" = "deny"
""",
        encoding="utf-8",
    )
    # untrusted: the narrowing values apply, the allow rule and the extra root do not
    async with Runtime.open(tree["ws"], home=tree["home"], env={}, load_entrypoints=False) as rt:
        assert not rt.config.errors
        cfg = rt.policy.config
        assert (cfg.approval, cfg.sandbox) == (ApprovalPolicy.UNTRUSTED, SandboxPolicy.READ_ONLY)
        assert rt.policy.roots == (tree["ws"].resolve(),)
        assert rt.policy.rule_for("shell.exec") == "deny"
        assert rt.policy.rule_for("git.log", capability=Capability.READ) is None
        assert {(n.key, n.file) for n in rt.config.not_applied} >= {
            ("writable_roots", str(tree["ws"] / "kairox.toml")),
            ('rules["git.*"]', str(tree["ws"] / "kairox.toml")),
        }
        assert [i.kind for i in rt.trust.pending] == ["policy"]
        rt.trust_workspace()
    # trusted: they apply too (an allow rule only for tools that do not execute)
    async with Runtime.open(tree["ws"], home=tree["home"], env={}, load_entrypoints=False) as rt:
        assert rt.policy.roots == (tree["ws"].resolve(), tree["outside"].resolve())
        assert rt.policy.rule_for("git.log", capability=Capability.READ) == "allow"
        assert rt.policy.rule_for("git.log", capability=Capability.EXECUTE) is None
        assert rt.policy.rule_for("shell.exec") == "deny"


@pytest.mark.anyio
async def test_bad_policy_values_are_config_errors_naming_the_field(tree: dict[str, Path]) -> None:
    (tree["ws"] / "kairox.toml").write_text(
        '[policy]\napproval = "sometimes"\n\n[policy.rules]\n"git.*" = "yes"\n', encoding="utf-8"
    )
    async with Runtime.open(tree["ws"], home=tree["home"], env={}, load_entrypoints=False) as rt:
        messages = {e.path: e.message for e in rt.config.errors}
        assert "policy.approval" in messages and "'on_request'" in messages["policy.approval"]
        assert any(p.startswith("policy.rules") for p in messages), messages
        # a broken section falls back to the defaults, never to something more permissive
        assert rt.policy.config == PolicyConfig()


def test_a_path_argument_left_out_is_checked_at_its_schema_default(tree: dict[str, Path]) -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string", "default": "/etc/kairox-default"}}}
    declared = ToolSpec(id="x.w", domain="local", capability="write", input_schema=schema, path_arguments=("path",))
    undeclared = ToolSpec(id="x.u", domain="local", capability="write", input_schema=schema)
    e = engine(tree["ws"])
    for spec in (declared, undeclared):
        assert e.location(spec, {}) == "outside"
        assert e.location(spec, {"path": "inside.txt"}) == "inside"
    inside_default = {"type": "object", "properties": {"output": {"type": "string", "default": "out/report.txt"}}}
    assert e.location(ToolSpec(id="x.r", capability="write", input_schema=inside_default), {}) == "inside"


def test_decide_at_gives_each_location_of_a_write_tool(tree: dict[str, Path]) -> None:
    e = engine(tree["ws"])
    assert [e.decide_at(WRITE, loc).kind for loc in LOCATIONS] == ["allow", "ask", "allow"]
    shell = ToolSpec(id="shell.exec", domain="system", capability="execute")
    assert {e.decide_at(shell, loc).kind for loc in LOCATIONS} == {"ask"}
    denied = engine(tree["ws"], rules={"x.*": "deny"})
    assert {denied.decide_at(WRITE, loc).kind for loc in LOCATIONS} == {"deny"}


# -- a rule's specificity is read in linear time, as the old pattern read it -------------------

_OLD_GLOB_PART = re.compile(r"\*|\?|\[[^\]]*\]")


@settings(max_examples=1000)
@given(st.text(st.sampled_from([*"ab.*?[]!_"]), max_size=16))
def test_specificity_is_what_the_old_pattern_said(pattern: str) -> None:
    assert _specificity(pattern) == (_OLD_GLOB_PART.search(pattern) is None, len(_OLD_GLOB_PART.sub("", pattern)))


@pytest.mark.timeout(10)
def test_specificity_is_linear_in_unclosed_classes() -> None:
    # each `[` with no `]` after it was read to the end again: hours at 1 MB
    assert _specificity("[" * 1_000_000) == (True, 1_000_000)
    assert _specificity("a*" + "[" * 1_000_000 + "]") == (False, 1)


@pytest.mark.anyio
@pytest.mark.timeout(10)
async def test_a_workspace_rule_of_unclosed_brackets_is_matched_in_linear_time(tree: dict[str, Path]) -> None:
    # fnmatch read each `[` with no `]` after it to the pattern's end: minutes for this 64 KB rule
    import kairox_tools.hooks

    opens = "[" * 65_536
    (tree["ws"] / "kairox.toml").write_text(
        f'[policy.rules]\n"{opens}" = "deny"\n"fs.re[a]d" = "deny"\n', encoding="utf-8"
    )
    (tree["ws"] / "notes.txt").write_text("n\n", encoding="utf-8")
    async with Runtime.open(
        tree["ws"], home=tree["home"], env={}, plugins=[kairox_tools.hooks], load_entrypoints=False
    ) as rt:
        assert not rt.config.errors
        assert rt.policy.rule_for(opens) == "deny"  # its brackets are literal
        listed = await rt.call_tool("fs.list", {})
        assert "notes.txt" in listed.text
        with pytest.raises(PolicyDenied, match="denied by a rule"):
            await rt.call_tool("fs.read", {"path": "notes.txt"})


# -- remembered decisions -------------------------------------------------------------------


def test_decisions_are_remembered_and_forgotten_when_the_policy_changes(tmp_path: Any) -> None:
    engine = PolicyEngine.build(PolicyConfig(), tmp_path)
    spec = ToolSpec("mem.echo", domain="local", capability="read")
    first = engine.decide_at(spec, "none")
    assert isinstance(first, Allow)
    assert engine.decide_at(spec, "outside") is first  # a read tool's location does not matter
    engine.config = attrs.evolve(engine.config, rules={"mem.*": "deny"})
    assert isinstance(engine.decide_at(spec, "none"), Deny)
    # a spec with the same id but other facts is decided on its own
    other = attrs.evolve(spec, capability="execute")
    assert engine.decide_at(other, "none").kind == "deny"
    engine.config = PolicyConfig()
    assert engine.decide_at(other, "none").kind == "ask"


def test_a_remembered_decision_is_the_decision(tmp_path: Any) -> None:
    """Every cell the engine can be asked, twice: the second answer is the first one's."""
    config = PolicyConfig(rules={"w.*": "allow", "x.deny": "deny", "a.*": "ask"})
    fresh = PolicyEngine.build(config, tmp_path)
    cached = PolicyEngine.build(config, tmp_path)
    for tid in ("w.one", "x.deny", "a.b", "plain.tool"):
        for domain in ("local", "network", "system"):
            for capability in ("read", "write", "execute"):
                spec = ToolSpec(tid, domain=domain, capability=capability)
                for location in ("inside", "outside", "none"):
                    cached.decide_at(spec, location)  # type: ignore[arg-type]
                    again = cached.decide_at(spec, location)  # type: ignore[arg-type]
                    assert again == PolicyEngine.build(config, tmp_path).decide_at(spec, location)  # type: ignore[arg-type]
                    assert again == fresh._decide_at(spec, location if capability == "write" else "none")  # type: ignore[arg-type]
