"""The decision table of ``docs/policy.md``, written from :func:`kairox._policy.decide_cell`:
a test fails when the page and the logic differ in any cell."""

from __future__ import annotations

from ._policy import LOCATIONS, Location, decide_cell
from ._types import (
    ApprovalPolicy,
    Capability,
    Domain,
    SandboxPolicy,
)

__all__ = ["decision_table", "render_decision_table_markdown"]


# -- the table ---------------------------------------------------------------------

TableRow = tuple[str, str, str, str, str, str, str]


def decision_table() -> list[TableRow]:
    """Every cell of the table (no rules):
    approval, sandbox, domain, capability, location, decision, reason."""
    rows: list[TableRow] = []
    for approval in ApprovalPolicy:
        for sandbox in SandboxPolicy:
            for domain in Domain:
                for capability in Capability:
                    for location in LOCATIONS:
                        d = decide_cell(approval, sandbox, domain, capability, location)
                        rows.append(
                            (approval.value, sandbox.value, domain.value, capability.value, location, d.kind, d.reason)
                        )
    return rows


#: column headers of the rendered table, by location
LOCATION_HEADERS: dict[Location, str] = {
    "inside": "inside roots",
    "outside": "outside roots",
    "none": "no path",
}


def render_decision_table_markdown() -> str:
    """The decision table as Markdown: one table per sandbox policy, one row per
    approval x capability x domain, one column per write location."""
    cells = {row[:5]: row[5] for row in decision_table()}
    out: list[str] = []
    for sandbox in SandboxPolicy:
        out.append(f"### sandbox = {sandbox.value}")
        out.append("")
        out.append(
            "| approval | capability | domain | " + " | ".join(LOCATION_HEADERS[loc] for loc in LOCATIONS) + " |"
        )
        out.append("|---|---|---|" + "---|" * len(LOCATIONS))
        for approval in ApprovalPolicy:
            for capability in Capability:
                for domain in Domain:
                    kinds = [
                        cells[(approval.value, sandbox.value, domain.value, capability.value, loc)] for loc in LOCATIONS
                    ]
                    out.append(
                        f"| {approval.value} | {capability.value} | {domain.value} | " + " | ".join(kinds) + " |"
                    )
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
