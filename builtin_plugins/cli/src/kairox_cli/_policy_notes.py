"""What ``kairox status`` says about ``[policy.rules]``: patterns that match no registered
tool, and workspace ``allow`` rules that cannot apply to a tool they match."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kairox.ext import toml_key

if TYPE_CHECKING:
    from kairox import Runtime, ToolSpec
    from kairox.ext import PolicyEngine

__all__ = ["allow_rule_marks", "inapplicable_allows", "unmatched_rules"]


def unmatched_rules(policy: PolicyEngine, specs: Iterable[ToolSpec]) -> list[str]:
    """The rule patterns (the user's, then the workspace's) that match no given tool's
    canonical id or exported name."""
    specs = list(specs)
    patterns = dict.fromkeys([*policy.config.rules, *policy.config.workspace_rules])
    return [p for p in patterns if not any(policy.matches(p, spec) for spec in specs)]


def inapplicable_allows(policy: PolicyEngine, specs: Iterable[ToolSpec]) -> dict[str, tuple[list[str], bool]]:
    """Each workspace ``allow`` rule that matches a given tool it cannot apply to:
    ``pattern -> (["git.git_status (its capability is execute)", ...], applies_to_none)``.
    A workspace allow rule never applies to a tool whose capability is execute (or unknown),
    nor to one a rule of the user's matches; ``applies_to_none`` is true when it applies
    to none of the tools it matches."""
    specs = list(specs)
    config = policy.config
    out: dict[str, tuple[list[str], bool]] = {}
    for pattern in [p for p, a in config.workspace_rules.items() if a == "allow"]:
        blocked: list[str] = []
        applies = False
        for spec in specs:
            if not policy.matches(pattern, spec):
                continue
            mine = [(p, a) for p, a in config.rules.items() if policy.matches(p, spec)]
            if mine:
                shown = ", ".join(f"{json.dumps(p)} = {json.dumps(a)}" for p, a in mine)
                blocked.append(f"{spec.id} (your rule {shown} matches it)")
            elif not policy.workspace_allows_reach(spec.capability):
                blocked.append(f"{spec.id} (its capability is execute)")
            else:
                applies = True
        if blocked:
            out[pattern] = (blocked, not applies)
    return out


def allow_rule_marks(rt: Runtime) -> list[tuple[str, str, str, bool]]:
    """The workspace ``allow`` rules that cannot apply to a registered tool they match, as
    ``(file, key, why, applies_to_none)``: a workspace allow rule never applies to a tool
    whose capability is execute (a server's tool that declares none counts as execute), nor
    to one a rule of the user's matches."""
    marks: list[tuple[str, str, str, bool]] = []
    for pattern, (blocked, none) in inapplicable_allows(rt.policy, rt.tools.specs()).items():
        file = ""
        for doc, data in rt.config.documents:
            policy = data.get("policy")
            rules = policy.get("rules") if isinstance(policy, dict) else None
            if rt.config.scope_of(doc) == "workspace" and isinstance(rules, dict) and pattern in rules:
                file = doc
        why = (
            f"does not apply to {', '.join(blocked)}: a workspace allow rule never applies to a tool whose "
            "capability is execute (a server's tool declares none unless its entry sets one), nor to one a "
            "rule of yours matches"
        )
        marks.append((file, toml_key(pattern, "rules"), why, none))
    return marks
