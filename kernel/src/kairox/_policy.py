"""The policy engine: one permission model for every tool call.

``decide(tool, arguments)`` combines the approval policy, the sandbox policy,
the tool's domain and capability, the write target (for writes) and the user's
per-tool rules into ``Allow``, ``Ask(reason)`` or ``Deny(reason)``. The full
table is generated into ``docs/policy.md`` by :func:`decision_table` and tested
cell by cell.
"""

from __future__ import annotations

import fnmatch
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, Union

import attrs

from ._tools import ToolSpec
from ._types import (
    APPROVAL_STRICTNESS,
    SANDBOX_STRICTNESS,
    ApprovalPolicy,
    Capability,
    Domain,
    Permissions,
    SandboxPolicy,
)

__all__ = [
    "Allow",
    "Ask",
    "Decision",
    "Deny",
    "PolicyConfig",
    "PolicyEngine",
    "RuleAction",
    "decide_cell",
    "resolve_path",
]

RuleAction = Literal["allow", "ask", "deny"]

#: argument names taken as write targets when a tool does not declare its own
DEFAULT_PATH_ARGUMENTS = (
    "path",
    "file",
    "file_path",
    "filepath",
    "filename",
    "target",
    "destination",
    "dest",
    "output",
    "output_path",
    "directory",
    "dir",
)


@attrs.frozen
class Allow:
    reason: str = ""
    kind: Literal["allow"] = "allow"


@attrs.frozen
class Ask:
    reason: str
    kind: Literal["ask"] = "ask"


@attrs.frozen
class Deny:
    reason: str
    kind: Literal["deny"] = "deny"


Decision = Union[Allow, Ask, Deny]

Location = Literal["inside", "outside", "none"]


@attrs.frozen
class PolicyConfig:
    """The ``[policy]`` section of ``kairox.toml``."""

    approval: ApprovalPolicy = ApprovalPolicy.ON_REQUEST
    sandbox: SandboxPolicy = SandboxPolicy.WORKSPACE_WRITE
    writable_roots: list[str] = attrs.field(factory=list)
    rules: dict[str, RuleAction] = attrs.field(factory=dict)
    include_temp_dir: bool = True


def _stricter_approval(a: ApprovalPolicy, b: ApprovalPolicy | None) -> ApprovalPolicy:
    if b is None:
        return a
    return min(a, b, key=APPROVAL_STRICTNESS.index)


def _stricter_sandbox(a: SandboxPolicy, b: SandboxPolicy | None) -> SandboxPolicy:
    if b is None:
        return a
    return min(a, b, key=SANDBOX_STRICTNESS.index)


def decide_cell(
    approval: ApprovalPolicy,
    sandbox: SandboxPolicy,
    domain: Domain,
    capability: Capability,
    location: Location,
    rule: RuleAction | None = None,
) -> Decision:
    """The decision for one cell of the table (no paths, no globs: pure logic).

    ``location`` is where a write lands: ``inside`` the writable roots,
    ``outside`` them, or ``none`` when the tool names no target path.
    """
    if rule == "deny":
        return Deny("denied by a rule in [policy.rules]")

    def ask(reason: str) -> Decision:
        if approval is ApprovalPolicy.NEVER:
            return Deny(f"{reason} (approval policy is never, so nobody is asked)")
        return Ask(reason)

    if rule == "ask":
        return ask("a rule in [policy.rules] asks for this tool")
    if capability is Capability.READ:
        return Allow("read-only tool")
    if approval is ApprovalPolicy.NEVER and sandbox is SandboxPolicy.DANGER_FULL_ACCESS:
        return Allow("approval never + danger_full_access")
    if capability is Capability.EXECUTE:
        if rule == "allow":
            return Allow("allowed by a rule in [policy.rules]")
        return ask(f"runs commands ({domain.value}/execute) and needs approval")
    # writes
    if sandbox is SandboxPolicy.READ_ONLY:
        return ask("the sandbox is read_only and this tool writes")
    if sandbox is SandboxPolicy.WORKSPACE_WRITE and location == "outside":
        return ask("writes outside the writable roots")
    if rule == "allow":
        return Allow("allowed by a rule in [policy.rules]")
    if approval is ApprovalPolicy.UNTRUSTED:
        return ask("approval policy untrusted asks before every write")
    if location == "none" and domain is not Domain.LOCAL and approval is ApprovalPolicy.ON_REQUEST:
        return ask(f"writes to the {domain.value} domain")
    return Allow("write allowed by the sandbox")


def resolve_path(value: str, base: Path) -> Path:
    """Resolve a path argument the way the OS would: ``~``, relative to ``base``, ``..`` and symlinks."""
    expanded = os.path.expanduser(value)
    path = Path(expanded)
    if not path.is_absolute():
        path = base / path
    return Path(os.path.realpath(path))


def _is_inside(path: Path, root: Path) -> bool:
    try:
        return os.path.commonpath([str(path), str(root)]) == str(root)
    except ValueError:
        return False


@attrs.define
class PolicyEngine:
    """Decides every tool call. Built from :class:`PolicyConfig` and the workspace."""

    config: PolicyConfig
    workspace: Path
    roots: tuple[Path, ...] = ()

    @classmethod
    def build(cls, config: PolicyConfig, workspace: Path) -> PolicyEngine:
        ws = Path(os.path.realpath(workspace))
        roots: list[Path] = [ws]
        for extra in config.writable_roots:
            roots.append(resolve_path(extra, ws))
        if config.include_temp_dir:
            roots.append(Path(os.path.realpath(tempfile.gettempdir())))
        return cls(config=config, workspace=ws, roots=tuple(dict.fromkeys(roots)))

    @property
    def writable_roots(self) -> tuple[Path, ...]:
        if self.config.sandbox is SandboxPolicy.READ_ONLY:
            return ()
        return self.roots

    def rule_for(self, tool_id: str) -> RuleAction | None:
        """The strongest matching rule: deny beats ask beats allow."""
        matched = {action for pattern, action in self.config.rules.items() if fnmatch.fnmatchcase(tool_id, pattern)}
        for action in ("deny", "ask", "allow"):
            if action in matched:
                return action  # type: ignore[return-value]
        return None

    def targets(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> list[Path]:
        names: Iterable[str] = spec.path_arguments if spec.path_arguments is not None else DEFAULT_PATH_ARGUMENTS
        found: list[Path] = []
        for name in names:
            value = arguments.get(name)
            values = value if isinstance(value, list) else [value]
            for v in values:
                if isinstance(v, str) and v:
                    found.append(resolve_path(v, self.workspace))
        return found

    def location(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> Location:
        targets = self.targets(spec, arguments)
        if not targets:
            return "none"
        roots = self.roots
        if all(any(_is_inside(t, r) for r in roots) for t in targets):
            return "inside"
        return "outside"

    def decide(self, spec: ToolSpec, arguments: Mapping[str, Any] | None = None) -> Decision:
        arguments = arguments or {}
        perms: Permissions = spec.permissions or Permissions()
        rule = self.rule_for(spec.id)
        if perms.tools is not None and not any(fnmatch.fnmatchcase(spec.id, p) for p in perms.tools):
            return Deny("not among the tools its plugin's permissions allow")
        approval = _stricter_approval(self.config.approval, perms.approval)
        sandbox = _stricter_sandbox(self.config.sandbox, perms.sandbox)
        location: Location = "none"
        if spec.capability is Capability.WRITE:
            location = self.location(spec, arguments)
        return decide_cell(approval, sandbox, spec.domain, spec.capability, location, rule)


def decision_table() -> list[tuple[str, str, str, str, str, str, str]]:
    """Every cell of the table (no rules): approval, sandbox, domain, capability, location, decision, reason."""
    rows = []
    for approval in ApprovalPolicy:
        for sandbox in SandboxPolicy:
            for domain in Domain:
                for capability in Capability:
                    locations: tuple[Location, ...] = (
                        ("inside", "outside", "none") if capability is Capability.WRITE else ("none",)
                    )
                    for location in locations:
                        d = decide_cell(approval, sandbox, domain, capability, location)
                        rows.append(
                            (approval.value, sandbox.value, domain.value, capability.value, location, d.kind, d.reason)
                        )
    return rows
