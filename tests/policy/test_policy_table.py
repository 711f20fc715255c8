"""The decision table: each required property checked over every combination,
and docs/policy.md checked cell by cell against the engine.

The property tests state the expected outcome on their own (they never ask
``decide_cell`` what the answer should be); the docs test compares the
document with the engine so that neither can drift.
"""

from __future__ import annotations

import itertools
import re

import pytest
from regen_policy_doc import BEGIN, DOC, END, decision_table, render_decision_table_markdown

from kairox._policy import LOCATIONS, Allow, Ask, Deny, Location, RuleAction, decide_cell
from kairox._types import ApprovalPolicy, Capability, Domain, SandboxPolicy

RULES: tuple[RuleAction | None, ...] = (None, "allow", "ask", "deny")
CELLS = list(itertools.product(ApprovalPolicy, SandboxPolicy, Domain, Capability, LOCATIONS))
#: every cell but the approval policy (for tests that fix it)
SDCL = list(itertools.product(SandboxPolicy, Domain, Capability, LOCATIONS))
SDCLR = list(itertools.product(SandboxPolicy, Domain, Capability, LOCATIONS, RULES))
CELLS_WITH_RULES = list(itertools.product(ApprovalPolicy, SandboxPolicy, Domain, Capability, LOCATIONS, RULES))

A, S, D, C = ApprovalPolicy, SandboxPolicy, Domain, Capability
RANK = {"allow": 0, "ask": 1, "deny": 2}


def test_the_table_has_every_combination() -> None:
    rows = decision_table()
    keys = {r[:5] for r in rows}
    assert len(rows) == len(keys) == 4 * 3 * 3 * 3 * 3
    assert keys == {(a.value, s.value, d.value, c.value, loc) for a, s, d, c, loc in CELLS}


@pytest.mark.parametrize(("approval", "sandbox", "domain", "capability", "location", "rule"), CELLS_WITH_RULES)
def test_every_decision_is_well_formed(
    approval: ApprovalPolicy,
    sandbox: SandboxPolicy,
    domain: Domain,
    capability: Capability,
    location: Location,
    rule: RuleAction | None,
) -> None:
    d = decide_cell(approval, sandbox, domain, capability, location, rule)
    assert isinstance(d, (Allow, Ask, Deny))
    assert d.kind in RANK
    if not isinstance(d, Allow):
        assert d.reason.strip(), "an Ask or a Deny always says why"


def test_reads_run_without_asking_under_every_approval_policy() -> None:
    for approval, sandbox, domain, location in itertools.product(ApprovalPolicy, SandboxPolicy, Domain, LOCATIONS):
        for rule in (None, "allow"):
            d = decide_cell(approval, sandbox, domain, C.READ, location, rule)
            assert isinstance(d, Allow), (approval, sandbox, domain, location, rule, d)


def test_execute_never_runs_unasked_unless_never_with_danger_full_access() -> None:
    for approval, sandbox, domain, location in itertools.product(ApprovalPolicy, SandboxPolicy, Domain, LOCATIONS):
        d = decide_cell(approval, sandbox, domain, C.EXECUTE, location)
        if approval is A.NEVER and sandbox is S.DANGER_FULL_ACCESS:
            assert isinstance(d, Allow), (domain, location)
        elif approval is A.NEVER:
            assert isinstance(d, Deny), (sandbox, domain, location)
        else:
            assert isinstance(d, Ask), (approval, sandbox, domain, location, d)


def test_a_rule_is_the_only_standing_approval_for_execute_and_never_under_read_only() -> None:
    for approval, sandbox, domain, location in itertools.product(ApprovalPolicy, SandboxPolicy, Domain, LOCATIONS):
        d = decide_cell(approval, sandbox, domain, C.EXECUTE, location, "allow")
        if sandbox is S.READ_ONLY:
            assert not isinstance(d, Allow), (approval, domain, location)
        else:
            assert isinstance(d, Allow), (approval, sandbox, domain, location)


@pytest.mark.parametrize("approval", [A.UNTRUSTED, A.ON_REQUEST, A.ON_FAILURE])
def test_writes_outside_the_roots_ask_under_workspace_write(approval: ApprovalPolicy) -> None:
    for domain in Domain:
        for rule in (None, "allow"):
            d = decide_cell(approval, S.WORKSPACE_WRITE, domain, C.WRITE, "outside", rule)
            assert isinstance(d, Ask), (domain, rule, d)
            assert "outside the writable roots" in d.reason


def test_writes_outside_the_roots_are_denied_under_never_with_workspace_write() -> None:
    for domain in Domain:
        for rule in (None, "allow"):
            d = decide_cell(A.NEVER, S.WORKSPACE_WRITE, domain, C.WRITE, "outside", rule)
            assert isinstance(d, Deny), (domain, rule)


def test_writes_inside_the_roots_go_through_unless_untrusted() -> None:
    for approval in (A.ON_REQUEST, A.ON_FAILURE, A.NEVER):
        for sandbox in (S.WORKSPACE_WRITE, S.DANGER_FULL_ACCESS):
            for domain in Domain:
                d = decide_cell(approval, sandbox, domain, C.WRITE, "inside")
                assert isinstance(d, Allow), (approval, sandbox, domain)


def test_read_only_turns_every_write_into_ask_or_deny_under_never() -> None:
    for approval, domain, location in itertools.product(ApprovalPolicy, Domain, LOCATIONS):
        for rule in (None, "allow"):
            d = decide_cell(approval, S.READ_ONLY, domain, C.WRITE, location, rule)
            expected = Deny if approval is A.NEVER else Ask
            assert isinstance(d, expected), (approval, domain, location, rule, d)


def test_untrusted_asks_for_everything_but_reads() -> None:
    for sandbox, domain, capability, location in SDCL:
        d = decide_cell(A.UNTRUSTED, sandbox, domain, capability, location)
        if capability is C.READ:
            assert isinstance(d, Allow)
        else:
            assert isinstance(d, Ask), (sandbox, domain, capability, location, d)


def test_never_never_asks() -> None:
    for sandbox, domain, capability, location, rule in SDCLR:
        d = decide_cell(A.NEVER, sandbox, domain, capability, location, rule)
        assert not isinstance(d, Ask), (sandbox, domain, capability, location, rule)


def test_never_with_danger_full_access_allows_everything_without_rules() -> None:
    for domain, capability, location in itertools.product(Domain, Capability, LOCATIONS):
        assert isinstance(decide_cell(A.NEVER, S.DANGER_FULL_ACCESS, domain, capability, location), Allow)


def test_deny_rules_always_win() -> None:
    for approval, sandbox, domain, capability, location in CELLS:
        d = decide_cell(approval, sandbox, domain, capability, location, "deny")
        assert isinstance(d, Deny)
        assert "rule" in d.reason


def test_ask_rules_ask_even_for_reads_and_deny_under_never() -> None:
    for approval, sandbox, domain, capability, location in CELLS:
        d = decide_cell(approval, sandbox, domain, capability, location, "ask")
        assert isinstance(d, Deny if approval is A.NEVER else Ask)


def test_an_allow_rule_never_lifts_the_sandbox_for_writes() -> None:
    # the sandbox-refused cells: any write under read_only, a write outside the roots
    # or off the filesystem (network/system, no path) under workspace_write
    for approval, sandbox, domain, location in itertools.product(ApprovalPolicy, SandboxPolicy, Domain, LOCATIONS):
        refused = sandbox is S.READ_ONLY or (
            sandbox is S.WORKSPACE_WRITE and (location == "outside" or (location == "none" and domain is not D.LOCAL))
        )
        d = decide_cell(approval, sandbox, domain, C.WRITE, location, "allow")
        if refused and not (approval is A.NEVER and sandbox is S.DANGER_FULL_ACCESS):
            assert not isinstance(d, Allow), (approval, sandbox, domain, location)
        else:
            assert isinstance(d, Allow), (approval, sandbox, domain, location)


def test_off_filesystem_writes_leave_the_workspace_write_sandbox() -> None:
    for approval in ApprovalPolicy:
        for domain in (D.NETWORK, D.SYSTEM):
            d = decide_cell(approval, S.WORKSPACE_WRITE, domain, C.WRITE, "none")
            assert isinstance(d, Deny if approval is A.NEVER else Ask), (approval, domain)
        local = decide_cell(approval, S.WORKSPACE_WRITE, D.LOCAL, C.WRITE, "none")
        assert isinstance(local, Ask if approval is A.UNTRUSTED else Allow), approval


def test_on_request_is_stricter_than_on_failure_only_for_off_filesystem_writes_without_a_sandbox() -> None:
    differ = []
    for sandbox, domain, capability, location in SDCL:
        strict = decide_cell(A.ON_REQUEST, sandbox, domain, capability, location)
        loose = decide_cell(A.ON_FAILURE, sandbox, domain, capability, location)
        assert RANK[strict.kind] >= RANK[loose.kind]
        if strict.kind != loose.kind:
            differ.append((sandbox, domain, capability, location))
    assert differ == [
        (S.DANGER_FULL_ACCESS, D.NETWORK, C.WRITE, "none"),
        (S.DANGER_FULL_ACCESS, D.SYSTEM, C.WRITE, "none"),
    ]


def test_location_only_matters_for_writes() -> None:
    for approval, sandbox, domain, capability, rule in itertools.product(
        ApprovalPolicy, SandboxPolicy, Domain, Capability, RULES
    ):
        if capability is C.WRITE:
            continue
        kinds = {decide_cell(approval, sandbox, domain, capability, loc, rule).kind for loc in LOCATIONS}
        assert len(kinds) == 1, (approval, sandbox, domain, capability, rule)


def test_stricter_sandboxes_are_never_more_permissive() -> None:
    order = [S.DANGER_FULL_ACCESS, S.WORKSPACE_WRITE, S.READ_ONLY]
    for approval, domain, capability, location, rule in itertools.product(
        ApprovalPolicy, Domain, Capability, LOCATIONS, RULES
    ):
        ranks = [RANK[decide_cell(approval, s, domain, capability, location, rule).kind] for s in order]
        assert ranks == sorted(ranks), (approval, domain, capability, location, rule, ranks)


def test_stricter_approval_policies_are_never_more_permissive_except_never_denies() -> None:
    # untrusted >= on_request >= on_failure in every cell; never differs in kind
    # (it denies instead of asking) so it is checked by its own tests
    order = [A.ON_FAILURE, A.ON_REQUEST, A.UNTRUSTED]
    for sandbox, domain, capability, location, rule in SDCLR:
        ranks = [RANK[decide_cell(a, sandbox, domain, capability, location, rule).kind] for a in order]
        assert ranks == sorted(ranks), (sandbox, domain, capability, location, rule, ranks)
        never = decide_cell(A.NEVER, sandbox, domain, capability, location, rule)
        on_failure = decide_cell(A.ON_FAILURE, sandbox, domain, capability, location, rule)
        if isinstance(on_failure, Ask):
            assert never.kind in ("deny", "allow")
            if never.kind == "allow":
                assert sandbox is S.DANGER_FULL_ACCESS and rule is None
        else:
            assert never.kind == on_failure.kind


def test_the_default_pair_matches_the_formats_document() -> None:
    # FORMATS.md: under on_request + workspace_write a write outside the roots asks
    d = decide_cell(A.ON_REQUEST, S.WORKSPACE_WRITE, D.LOCAL, C.WRITE, "outside")
    assert isinstance(d, Ask)
    assert isinstance(decide_cell(A.ON_REQUEST, S.WORKSPACE_WRITE, D.LOCAL, C.WRITE, "inside"), Allow)
    assert isinstance(decide_cell(A.ON_REQUEST, S.WORKSPACE_WRITE, D.NETWORK, C.READ, "none"), Allow)


# -- docs/policy.md ------------------------------------------------------------------

_HEADING = re.compile(r"^### sandbox = (\w+)\s*$")
_HEADERS = {"inside roots": "inside", "outside roots": "outside", "no path": "none"}


def parse_doc_table(text: str) -> dict[tuple[str, str, str, str, str], str]:
    """Every cell of the generated block in docs/policy.md: key -> decision kind."""
    if BEGIN not in text or END not in text:
        raise AssertionError("docs/policy.md has no generated decision-table block")
    block = text.split(BEGIN, 1)[1].split(END, 1)[0]
    cells: dict[tuple[str, str, str, str, str], str] = {}
    sandbox: str | None = None
    columns: list[str] = []
    for line in block.splitlines():
        m = _HEADING.match(line)
        if m:
            sandbox = m.group(1)
            continue
        if not line.startswith("|") or line.startswith("|---"):
            continue
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if parts[:3] == ["approval", "capability", "domain"]:
            columns = [_HEADERS[h] for h in parts[3:]]
            continue
        assert sandbox is not None and columns, f"a table row before its heading: {line!r}"
        approval, capability, domain, *kinds = parts
        assert len(kinds) == len(columns), f"wrong number of cells: {line!r}"
        for location, kind in zip(columns, kinds, strict=True):
            key = (approval, sandbox, domain, capability, location)
            assert key not in cells, f"cell given twice: {key}"
            cells[key] = kind
    return cells


def doc_mismatches(text: str) -> list[str]:
    cells = parse_doc_table(text)
    problems = []
    for approval, sandbox, domain, capability, location in CELLS:
        key = (approval.value, sandbox.value, domain.value, capability.value, location)
        expected = decide_cell(approval, sandbox, domain, capability, location).kind
        got = cells.pop(key, None)
        if got != expected:
            problems.append(f"{key}: docs say {got}, the engine decides {expected}")
    problems.extend(f"{key}: in the docs but not a combination the engine knows" for key in cells)
    return problems


def test_docs_table_matches_the_engine_in_every_cell() -> None:
    problems = doc_mismatches(DOC.read_text(encoding="utf-8"))
    assert not problems, (
        "docs/policy.md is out of date (regenerate it:\n  uv run python tests/policy/regen_policy_doc.py)\n"
        + "\n".join(problems)
    )


def test_docs_block_is_exactly_the_rendered_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    block = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert block.strip("\n") == render_decision_table_markdown().strip("\n")


def test_the_docs_check_catches_a_changed_cell() -> None:
    text = DOC.read_text(encoding="utf-8")
    row = "| on_request | write | local | allow | ask | allow |"
    assert row in text  # the workspace_write table holds this row (the first table that has it)
    start = text.index("### sandbox = workspace_write")
    at = text.index(row, start)
    broken = text[:at] + row.replace("| ask |", "| allow |", 1) + text[at + len(row) :]
    problems = doc_mismatches(broken)
    assert problems == [
        "('on_request', 'workspace_write', 'local', 'write', 'outside'): docs say allow, the engine decides ask"
    ]
    assert doc_mismatches(text.replace("| never | execute | system | deny | deny | deny |\n", "", 1))


# -- what a tool that declares nothing is told --------------------------------------------

UNDECLARED: tuple[tuple[str, ...], ...] = (("domain",), ("capability",), ("domain", "capability"))


def test_what_a_tool_leaves_undeclared_changes_no_decision() -> None:
    for (approval, sandbox, domain, capability, location, rule), undeclared in itertools.product(
        CELLS_WITH_RULES, UNDECLARED
    ):
        declared = decide_cell(approval, sandbox, domain, capability, location, rule)
        defaulted = decide_cell(approval, sandbox, domain, capability, location, rule, undeclared=undeclared)
        assert defaulted.kind == declared.kind, (approval, sandbox, domain, capability, location, rule, undeclared)
        if capability is C.READ or rule in ("ask", "deny"):
            assert defaulted.reason == declared.reason  # nothing in them is about what it declared


def test_a_tool_that_declares_nothing_is_told_so_not_that_it_runs_commands() -> None:
    both = ("domain", "capability")
    asked = decide_cell(A.ON_REQUEST, S.WORKSPACE_WRITE, D.SYSTEM, C.EXECUTE, "none", undeclared=both)
    assert asked == Ask("declares no domain/capability; treated as system/execute, which always needs approval")
    confined = decide_cell(A.ON_REQUEST, S.READ_ONLY, D.SYSTEM, C.EXECUTE, "none", undeclared=both)
    assert confined.reason == (
        "declares no domain/capability; treated as system/execute, which the read_only sandbox cannot confine"
    )
    never = decide_cell(A.NEVER, S.WORKSPACE_WRITE, D.SYSTEM, C.EXECUTE, "none", undeclared=both)
    assert never == Deny(
        "declares no domain/capability; treated as system/execute, which always needs approval;"
        " the approval policy is never, so nobody is asked"
    )
    # a config that names the domain only: the capability is the default's
    local = decide_cell(A.ON_REQUEST, S.WORKSPACE_WRITE, D.LOCAL, C.EXECUTE, "none", undeclared=("capability",))
    assert local.reason == "declares no capability; treated as local/execute, which always needs approval"
    # a write whose domain is the default's
    write = decide_cell(A.ON_REQUEST, S.WORKSPACE_WRITE, D.SYSTEM, C.WRITE, "none", undeclared=("domain",))
    assert write.reason == (
        "declares no domain; treated as writing to the system domain, outside the sandbox's writable roots"
    )
    full = decide_cell(A.ON_REQUEST, S.DANGER_FULL_ACCESS, D.SYSTEM, C.WRITE, "none", undeclared=("domain",))
    assert full.reason == "declares no domain; treated as writing to the system domain"
    # what declares keeps its reasons
    declared = decide_cell(A.ON_REQUEST, S.WORKSPACE_WRITE, D.SYSTEM, C.EXECUTE, "none")
    assert declared.reason == "runs commands (system/execute), which always needs approval"
