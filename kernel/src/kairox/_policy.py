"""The policy engine: one permission model for every tool call.

``decide(tool, arguments)`` combines the approval policy, the sandbox policy,
the tool's domain and capability, where a write lands and the user's per-tool
rules into ``Allow``, ``Ask(reason)`` or ``Deny(reason)``.

:func:`decide_cell` is the whole table as pure logic (no paths, no globs);
:class:`PolicyEngine` works out the inputs of one call (the effective policies,
the matching rule, where the write targets resolve to) and asks it.
:func:`~kairox._policy_merge.merge_policy` merges the ``[policy]`` tables of the
config files so that a workspace file can only narrow the user's policy;
``tests/policy/regen_policy_doc.py`` writes the table that ``docs/policy.md`` holds.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, Union
from urllib.parse import unquote, urlsplit

import attrs

from ._text import glob_match
from ._tools import ToolSpec
from ._types import (
    ApprovalPolicy,
    Capability,
    Domain,
    Permissions,
    SandboxPolicy,
)
from .files import is_inside, resolve_path

__all__ = [
    "DEFAULT_PATH_ARGUMENTS",
    "Allow",
    "Ask",
    "Decision",
    "Deny",
    "Location",
    "PolicyConfig",
    "PolicyEngine",
    "RuleAction",
    "decide_cell",
    "file_write_spec",
]

RuleAction = Literal["allow", "ask", "deny"]


def file_write_spec(description: str, *, provider: str) -> ToolSpec:
    """What a command that writes a file asks the policy engine about: a local write with the
    id of the built-in file-write tool (``fs.write``), its target in the argument ``path``, so
    the user's rules and sandbox for writing files apply to it (``kairox catalog install``,
    ``kairox mcp import``). ``description`` says which command writes."""
    return ToolSpec(
        id="fs.write",
        description=description,
        domain=Domain.LOCAL,
        capability=Capability.WRITE,
        provider=provider,
        path_arguments=("path",),
    )


#: argument names taken as write targets when a tool does not declare its own
#: ``path_arguments``; they are looked for at any depth of the arguments
DEFAULT_PATH_ARGUMENTS = (
    "path",
    "paths",
    "file",
    "files",
    "file_path",
    "filepath",
    "filename",
    "target",
    "target_path",
    "destination",
    "dest",
    "source",
    "src",
    "output",
    "output_path",
    "output_file",
    "directory",
    "dir",
    "uri",
)


@attrs.frozen
class Allow:
    """A decision to let the call run."""

    reason: str = ""
    kind: Literal["allow"] = "allow"


@attrs.frozen
class Ask:
    """A decision to ask the approver first; ``reason`` is what the approver is shown."""

    reason: str
    kind: Literal["ask"] = "ask"


@attrs.frozen
class Deny:
    """A decision to refuse the call; ``reason`` says why."""

    reason: str
    kind: Literal["deny"] = "deny"


#: what the policy engine decides for a call
Decision = Union[Allow, Ask, Deny]

#: where a write lands: ``inside`` the writable roots, ``outside`` them (or
#: somewhere the engine cannot check), ``none`` when the call names no path
Location = Literal["inside", "outside", "none"]
LOCATIONS: tuple[Location, ...] = ("inside", "outside", "none")


@attrs.frozen
class PolicyConfig:
    """The ``[policy]`` section of ``kairox.toml``, merged (:func:`merge_policy`).

    ``approval``, ``sandbox``, ``writable_roots`` and ``include_temp_dir`` are
    the values in effect; ``rules`` are the user's own rules and
    ``workspace_rules`` the ones a workspace file added. The last five fields
    are set by :func:`merge_policy` only: a file cannot write them.
    """

    approval: ApprovalPolicy = ApprovalPolicy.ON_REQUEST
    sandbox: SandboxPolicy = SandboxPolicy.WORKSPACE_WRITE
    #: extra writable roots besides the workspace (``~`` and relative paths allowed)
    writable_roots: list[str] = attrs.field(factory=list)
    #: the user's per-tool rules: canonical-id or exported-name glob -> ``allow`` | ``ask`` | ``deny``
    rules: dict[str, RuleAction] = attrs.field(factory=dict)
    #: whether the system temporary directory is a writable root
    include_temp_dir: bool = True
    #: rules a workspace file added. They only narrow the user's rules, except an
    #: ``allow`` (from a trusted workspace), which applies only to a tool that does
    #: not execute and that no user rule matches
    workspace_rules: dict[str, RuleAction] = attrs.field(factory=dict)
    #: the user's own approval policy when a workspace file made ``approval``
    #: stricter (``None``: not narrowed). Every call is also decided under it and
    #: the stricter decision is kept: the approval order is not a decision order
    #: (under ``never`` what would be asked is denied)
    user_approval: ApprovalPolicy | None = None
    #: the user's own sandbox policy when a workspace file narrowed ``sandbox``
    user_sandbox: SandboxPolicy | None = None
    #: the ``ask``/``deny`` rules of a distribution's policy floor: they apply over any
    #: looser rule (the user's or a workspace's) a tool matches
    floor_rules: dict[str, RuleAction] = attrs.field(factory=dict)


def decide_cell(
    approval: ApprovalPolicy,
    sandbox: SandboxPolicy,
    domain: Domain,
    capability: Capability,
    location: Location,
    rule: RuleAction | None = None,
    *,
    rule_source: str = "[policy.rules]",
    undeclared: Iterable[str] = (),
) -> Decision:
    """The decision for one cell of the table (no paths, no globs: pure logic).

    ``location`` is where a write lands (see :data:`Location`); it only matters
    for writes. ``rule`` is the action of the rule for the tool, if any, and
    ``rule_source`` where that rule was written (for the reasons). ``undeclared``
    (:attr:`ToolSpec.undeclared`) changes no decision, only what a reason says the tool is.
    """
    # what the tool is, in the reasons: as declared, or the strict default standing in for it
    missing = "/".join(name for name in ("domain", "capability") if name in undeclared)
    runs = (
        f"declares no {missing}; treated as {domain.value}/execute"
        if missing
        else f"runs commands ({domain.value}/execute)"
    )
    writes_to = f"writes to the {domain.value} domain"
    if "domain" in undeclared:
        writes_to = f"declares no domain; treated as writing to the {domain.value} domain"
    if rule == "deny":
        return Deny(f"denied by a rule in {rule_source}")

    def ask(reason: str) -> Decision:
        if approval is ApprovalPolicy.NEVER:
            return Deny(f"{reason}; the approval policy is never, so nobody is asked")
        return Ask(reason)

    if rule == "ask":
        return ask(f"a rule in {rule_source} asks before this tool runs")
    if capability is Capability.READ:
        return Allow("reads only")
    if approval is ApprovalPolicy.NEVER and sandbox is SandboxPolicy.DANGER_FULL_ACCESS:
        return Allow("approval never with sandbox danger_full_access: everything runs")
    if capability is Capability.EXECUTE:
        if sandbox is SandboxPolicy.READ_ONLY:
            return ask(f"{runs}, which the read_only sandbox cannot confine")
        if rule == "allow":
            return Allow(f"allowed by a rule in {rule_source}")
        return ask(f"{runs}, which always needs approval")
    # writes: the sandbox first (a rule never lifts it), then the approval policy
    if sandbox is SandboxPolicy.READ_ONLY:
        return ask("writes, and the sandbox is read_only")
    if sandbox is SandboxPolicy.WORKSPACE_WRITE:
        if location == "outside":
            return ask("writes outside the writable roots")
        if location == "none" and domain is not Domain.LOCAL:
            return ask(f"{writes_to}, outside the sandbox's writable roots")
    if rule == "allow":
        return Allow(f"allowed by a rule in {rule_source}")
    if approval is ApprovalPolicy.UNTRUSTED:
        return ask("the approval policy untrusted asks before every write")
    if approval is ApprovalPolicy.ON_REQUEST and location == "none" and domain is not Domain.LOCAL:
        return ask(writes_to)
    if sandbox is SandboxPolicy.DANGER_FULL_ACCESS:
        return Allow("write allowed: the sandbox is danger_full_access")
    if location == "none":
        return Allow("local write naming no path")
    return Allow("write inside the writable roots")


# -- paths ------------------------------------------------------------------------


def _resolve_target(value: str, base: Path) -> Path | None:
    """A path argument (or ``file:`` URI) resolved; ``None`` when it cannot be (checked as outside)."""
    if value.startswith(("file:", "FILE:")):
        parts = urlsplit(value)
        if parts.netloc not in ("", "localhost"):
            return None
        value = unquote(parts.path)
        if not value:
            return None
    try:
        return resolve_path(value, base)
    except (ValueError, OSError, RuntimeError):
        return None  # a NUL byte, an unknown ~user, a name the OS refuses


_GLOB_PART = re.compile(r"\*|\?|\[[^\]]*\]")
_GLOB_CHAR = re.compile(r"[*?]")


def _specificity(pattern: str) -> tuple[bool, int]:
    """An exact id beats any glob; among globs, more literal characters win.

    A ``[...]`` class ends at a ``]``, so :data:`_GLOB_PART` is applied only up to the
    pattern's last ``]`` (where every ``[`` reaches one: each try matches, and what it
    read is removed) and only ``*`` and ``?`` after it: linear. Over the whole pattern,
    each ``[`` after the last ``]`` was read to the end again (quadratic)."""
    end = pattern.rfind("]") + 1
    literal = len(_GLOB_PART.sub("", pattern[:end])) + len(_GLOB_CHAR.sub("", pattern[end:]))
    return (literal == len(pattern), literal)


def _matches(pattern: str, names: tuple[str, ...]) -> bool:
    return any(glob_match(name, pattern) for name in names)


def _resolve_rule(matched: list[tuple[str, RuleAction]]) -> RuleAction | None:
    """Among matching rules: a ``deny`` always wins; otherwise the most specific
    pattern (ties: the stricter action)."""
    if not matched:
        return None
    if any(action == "deny" for _, action in matched):
        return "deny"
    best = max(_specificity(p) for p, _ in matched)
    actions = {a for p, a in matched if _specificity(p) == best}
    return "ask" if "ask" in actions else "allow"


#: how strict a rule action (or a decision of that kind) is; no rule sits between allow and ask
RULE_STRICTNESS: dict[RuleAction | None, int] = {"allow": 0, None: 1, "ask": 2, "deny": 3}
_WORKSPACE_RULES = "[policy.rules] of a workspace file"
_FLOOR_RULES = "the distribution's policy floor"
_PLUGIN_PERMISSIONS = "the permissions its plugin declares"
_USER_POLICY = "the user's own policy"


def _forget_decisions(engine: PolicyEngine, _attribute: object, value: Any) -> Any:
    engine.forget_decisions()
    return value


#: decisions an engine remembers before it starts over (specs come and go with servers)
_MAX_DECISIONS = 4096


@attrs.define
class PolicyEngine:
    """Decides every tool call. Built from :class:`PolicyConfig` and the workspace.

    :meth:`decide_at` depends on the tool's spec, the location and the policy only, never
    on a call's arguments, so its decisions are remembered per spec and location (a
    non-write tool is decided once); setting ``config``, ``workspace`` or ``roots`` forgets them.
    Deciding afresh costs 8-19 us a call; without this memory and the config's defaults'
    ``bench_mcp.py``'s per-call ratio to the SDK went from 1.06-1.11x to 1.15x.
    """

    config: PolicyConfig = attrs.field(on_setattr=_forget_decisions)
    workspace: Path = attrs.field(on_setattr=_forget_decisions)
    roots: tuple[Path, ...] = attrs.field(default=(), on_setattr=_forget_decisions)
    #: why every call is refused (a ``[policy]`` that does not validate); "" when none is
    broken: str = attrs.field(default="", on_setattr=_forget_decisions)
    #: id(spec), location -> (spec, decision); the spec is kept so its id cannot be reused
    _decisions: dict[tuple[int, str], tuple[ToolSpec, Decision]] = attrs.field(
        factory=dict, init=False, repr=False, eq=False
    )

    @classmethod
    def build(cls, config: PolicyConfig, workspace: Path) -> PolicyEngine:
        ws = Path(os.path.realpath(workspace))
        roots: list[Path] = [ws]
        for extra in config.writable_roots:
            root = _resolve_target(extra, ws)
            if root is not None:
                roots.append(root)
        if config.include_temp_dir:
            roots.append(Path(os.path.realpath(tempfile.gettempdir())))
        return cls(config=config, workspace=ws, roots=tuple(dict.fromkeys(roots)))

    @classmethod
    def refusing(cls, config: PolicyConfig, workspace: Path, reason: str) -> PolicyEngine:
        """An engine that denies every call with ``reason``: the one to use when the user's
        policy does not validate (its defaults are not the user's choice)."""
        return attrs.evolve(cls.build(config, workspace), broken=reason)

    @property
    def writable_roots(self) -> tuple[Path, ...]:
        """The roots writes may land in without asking (none under ``read_only``)."""
        if SandboxPolicy.READ_ONLY in (self.config.sandbox, self.config.user_sandbox):
            return ()
        return self.roots

    def rule_for(
        self, tool_id: str, exported_name: str | None = None, *, capability: Capability | None = None
    ) -> RuleAction | None:
        """The rule for a tool, matched by canonical id or exported name.

        Among the user's rules a matching ``deny`` always wins; otherwise the
        most specific matching pattern (ties: the stricter action). Workspace
        rules are resolved the same way and can only make the result stricter,
        except a workspace ``allow``, which counts only for a tool no user rule
        matches and whose ``capability`` is known and is not execute. A rule of
        a distribution's policy floor applies over any looser one.
        """
        return self._rule(tool_id, exported_name, capability)[0]

    def _rule(
        self, tool_id: str, exported_name: str | None, capability: Capability | None
    ) -> tuple[RuleAction | None, str]:
        """The rule for a tool and where it was written (a distribution's floor rule applies
        over any looser one)."""
        names = (tool_id, exported_name) if exported_name and exported_name != tool_id else (tool_id,)
        action, source = self._file_rule(names, capability)
        floor = _resolve_rule([(p, a) for p, a in self.config.floor_rules.items() if _matches(p, names)])
        if floor is not None and RULE_STRICTNESS[floor] > RULE_STRICTNESS[action]:
            return floor, _FLOOR_RULES
        return action, source

    def _file_rule(self, names: tuple[str, ...], capability: Capability | None) -> tuple[RuleAction | None, str]:
        """The rule the user's and the workspace's files give a tool, and where it was written."""
        user = [(p, a) for p, a in self.config.rules.items() if _matches(p, names)]
        workspace = [(p, a) for p, a in self.config.workspace_rules.items() if _matches(p, names)]
        if user or not self.workspace_allows_reach(capability):
            workspace = [(p, a) for p, a in workspace if a != "allow"]
        user_action, workspace_action = _resolve_rule(user), _resolve_rule(workspace)
        if user_action == "deny" or workspace_action is None:
            return user_action, "[policy.rules]"
        if user_action is None or RULE_STRICTNESS[workspace_action] > RULE_STRICTNESS[user_action]:
            return workspace_action, _WORKSPACE_RULES
        return user_action, "[policy.rules]"

    @staticmethod
    def workspace_allows_reach(capability: Capability | None) -> bool:
        """Whether a workspace's ``allow`` rule can apply to a tool of ``capability``: never to
        one that executes or whose capability is unknown (and, in :meth:`rule_for`, never to
        one a rule of the user's matches)."""
        return capability is not None and capability is not Capability.EXECUTE

    def matches(self, pattern: str, spec: ToolSpec) -> bool:
        """Whether a rule ``pattern`` (of ``[policy.rules]``, the user's or a workspace's)
        matches the tool, by its canonical id or its exported name, as :meth:`rule_for`
        matches them."""
        return _matches(pattern, (spec.id, spec.exported_name) if spec.exported_name else (spec.id,))

    def _paths(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> Iterator[str | None]:
        """The paths a call's path arguments name, a left-out one at its schema's default
        (``None`` for a value that cannot be checked: see :func:`_path_values`)."""
        properties = spec.input_schema.get("properties")
        defaults = properties if isinstance(properties, Mapping) else {}
        if spec.path_arguments is not None:
            for name in spec.path_arguments:
                value = arguments.get(name)
                if value is None:  # the tool's own default is where it writes
                    prop = defaults.get(name)
                    value = prop.get("default") if isinstance(prop, Mapping) else None
                yield from _path_values(value)
            return
        with_defaults = dict(arguments)
        for name, prop in defaults.items():
            if name not in arguments and name.lower() in DEFAULT_PATH_ARGUMENTS and isinstance(prop, Mapping):
                if prop.get("default") is not None:
                    with_defaults[name] = prop["default"]
        yield from _scan(with_defaults)

    def location(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> Location:
        """``inside`` when every target resolves inside a writable root, ``none`` when there is none.

        An existing file with more than one hard link counts as outside: writing it
        in place writes every other name it has, wherever they are."""
        targets = [None if p is None else _resolve_target(p, self.workspace) for p in self._paths(spec, arguments)]
        if not targets:
            return "none"
        if all(t is not None and any(is_inside(t, r) for r in self.roots) and not _shared(t) for t in targets):
            return "inside"
        return "outside"

    def decide(self, spec: ToolSpec, arguments: Mapping[str, Any] | None = None) -> Decision:
        """Allow, Ask or Deny this call of ``spec`` with ``arguments``.

        Permissions the tool's plugin or server declares can only narrow the
        user's policy: the decision is the stricter of the one under the user's
        policy and the one under the declared policies.
        """
        arguments = arguments or {}
        location: Location = "none"
        if spec.capability is Capability.WRITE:
            location = self.location(spec, arguments)
        return self.decide_at(spec, location)

    def summary(self, spec: ToolSpec) -> dict[str, Any]:
        """What the policy says of ``spec`` as a listing shows it (``kairox tools list``,
        the dashboard): ``decision`` and ``reason`` for a call without arguments, and for a
        write, whose decision depends on where it lands, ``decisions`` inside and outside."""
        decision = self.decide(spec, {})
        out: dict[str, Any] = {"decision": decision.kind, "reason": decision.reason}
        if spec.capability is Capability.WRITE:
            out["decisions"] = {
                where: {"decision": d.kind, "reason": d.reason}
                for where in ("inside", "outside")
                for d in [self.decide_at(spec, where)]
            }
        return out

    def forget_decisions(self) -> None:
        """Drop the remembered decisions (the config, workspace or roots changed)."""
        self._decisions.clear()

    def decide_at(self, spec: ToolSpec, location: Location) -> Decision:
        """The decision for a call of ``spec`` whose writes land at ``location``
        (what ``kairox tools list`` can show for each location of a write tool)."""
        if spec.capability is not Capability.WRITE:
            location = "none"
        key = (id(spec), location)
        known = self._decisions.get(key)
        if known is not None and known[0] is spec:
            return known[1]
        decision = self._decide_at(spec, location)
        if len(self._decisions) >= _MAX_DECISIONS:
            self._decisions.clear()
        self._decisions[key] = (spec, decision)
        return decision

    def _decide_at(self, spec: ToolSpec, location: Location) -> Decision:
        if self.broken:
            return Deny(f"the policy does not validate, so no tool runs until it is fixed: {self.broken}")
        perms: Permissions = spec.permissions or Permissions()
        if perms.tools is not None and not any(glob_match(spec.id, p) for p in perms.tools):
            return Deny("not among the tools its plugin's permissions allow")
        rule, rule_source = self._rule(spec.id, spec.exported_name, spec.capability)
        if spec.capability is not Capability.WRITE:
            location = "none"

        def cell(approval: ApprovalPolicy, sandbox: SandboxPolicy) -> Decision:
            return decide_cell(
                approval,
                sandbox,
                spec.domain,
                spec.capability,
                location,
                rule,
                rule_source=rule_source,
                undeclared=spec.undeclared,
            )

        config = self.config
        decision = cell(config.approval, config.sandbox)
        # the call is also decided under each narrower policy, in this order, and the
        # strictest decision is kept: the plugin's declared permissions over the policy in
        # effect; when a workspace narrowed the user's policy, the user's own, then the
        # plugin's permissions over that
        declares = perms.approval is not None or perms.sandbox is not None
        narrower: list[tuple[ApprovalPolicy, SandboxPolicy, str]] = []
        if declares:
            narrower.append((perms.approval or config.approval, perms.sandbox or config.sandbox, _PLUGIN_PERMISSIONS))
        if config.user_approval is not None or config.user_sandbox is not None:
            approval, sandbox = config.user_approval or config.approval, config.user_sandbox or config.sandbox
            narrower.append((approval, sandbox, _USER_POLICY))
            if declares:
                narrower.append((perms.approval or approval, perms.sandbox or sandbox, _PLUGIN_PERMISSIONS))
        for approval, sandbox, under in narrower:
            narrowed = cell(approval, sandbox)
            if RULE_STRICTNESS[narrowed.kind] > RULE_STRICTNESS[decision.kind]:
                reason = f"{narrowed.reason} (under {under}: approval {approval.value}, sandbox {sandbox.value})"
                decision = Ask(reason) if narrowed.kind == "ask" else Deny(reason)
        return decision


def _path_values(value: Any) -> Iterator[str | None]:
    """The paths one path argument names: a string, or each string of a list. Any other
    value (a number, a table, ``None`` in a list) cannot be checked: it is yielded as
    ``None`` and counts as outside every root. A ``None`` argument names nothing."""
    if value is None:
        return
    for item in value if isinstance(value, list) else [value]:
        yield item if isinstance(item, str) else None


def _scan(value: Any) -> Iterator[str | None]:
    """Default path arguments found anywhere in nested arguments, at any depth (walked
    with a stack, so nesting costs no recursion), as :func:`_path_values` reads each."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            for key, inner in item.items():
                if isinstance(key, str) and key.lower() in DEFAULT_PATH_ARGUMENTS:
                    yield from _path_values(inner)
                else:
                    stack.append(inner)
        elif isinstance(item, list):
            stack.extend(reversed(item))


def _shared(target: Path) -> bool:
    """``target`` is an existing regular file with more than one hard link."""
    try:
        st = os.stat(target, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1
