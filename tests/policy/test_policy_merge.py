"""merge_policy: a workspace file can only narrow the user's [policy].

Unit tests for each merge rule and its NotApplied reason, errors naming the
file and field path, rules matched by exported name; then properties over any
user layer, any workspace layers and any tool: untrusted workspace files never
loosen a decision, trusted ones only through an allow rule or a writable root
of their own, and a user deny rule always denies.
"""

from __future__ import annotations

import fnmatch
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kairox._config import ConfigLayer, NotApplied
from kairox._convert import structure
from kairox._policy import LOCATIONS, Deny, Location, PolicyConfig, PolicyEngine, RuleAction, decide_cell
from kairox._policy_merge import merge_policy
from kairox._tools import ToolSpec
from kairox._types import ApprovalPolicy, Capability, Domain, Permissions, SandboxPolicy
from kairox.errors import ConfigError
from kairox_testing.strategies import json_values

RANK = {"allow": 0, "ask": 1, "deny": 2}
A, S = ApprovalPolicy, SandboxPolicy

SHELL = ToolSpec(id="shell.exec", domain="system", capability="execute", exported_name="shell_exec")
READ = ToolSpec(id="fs.read", domain="local", capability="read", exported_name="fs_read")
NET_WRITE = ToolSpec(id="web.post", domain="network", capability="write", exported_name="web_post")
WRITE = ToolSpec(id="fs.write", domain="local", capability="write", path_arguments=("path",), exported_name="fs_write")


def user(table: dict[str, Any], file: str = "/home/u/.kairox/kairox.toml") -> ConfigLayer:
    return ConfigLayer(file=file, scope="user", trusted=True, table=table)


def ws(table: Any, *, trusted: bool = False, file: str = "/ws/kairox.toml") -> ConfigLayer:
    return ConfigLayer(file=file, scope="workspace", trusted=trusted, table=table)


def merged(*layers: ConfigLayer) -> PolicyConfig:
    config, _, errors = merge_policy(layers)
    assert not errors, errors
    return config


def refused(*layers: ConfigLayer) -> list[NotApplied]:
    _, not_applied, errors = merge_policy(layers)
    assert not errors, errors
    return not_applied


def engine(config: PolicyConfig, workspace: Path = Path("/nonexistent-kairox-ws")) -> PolicyEngine:
    return PolicyEngine.build(config, workspace)


def kind(config: PolicyConfig, spec: ToolSpec, location: Location = "none") -> str:
    return engine(config).decide_at(spec, location).kind


# -- the user's files ------------------------------------------------------------------


def test_no_layers_give_the_defaults() -> None:
    assert merge_policy([]) == (PolicyConfig(), [], [])


@pytest.mark.parametrize(
    "table",
    [
        {},
        {"approval": "never", "sandbox": "danger_full_access"},
        {"writable_roots": ["~/notes", "../x"], "include_temp_dir": False},
        {"rules": {"git.*": "allow", "shell.exec": "deny", "fs.read": "ask"}},
    ],
)
def test_one_user_layer_is_the_section_as_before(table: dict[str, Any]) -> None:
    assert merged(user(table)) == structure(table, PolicyConfig, path="policy")


def test_one_workspace_layer_that_only_narrows_is_the_section_as_before() -> None:
    table = {"approval": "untrusted", "sandbox": "read_only", "include_temp_dir": False, "rules": {"x.*": "deny"}}
    config = merged(ws(table))
    assert (config.approval, config.sandbox, config.include_temp_dir) == (A.UNTRUSTED, S.READ_ONLY, False)
    assert config.workspace_rules == {"x.*": "deny"} and config.rules == {}


def test_user_layers_replace_key_by_key_and_merge_rules_by_pattern() -> None:
    config = merged(
        user({"approval": "never", "writable_roots": ["a"], "rules": {"git.*": "allow", "fs.*": "ask"}}),
        user({"writable_roots": ["b"], "rules": {"fs.*": "deny", "web.*": "ask"}}, file="embedded"),
    )
    assert config.approval is A.NEVER
    assert config.writable_roots == ["b"]
    assert config.rules == {"git.*": "allow", "fs.*": "deny", "web.*": "ask"}
    assert config.user_approval is None and config.user_sandbox is None


def test_a_user_layer_after_a_workspace_layer_does_not_undo_its_narrowing() -> None:
    config = merged(ws({"approval": "untrusted"}), user({"approval": "never"}, file="embedded"))
    assert (config.approval, config.user_approval) == (A.UNTRUSTED, A.NEVER)


# -- approval, sandbox, include_temp_dir -------------------------------------------------


def test_a_workspace_can_make_the_approval_stricter_only() -> None:
    assert merged(user({"approval": "on_request"}), ws({"approval": "untrusted"})).approval is A.UNTRUSTED
    assert refused(user({"approval": "on_request"}), ws({"approval": "on_request"})) == []
    not_applied = refused(user({}), ws({"approval": "never"}))
    assert not_applied == [
        NotApplied(
            section="policy",
            key="approval",
            file="/ws/kairox.toml",
            reason="a workspace may only make the approval policy stricter (the user's is on_request)",
        )
    ]
    assert merged(user({}), ws({"approval": "never"})).approval is A.ON_REQUEST


def test_a_trusted_workspace_cannot_loosen_the_approval_either() -> None:
    config, not_applied, _ = merge_policy([user({"approval": "untrusted"}), ws({"approval": "never"}, trusted=True)])
    assert config.approval is A.UNTRUSTED
    assert [n.reason for n in not_applied] == [
        "a workspace may only make the approval policy stricter (the user's is untrusted)"
    ]


def test_a_workspace_can_make_the_sandbox_narrower_only() -> None:
    assert merged(user({}), ws({"sandbox": "read_only"})).sandbox is S.READ_ONLY
    not_applied = refused(user({"sandbox": "read_only"}), ws({"sandbox": "danger_full_access"}, trusted=True))
    assert [(n.key, n.reason) for n in not_applied] == [
        ("sandbox", "a workspace may only make the sandbox narrower (the user's is read_only)")
    ]


def test_among_workspace_files_the_stricter_value_wins() -> None:
    config = merged(
        user({"approval": "on_failure", "sandbox": "danger_full_access"}),
        ws({"approval": "untrusted", "sandbox": "workspace_write"}, file="/ws/.kairox/kairox.toml"),
        ws({"approval": "on_request", "sandbox": "danger_full_access"}),
    )
    assert (config.approval, config.sandbox) == (A.UNTRUSTED, S.WORKSPACE_WRITE)
    assert (config.user_approval, config.user_sandbox) == (A.ON_FAILURE, S.DANGER_FULL_ACCESS)


def test_a_workspace_can_turn_the_temp_dir_off_but_never_on() -> None:
    assert merged(user({}), ws({"include_temp_dir": False})).include_temp_dir is False
    assert refused(user({}), ws({"include_temp_dir": True})) == []
    config, not_applied, _ = merge_policy(
        [user({"include_temp_dir": False}), ws({"include_temp_dir": True}, trusted=True)]
    )
    assert config.include_temp_dir is False
    assert [(n.key, n.reason) for n in not_applied] == [
        ("include_temp_dir", "a workspace may only set include_temp_dir = false (the user's is false)")
    ]


def test_under_the_users_never_a_stricter_workspace_approval_cannot_turn_a_deny_into_a_prompt() -> None:
    # approval policies are ordered by when the user is asked, decisions by what runs:
    # under never what would be asked is denied, so the call is decided under both
    config = merged(user({"approval": "never"}), ws({"approval": "untrusted"}))
    assert config.user_approval is A.NEVER
    d = engine(config).decide_at(WRITE, "outside")
    assert isinstance(d, Deny) and "under the user's own policy: approval never" in d.reason
    assert kind(config, WRITE, "inside") == "ask"  # and untrusted still asks where never would allow
    assert kind(merged(user({"approval": "never"})), WRITE, "inside") == "allow"


# -- writable roots ---------------------------------------------------------------------


def test_only_a_trusted_workspace_adds_writable_roots(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "build").mkdir()
    layers = [user({"writable_roots": ["~/notes"], "include_temp_dir": False})]
    config, not_applied, _ = merge_policy([*layers, ws({"writable_roots": ["../build"]})])
    assert config.writable_roots == ["~/notes"]
    assert [(n.key, n.reason) for n in not_applied] == [
        ("writable_roots", "only a trusted workspace may add writable roots (this one is not trusted)")
    ]
    trusted = merged(*layers, ws({"writable_roots": ["../build", "~/notes"]}, trusted=True))
    assert trusted.writable_roots == ["~/notes", "../build"]
    e = engine(trusted, tmp_path / "ws")
    assert (tmp_path / "build").resolve() in e.roots
    assert e.decide(WRITE, {"path": str(tmp_path / "build" / "out.txt")}).kind == "allow"
    assert engine(config, tmp_path / "ws").decide(WRITE, {"path": str(tmp_path / "build" / "out.txt")}).kind == "ask"


def test_a_workspace_read_only_sandbox_empties_the_writable_roots(tmp_path: Path) -> None:
    e = engine(merged(user({}), ws({"sandbox": "read_only"})), tmp_path)
    assert e.writable_roots == ()


# -- rules ------------------------------------------------------------------------------


def test_any_workspace_adds_ask_and_deny_rules_which_narrow_the_users() -> None:
    config = merged(user({"rules": {"fs.*": "allow"}}), ws({"rules": {"fs.write": "deny", "fs.read": "ask"}}))
    assert config.rules == {"fs.*": "allow"}
    assert config.workspace_rules == {"fs.write": "deny", "fs.read": "ask"}
    e = engine(config)
    assert e.rule_for("fs.write") == "deny" and e.rule_for("fs.read") == "ask" and e.rule_for("fs.list") == "allow"
    d = e.decide_at(WRITE, "inside")
    assert isinstance(d, Deny) and d.reason == "denied by a rule in [policy.rules] of a workspace file"
    assert e.decide_at(READ, "none").reason == "a rule in [policy.rules] of a workspace file asks before this tool runs"


def test_a_workspace_deny_glob_narrows_a_more_specific_user_allow() -> None:
    e = engine(merged(user({"rules": {"git.git_status": "allow"}}), ws({"rules": {"git.*": "deny"}})))
    assert e.rule_for("git.git_status") == "deny"


def test_an_untrusted_workspace_cannot_add_allow_rules() -> None:
    config, not_applied, _ = merge_policy([user({}), ws({"rules": {"shell.exec": "allow", "fs.read": "ask"}})])
    assert config.workspace_rules == {"fs.read": "ask"}
    assert not_applied == [
        NotApplied(
            section="policy",
            key='rules["shell.exec"]',
            file="/ws/kairox.toml",
            reason="only a trusted workspace may add allow rules (this one is not trusted)",
        )
    ]


def test_a_trusted_workspace_allow_rule_applies_to_a_tool_no_user_rule_matches() -> None:
    config = merged(user({"approval": "untrusted"}), ws({"rules": {"fs.*": "allow"}}, trusted=True))
    assert config.workspace_rules == {"fs.*": "allow"}
    e = engine(config)
    assert e.decide_at(WRITE, "inside").kind == "allow"
    assert e.decide_at(WRITE, "inside").reason == "allowed by a rule in [policy.rules] of a workspace file"
    assert e.rule_for("fs.write", capability=Capability.WRITE) == "allow"
    # without the capability the engine cannot tell, so the allow does not count
    assert e.rule_for("fs.write") is None


def test_a_trusted_workspace_allow_rule_never_applies_to_an_execute_tool() -> None:
    config = merged(user({}), ws({"rules": {"shell.*": "allow", "*": "allow"}}, trusted=True))
    e = engine(config)
    assert e.rule_for("shell.exec", capability=Capability.EXECUTE) is None
    assert {e.decide_at(SHELL, loc).kind for loc in LOCATIONS} == {"ask"}


def test_a_trusted_workspace_allow_rule_never_applies_over_a_user_rule() -> None:
    # the user's glob matches, so the workspace's more specific allow is ignored
    e = engine(merged(user({"rules": {"fs.*": "ask"}}), ws({"rules": {"fs.write": "allow"}}, trusted=True)))
    assert e.decide_at(WRITE, "inside").kind == "ask"
    assert e.rule_for("fs.write", capability=Capability.WRITE) == "ask"
    # and a workspace ask is not lost with it
    e2 = engine(
        merged(user({"rules": {"fs.*": "allow"}}), ws({"rules": {"fs.write": "allow", "fs.*": "ask"}}, trusted=True))
    )
    assert e2.rule_for("fs.write", capability=Capability.WRITE) == "ask"


def test_a_workspace_allow_rule_for_a_pattern_the_user_set_is_not_applied() -> None:
    config, not_applied, _ = merge_policy(
        [
            user({"rules": {"git.*": "ask", "fs.*": "allow"}}),
            ws({"rules": {"git.*": "allow", "fs.*": "allow"}}, trusted=True),
        ]
    )
    assert config.workspace_rules == {}
    assert [(n.key, n.reason) for n in not_applied] == [
        ('rules["git.*"]', "a workspace allow rule never applies over a user rule (the user's rule for it is ask)")
    ]


def test_a_user_deny_rule_wins_over_every_workspace_rule() -> None:
    config = merged(
        user({"approval": "never", "sandbox": "danger_full_access", "rules": {"fs.*": "deny"}}),
        ws({"rules": {"fs.read": "allow", "fs.write": "ask"}}, trusted=True),
    )
    e = engine(config)
    for spec in (READ, WRITE):
        d = e.decide_at(spec, "inside")
        assert isinstance(d, Deny) and d.reason == "denied by a rule in [policy.rules]"


def test_among_workspace_files_the_stricter_rule_wins() -> None:
    config = merged(
        user({}),
        ws({"rules": {"fs.*": "deny", "web.*": "allow"}}, trusted=True, file="/ws/.kairox/kairox.toml"),
        ws({"rules": {"fs.*": "ask", "web.*": "ask"}}, trusted=True),
    )
    assert config.workspace_rules == {"fs.*": "deny", "web.*": "ask"}


# -- exported names -----------------------------------------------------------------------


def test_a_rule_keyed_by_the_exported_name_matches_the_tool() -> None:
    e = engine(PolicyConfig(rules={"shell_exec": "deny", "fs_*": "ask"}))
    assert e.rule_for("shell.exec", "shell_exec") == "deny"
    assert e.rule_for("shell.exec") is None
    assert e.decide_at(SHELL, "none").kind == "deny"
    assert e.decide_at(READ, "none").kind == "ask"
    # an exact exported name is as specific as an exact id
    both = engine(PolicyConfig(rules={"fs.*": "ask", "fs_read": "allow"}))
    assert both.rule_for("fs.read", "fs_read") == "allow"


def test_a_workspace_rule_keyed_by_the_exported_name_matches_too() -> None:
    full = {"sandbox": "danger_full_access"}  # so that the rule, not the sandbox, decides
    e = engine(merged(user(full), ws({"rules": {"web_post": "allow"}}, trusted=True)))
    assert e.decide_at(NET_WRITE, "none").kind == "allow"
    assert engine(merged(user(full))).decide_at(NET_WRITE, "none").kind == "ask"
    # and a user rule matching by exported name keeps the workspace allow away
    e2 = engine(merged(user({**full, "rules": {"web_*": "ask"}}), ws({"rules": {"web.post": "allow"}}, trusted=True)))
    assert e2.decide_at(NET_WRITE, "none").kind == "ask"


def test_a_rule_pattern_matches_a_tool_by_its_id_or_its_exported_name() -> None:
    e = engine(PolicyConfig())
    assert e.matches("shell_exec", SHELL) and e.matches("shell.*", SHELL) and e.matches("shell?exec", SHELL)
    assert not e.matches("shell_exec", ToolSpec(id="shell.exec", domain="system", capability="execute"))
    assert not e.matches("fs.*", SHELL)


# -- bad values ---------------------------------------------------------------------------


def test_bad_values_are_errors_naming_the_file_and_field_and_only_they_are_dropped() -> None:
    config, not_applied, errors = merge_policy(
        [
            user({"approval": "sometimes", "sandbox": "read_only", "rules": {"fs.*": "maybe", "git.*": "allow"}}),
            ws({"include_temp_dir": "no", "writable_roots": "x", "bogus": 1, "rules": {"web.*": "deny"}}),
            ws({"rules": ["a"], "approval": "untrusted"}, file="/ws/.kairox/kairox.toml"),
        ]
    )
    found = {(e.file, e.path): e.message for e in errors}
    u = "/home/u/.kairox/kairox.toml"
    assert found == {
        (u, "policy.approval"): "expected one of 'untrusted', 'on_request', 'on_failure', 'never', got 'sometimes'",
        (u, "policy.rules['fs.*']"): "expected one of 'allow', 'ask', 'deny', got 'maybe'",
        ("/ws/kairox.toml", "policy.include_temp_dir"): "expected a boolean (true or false), got 'no'",
        ("/ws/kairox.toml", "policy.writable_roots"): "expected a list, got 'x'",
        ("/ws/kairox.toml", "policy.bogus"): (
            "unknown key; valid keys: approval, sandbox, writable_roots, rules, include_temp_dir"
        ),
        ("/ws/.kairox/kairox.toml", "policy.rules"): "expected a table, got a list",
    }
    assert all(str(e).startswith(f"{e.file}: {e.path}: ") for e in errors)
    assert config.approval is A.UNTRUSTED and config.sandbox is S.READ_ONLY
    assert config.rules == {"git.*": "allow"} and config.workspace_rules == {"web.*": "deny"}
    assert config.include_temp_dir is True and config.writable_roots == []
    assert not_applied == []


@pytest.mark.parametrize("key", ["workspace_rules", "user_approval", "user_sandbox"])
def test_a_file_cannot_set_the_merge_only_fields(key: str) -> None:
    config, _, errors = merge_policy([user({key: {"*": "allow"}}), ws({key: {"*": "allow"}}, trusted=True)])
    assert config == PolicyConfig()
    assert [e.path for e in errors] == [f"policy.{key}", f"policy.{key}"]


def test_a_table_that_is_not_a_table_is_an_error() -> None:
    config, _, errors = merge_policy([ws([1, 2])])
    assert config == PolicyConfig()
    assert [(e.file, e.path) for e in errors] == [("/ws/kairox.toml", "policy")]


def test_decide_cell_keeps_its_reasons_for_the_users_rules() -> None:
    d = decide_cell(A.ON_REQUEST, S.WORKSPACE_WRITE, Domain.LOCAL, Capability.WRITE, "inside", "deny")
    assert d.reason == "denied by a rule in [policy.rules]"


# -- properties ---------------------------------------------------------------------------

ACTIONS = ["allow", "ask", "deny"]
JUNK = [0, 7, True, "sometimes", {"a": 1}, [1]]

#: where the property tests put the workspace; ``extra`` is a root a workspace file may add
_BASE = Path("/kairox-merge-props")
WORKSPACE, EXTRA = _BASE / "ws", _BASE / "extra"
TARGETS: dict[str, str | None] = {
    "workspace": str(WORKSPACE / "f.txt"),
    "extra": str(EXTRA / "f.txt"),
    "temp": str(Path(tempfile.gettempdir()) / "kairox-merge-props.txt"),
    "outside": "/kairox-merge-elsewhere/f.txt",
    "none": None,
}
ROOTS = [str(EXTRA), "../extra", "~/notes", str(WORKSPACE)]
#: the property tests run more examples than the profile's default (each one is cheap)
MORE = settings(max_examples=max(200, settings().max_examples))


@st.composite
def tools(draw: st.DrawFn) -> ToolSpec:
    """Any tool, with an exported name or none, with declared permissions or none."""
    tool_id = draw(st.sampled_from(["fs.write", "shell.exec", "web.post", "git.git_status"]))
    exported = draw(st.sampled_from([tool_id.replace(".", "_"), "", "renamed"]))
    approval = draw(st.sampled_from([None, None, None, *A]))
    sandbox = draw(st.sampled_from([None, None, None, *S]))
    return ToolSpec(
        id=tool_id,
        domain=draw(st.sampled_from(Domain)),
        capability=draw(st.sampled_from(Capability)),
        path_arguments=("path",),
        permissions=Permissions(approval=approval, sandbox=sandbox) if approval or sandbox else None,
        exported_name=exported,
    )


def patterns_for(spec: ToolSpec) -> list[str]:
    """Rule patterns, about half of them matching the tool (by id or by exported name)."""
    prefix, _, rest = spec.id.partition(".")
    return [spec.id, spec.exported_name or "renamed", "*", f"{prefix}.*", f"*_{rest}", "other.*", "x_*", "*.none"]


@st.composite
def _field(draw: st.DrawFn, values: st.SearchStrategy[Any]) -> Any:
    """Absent, a valid value (most often) or a bad one."""
    how = draw(st.sampled_from(["absent", "valid", "valid", "valid", "junk"]))
    if how == "absent":
        return _ABSENT
    return draw(values) if how == "valid" else draw(st.sampled_from(JUNK))


_ABSENT = object()


@st.composite
def policy_tables(draw: st.DrawFn, patterns: list[str]) -> dict[str, Any]:
    """A file's [policy] table: mostly valid values, some of every kind of bad one."""
    actions = st.sampled_from([*ACTIONS, *ACTIONS, *ACTIONS, "maybe", 3])
    fields = {
        "approval": _field(st.sampled_from([a.value for a in A])),
        "sandbox": _field(st.sampled_from([s.value for s in S])),
        "include_temp_dir": _field(st.booleans()),
        "writable_roots": _field(st.lists(st.sampled_from(ROOTS), max_size=2)),
        "rules": _field(st.dictionaries(st.sampled_from(patterns), actions, max_size=3)),
    }
    table = {key: draw(value) for key, value in fields.items()}
    if draw(st.integers(0, 9)) == 0:
        table["bogus"] = 1
    return {k: v for k, v in table.items() if v is not _ABSENT}


@st.composite
def scenarios(draw: st.DrawFn, trusted: st.SearchStrategy[bool]) -> tuple[dict[str, Any], list[ConfigLayer], ToolSpec]:
    """A user's table, one to three workspace layers and a tool."""
    spec = draw(tools())
    patterns = patterns_for(spec)
    user_table = draw(policy_tables(patterns))
    layers = [
        ws(draw(policy_tables(patterns)), trusted=draw(trusted), file=f"/ws/{i}/kairox.toml")
        for i in range(draw(st.integers(1, 3)))
    ]
    return user_table, layers, spec


def _args(target: str) -> dict[str, str]:
    path = TARGETS[target]
    return {} if path is None else {"path": path}


def _engines(user_table: dict[str, Any], layers: list[ConfigLayer]) -> tuple[PolicyEngine, PolicyEngine]:
    """The engine under the user's file alone, and under it with the workspace's files."""
    alone, _, _ = merge_policy([user(user_table)])
    config, _, _ = merge_policy([user(user_table), *layers])
    return PolicyEngine.build(alone, WORKSPACE), PolicyEngine.build(config, WORKSPACE)


def _user_rule_matches(config: PolicyConfig, spec: ToolSpec) -> bool:
    return engine(PolicyConfig(rules=config.rules)).rule_for(spec.id, spec.exported_name) is not None


def _workspace_allow_matches(config: PolicyConfig, spec: ToolSpec) -> bool:
    allows: dict[str, RuleAction] = {p: a for p, a in config.workspace_rules.items() if a == "allow"}
    return engine(PolicyConfig(rules=allows)).rule_for(spec.id, spec.exported_name) == "allow"


def _in_an_added_root(alone: PolicyEngine, merged: PolicyEngine, spec: ToolSpec, target: str) -> bool:
    """A write landing in a writable root the workspace added, outside the user's roots."""
    added = [r for r in merged.config.writable_roots if r not in alone.config.writable_roots]
    roots = PolicyEngine.build(PolicyConfig(writable_roots=added, include_temp_dir=False), WORKSPACE).roots[1:]
    in_added = PolicyEngine(config=PolicyConfig(), workspace=WORKSPACE, roots=roots)
    return (
        spec.capability is Capability.WRITE
        and in_added.location(spec, _args(target)) == "inside"
        and alone.location(spec, _args(target)) == "outside"
    )


Scenario = tuple[dict[str, Any], list[ConfigLayer], ToolSpec]
LOCAL_WRITE = ToolSpec(
    id="fs.write", domain="local", capability="write", path_arguments=("path",), exported_name="fs_write"
)
LOCAL_EXEC = ToolSpec(id="shell.exec", domain="local", capability="execute", exported_name="shell_exec")
#: the cases a broken merge gets wrong, run every time besides the generated ones
UNTRUSTED_EXAMPLES: list[Scenario] = [
    ({"approval": "untrusted"}, [ws({"rules": {"fs.write": "allow"}})], LOCAL_WRITE),
    ({"approval": "never"}, [ws({"approval": "untrusted"})], LOCAL_WRITE),
    ({"approval": "untrusted"}, [ws({"approval": "never"})], LOCAL_WRITE),
    ({"sandbox": "read_only"}, [ws({"sandbox": "danger_full_access"})], LOCAL_WRITE),
    ({"include_temp_dir": False}, [ws({"include_temp_dir": True})], LOCAL_WRITE),
    ({}, [ws({"writable_roots": [str(EXTRA)]})], LOCAL_WRITE),
    ({"rules": {"fs.*": "deny"}}, [ws({"rules": {"fs.write": "ask"}})], LOCAL_WRITE),
]
TRUSTED_EXAMPLES: list[Scenario] = [
    ({}, [ws({"rules": {"shell.*": "allow"}}, trusted=True)], LOCAL_EXEC),
    ({"rules": {"fs_*": "ask"}}, [ws({"rules": {"fs.write": "allow"}}, trusted=True)], LOCAL_WRITE),
    ({"include_temp_dir": False}, [ws({"include_temp_dir": True}, trusted=True)], LOCAL_WRITE),
    (
        {"approval": "untrusted"},
        [ws({"rules": {"fs.write": "allow"}, "writable_roots": ["../extra"]}, trusted=True)],
        LOCAL_WRITE,
    ),
]


def _with_examples(examples: list[Scenario], *extra: Any) -> Callable[[Any], Any]:
    def decorate(test: Any) -> Any:
        for scenario in examples:
            test = example(scenario, *extra)(test)
        return test

    return decorate


@MORE
@_with_examples(UNTRUSTED_EXAMPLES)
@given(scenarios(st.just(False)))
def test_untrusted_workspace_files_never_loosen_a_decision(scenario: Scenario) -> None:
    user_table, layers, spec = scenario
    alone, merged = _engines(user_table, layers)
    for location in LOCATIONS:
        before, after = alone.decide_at(spec, location), merged.decide_at(spec, location)
        assert RANK[after.kind] >= RANK[before.kind], (location, merged.config, before, after)
    for target in TARGETS:  # and with real paths, so that writable roots and the temp dir count
        before, after = alone.decide(spec, _args(target)), merged.decide(spec, _args(target))
        assert RANK[after.kind] >= RANK[before.kind], (target, merged.config, before, after)


@MORE
@_with_examples([*UNTRUSTED_EXAMPLES, *TRUSTED_EXAMPLES])
@given(scenarios(st.booleans()))
def test_trusted_workspace_files_loosen_only_by_an_allow_rule_or_a_root_of_their_own(scenario: Scenario) -> None:
    user_table, layers, spec = scenario
    alone, merged = _engines(user_table, layers)
    by_rule = (
        spec.capability is not Capability.EXECUTE
        and not _user_rule_matches(merged.config, spec)
        and _workspace_allow_matches(merged.config, spec)
    )
    for location in LOCATIONS:
        before, after = alone.decide_at(spec, location), merged.decide_at(spec, location)
        assert RANK[after.kind] >= RANK[before.kind] or by_rule, (location, merged.config, before, after)
    for target in TARGETS:
        before, after = alone.decide(spec, _args(target)), merged.decide(spec, _args(target))
        if RANK[after.kind] < RANK[before.kind]:
            assert by_rule or _in_an_added_root(alone, merged, spec, target), (target, merged.config, before, after)
            assert any(layer.trusted for layer in layers)


@MORE
@_with_examples([*UNTRUSTED_EXAMPLES, *TRUSTED_EXAMPLES], 0)
@_with_examples([*UNTRUSTED_EXAMPLES, *TRUSTED_EXAMPLES], 1)
@given(scenarios(st.booleans()), st.integers(0, 7))
def test_a_user_deny_rule_matching_the_tool_always_denies(scenario: Scenario, pick: int) -> None:
    user_table, layers, spec = scenario
    names = [spec.id, spec.exported_name]
    matching = [p for p in patterns_for(spec) if any(fnmatch.fnmatchcase(n, p) for n in names)]
    pattern = matching[pick % len(matching)]
    rules = user_table.get("rules")
    user_table = {**user_table, "rules": {**(rules if isinstance(rules, dict) else {}), pattern: "deny"}}
    _, merged = _engines(user_table, layers)
    for location in LOCATIONS:
        assert isinstance(merged.decide_at(spec, location), Deny), location
    for target in TARGETS:
        assert isinstance(merged.decide(spec, _args(target)), Deny), target


@given(st.lists(st.tuples(st.sampled_from(["user", "workspace"]), st.booleans(), json_values()), max_size=4))
def test_any_layers_merge_without_raising_and_every_error_names_its_file(
    raw: list[tuple[str, bool, Any]],
) -> None:
    layers = [
        ConfigLayer(file=f"f{i}.toml", scope="user" if scope == "user" else "workspace", trusted=t, table=table)
        for i, (scope, t, table) in enumerate(raw)
    ]
    config, not_applied, errors = merge_policy(layers)
    assert isinstance(config, PolicyConfig)
    files = {layer.file for layer in layers}
    assert all(e.file in files and (e.path == "policy" or e.path.startswith(("policy.", "policy["))) for e in errors)
    workspace_files = {layer.file for layer in layers if layer.scope == "workspace"}
    assert all(n.section == "policy" and n.file in workspace_files for n in not_applied)


@given(tools().flatmap(lambda spec: policy_tables(patterns_for(spec))))
def test_a_valid_user_table_merges_to_what_structuring_it_gives(table: dict[str, Any]) -> None:
    try:
        expected: PolicyConfig = structure(table, PolicyConfig, path="policy")
    except ConfigError:
        return
    assert merged(user(table)) == expected
