"""Merging the ``[policy]`` tables of the config files: a workspace file only narrows.

:func:`merge_policy` is ``[policy]``'s ``ConfigSection.merge``: the user's tables apply as
written, but never below a distribution's policy floor; a workspace's may make the policies
stricter, deny or ask, and add allow rules and writable roots only where the user's trust
covers them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ._config import ConfigLayer, NotApplied
from ._config_load import toml_key
from ._convert import structure
from ._policy import RULE_STRICTNESS, PolicyConfig, RuleAction
from ._types import (
    APPROVAL_STRICTNESS,
    SANDBOX_STRICTNESS,
    ApprovalPolicy,
    SandboxPolicy,
)
from .errors import ConfigError

__all__ = ["merge_policy"]

#: the policies a floor raises and a workspace narrows: key, order (strictest first), name,
#: what a workspace may do to it
_ORDERED: tuple[tuple[str, list[Any], str, str], ...] = (
    ("approval", APPROVAL_STRICTNESS, "approval policy", "make the approval policy stricter"),
    ("sandbox", SANDBOX_STRICTNESS, "sandbox", "make the sandbox narrower"),
)


@attrs.frozen
class _PolicyFile:
    """What one file's ``[policy]`` table may hold (only for validating a layer)."""

    approval: ApprovalPolicy = ApprovalPolicy.ON_REQUEST
    sandbox: SandboxPolicy = SandboxPolicy.WORKSPACE_WRITE
    writable_roots: list[str] = attrs.field(factory=list)
    rules: dict[str, RuleAction] = attrs.field(factory=dict)
    include_temp_dir: bool = True


def _validated(layer: ConfigLayer, errors: list[ConfigError]) -> dict[str, Any]:
    """The layer's good values, structured; each bad key (each bad rule) becomes an error and is left out."""

    def check(table: dict[str, Any]) -> _PolicyFile | None:
        try:
            return structure(table, _PolicyFile, path="policy", file=layer.file)
        except ConfigError as exc:
            errors.extend(exc.errors)
            return None

    if not isinstance(layer.table, Mapping):
        errors.append(ConfigError("expected a table [policy], got a value", file=layer.file, path="policy"))
        return {}
    values: dict[str, Any] = {}
    for key, value in layer.table.items():
        if key == "rules" and isinstance(value, Mapping):
            rules: dict[str, RuleAction] = {}
            for pattern, action in value.items():
                checked = check({"rules": {pattern: action}})
                if checked is not None:
                    rules.update(checked.rules)
            values["rules"] = rules
        else:
            checked = check({key: value})
            if checked is not None:
                values[key] = getattr(checked, key)
    return values


def _apply_floors(
    validated: list[tuple[ConfigLayer, dict[str, Any]]],
    user: dict[str, Any],
    user_rules: dict[str, RuleAction],
    set_by: dict[str, str],
    not_applied: list[NotApplied],
    errors: list[ConfigError],
) -> dict[str, RuleAction]:
    """Raise the user's values (``user``, ``user_rules``, in place) to each floor layer's; a
    looser value a user's file set is a :class:`NotApplied` naming that file. Returns the
    floors' rules, which the engine applies over every other rule."""
    defaults = PolicyConfig()
    floor_rules: dict[str, RuleAction] = {}

    def refuse(key: str, floor: str, reason: str) -> None:
        if key in set_by:
            reason = f"below the policy floor of {floor}: {reason}"
            not_applied.append(NotApplied(section="policy", key=key, file=set_by[key], reason=reason))

    for layer, values in validated:
        if layer.scope != "floor":
            continue
        for key, order, what, _narrow in _ORDERED:
            if key not in values:
                continue
            least, current = values[key], user.get(key, getattr(defaults, key))
            if order.index(current) > order.index(least):
                refuse(key, layer.file, f"its {what} is {least.value}, and only a stricter one applies over it")
                user[key] = least
        if values.get("include_temp_dir") is False and user.get("include_temp_dir", True):
            refuse("include_temp_dir", layer.file, "it sets include_temp_dir = false")
            user["include_temp_dir"] = False
        if values.get("writable_roots"):
            error = "a policy floor cannot add writable roots (it may only keep what the user's files loosen)"
            errors.append(ConfigError(error, file=layer.file, path="policy.writable_roots"))
        for pattern, action in values.get("rules", {}).items():
            key = toml_key(pattern, "rules")
            if action == "allow":
                error = "a policy floor's rules may only ask or deny"
                errors.append(ConfigError(error, file=layer.file, path=f"policy.{key}"))
                continue
            if RULE_STRICTNESS[action] > RULE_STRICTNESS.get(floor_rules.get(pattern), 0):
                floor_rules[pattern] = action
            mine = user_rules.get(pattern)
            if mine is not None and RULE_STRICTNESS[mine] < RULE_STRICTNESS[action]:
                refuse(key, layer.file, f"its rule for it is {action}, which applies over any looser rule")
                del user_rules[pattern]
    return floor_rules


def merge_policy(layers: Sequence[ConfigLayer]) -> tuple[PolicyConfig, list[NotApplied], list[ConfigError]]:
    """Merge the ``[policy]`` tables of the config files (lowest precedence first).

    The user's layers merge key by key, a later one replacing a key, except
    ``rules``, which merge pattern by pattern. Then each workspace layer can only
    narrow that: make ``approval`` stricter, ``sandbox`` narrower, turn
    ``include_temp_dir`` off and add ``ask`` and ``deny`` rules; a trusted one
    may also add writable roots and ``allow`` rules (which the engine applies
    only to a tool that does not execute and that no user rule matches). Among
    workspace layers the stricter value wins. A ``floor`` layer (a distribution's
    policy floor) raises the user's values to its own before any workspace layer
    applies, and its ``ask``/``deny`` rules apply over every other rule. A
    workspace value refused by these rules, and a user's value below a floor, is
    returned as a :class:`NotApplied`; a bad value is a :class:`ConfigError` and
    is left out. Never raises.
    """
    errors: list[ConfigError] = []
    not_applied: list[NotApplied] = []
    validated = [(layer, _validated(layer, errors)) for layer in layers]

    user: dict[str, Any] = {}
    user_rules: dict[str, RuleAction] = {}
    #: the file that set each key (each rule) the user's layers end with
    set_by: dict[str, str] = {}
    for layer, values in validated:
        if layer.scope == "user":
            rules = values.pop("rules", {})
            user_rules.update(rules)
            user.update(values)
            set_by.update(dict.fromkeys([*values, *(toml_key(p, "rules") for p in rules)], layer.file))
    floor_rules = _apply_floors(validated, user, user_rules, set_by, not_applied, errors)
    base = PolicyConfig(**user, rules=user_rules, floor_rules=floor_rules)

    narrowest: dict[str, Any] = {"approval": base.approval, "sandbox": base.sandbox}
    include_temp_dir = base.include_temp_dir
    roots = list(base.writable_roots)
    workspace_rules: dict[str, RuleAction] = {}

    def refuse(layer: ConfigLayer, key: str, reason: str) -> None:
        not_applied.append(NotApplied(section="policy", key=key, file=layer.file, reason=reason))

    for layer, values in validated:
        if layer.scope != "workspace":
            continue
        # the stricter of the value so far and this layer's; one looser than the user's is refused
        for key, order, _name, narrow in _ORDERED:
            if key not in values:
                continue
            wanted, users = values[key], getattr(base, key)
            if order.index(wanted) > order.index(users):
                refuse(layer, key, f"a workspace may only {narrow} (the user's is {users.value})")
            elif order.index(wanted) < order.index(narrowest[key]):
                narrowest[key] = wanted
        if values.get("include_temp_dir") is False:
            include_temp_dir = False
        elif values.get("include_temp_dir") is True and not base.include_temp_dir:
            refuse(layer, "include_temp_dir", "a workspace may only set include_temp_dir = false (the user's is false)")
        if values.get("writable_roots"):
            if layer.trusted:
                roots += [r for r in dict.fromkeys(values["writable_roots"]) if r not in roots]
            else:
                refuse(
                    layer, "writable_roots", "only a trusted workspace may add writable roots (this one is not trusted)"
                )
        for pattern, action in values.get("rules", {}).items():
            key, users = toml_key(pattern, "rules"), user_rules.get(pattern)
            if action == "allow" and not layer.trusted:
                refuse(layer, key, "only a trusted workspace may add allow rules (this one is not trusted)")
                continue
            if action == "allow" and users is not None:
                if users != "allow":
                    why = f"a workspace allow rule never applies over a user rule (the user's rule for it is {users})"
                    refuse(layer, key, why)
                continue
            earlier = workspace_rules.get(pattern)
            if earlier is None or RULE_STRICTNESS[action] > RULE_STRICTNESS[earlier]:
                workspace_rules[pattern] = action

    approval, sandbox = narrowest["approval"], narrowest["sandbox"]
    merged = attrs.evolve(
        base,
        approval=approval,
        sandbox=sandbox,
        include_temp_dir=include_temp_dir,
        writable_roots=roots,
        workspace_rules=workspace_rules,
        user_approval=base.approval if approval is not base.approval else None,
        user_sandbox=base.sandbox if sandbox is not base.sandbox else None,
    )
    return merged, not_applied, errors
