"""What ``kairox status`` says about ``[policy.rules]`` (``kairox_cli._policy_notes``), checked
against the policy engine's own answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from kairox import ToolSpec
from kairox._policy import PolicyConfig
from kairox.ext import PolicyEngine
from kairox_cli._policy_notes import inapplicable_allows, unmatched_rules

SHELL = ToolSpec(id="shell.exec", domain="system", capability="execute", exported_name="shell_exec")
READ = ToolSpec(id="fs.read", domain="local", capability="read", exported_name="fs_read")
WRITE = ToolSpec(id="fs.write", domain="local", capability="write", exported_name="fs_write")
UNKNOWN = ToolSpec(id="git.status", domain="local", exported_name="git_status")  # no capability declared


def engine(rules: dict, workspace_rules: dict) -> PolicyEngine:
    config = PolicyConfig(rules=rules, workspace_rules=workspace_rules)
    return PolicyEngine.build(config, Path("/nonexistent-kairox-ws"))


def test_unmatched_rules_lists_the_patterns_no_tool_matches() -> None:
    e = engine(
        {"shell_exec": "deny", "git.*": "allow", "fs.read": "ask"},
        {"fs.*": "deny", "lsp.*": "ask", "git.*": "deny"},
    )
    assert unmatched_rules(e, [SHELL, READ, WRITE]) == ["git.*", "lsp.*"]
    assert unmatched_rules(e, []) == ["shell_exec", "git.*", "fs.read", "fs.*", "lsp.*"]


def test_inapplicable_allows_names_each_tool_and_why() -> None:
    e = engine({"fs_write": "ask"}, {"*": "allow", "fs.read": "allow", "nothing.*": "allow", "shell.*": "deny"})
    notes = inapplicable_allows(e, [SHELL, READ, WRITE, UNKNOWN])
    blocked, applies_to_none = notes["*"]
    assert blocked == [
        "shell.exec (its capability is execute)",
        'fs.write (your rule "fs_write" = "ask" matches it)',
        "git.status (its capability is execute)",
    ]
    assert applies_to_none is False  # it still applies to fs.read
    assert set(notes) == {"*"}  # fs.read's allow applies; a rule matching nothing is unmatched, not inapplicable
    assert inapplicable_allows(engine({}, {"shell_*": "allow"}), [SHELL]) == {
        "shell_*": (["shell.exec (its capability is execute)"], True)
    }


@pytest.mark.parametrize("spec", [SHELL, READ, WRITE, UNKNOWN], ids=lambda s: s.id)
@pytest.mark.parametrize("user_rules", [{}, {"fs.*": "ask"}, {"*_exec": "deny"}, {"git.*": "allow"}])
def test_status_says_an_allow_is_inapplicable_exactly_when_the_engine_ignores_it(
    spec: ToolSpec, user_rules: dict
) -> None:
    # the note and the rule the engine follows must not drift apart: the workspace's allow
    # is in effect for the tool (rule_for gives "allow" with no user rule allowing it)
    # exactly when status does not list the tool under it
    e = engine(user_rules, {"*": "allow"})
    listed = spec.id in " ".join(inapplicable_allows(e, [spec]).get("*", ([], False))[0])
    user_allows = any(e.matches(p, spec) and a == "allow" for p, a in user_rules.items())
    in_effect = e.rule_for(spec.id, spec.exported_name, capability=spec.capability) == "allow" and not user_allows
    assert listed is not in_effect
