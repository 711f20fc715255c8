"""The reason an approver is given for an MCP tool says what the tool is, or that its server
declared nothing: a real server (tests/fixtures/mcp_servers/well_behaved.py, whose tools carry
no annotations) behind the configs a user writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from peers import fixture_server

from kairox import ApprovalAnswer, ApprovalRequest, PolicyDenied, Runtime

pytestmark = pytest.mark.anyio

ALWAYS = "which always needs approval"


async def _asked(tmp_path: Path, **entry: Any) -> tuple[str | None, Any]:
    """The reason the approver is asked with for ``well_behaved.echo`` (``None``: not asked),
    and the spec's ``undeclared``."""
    command, *args = fixture_server("well_behaved")
    server = {"command": command, "args": args, **entry}
    (tmp_path / "ws").mkdir(exist_ok=True)
    asked: list[str] = []

    def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request.reason)
        return ApprovalAnswer.DENY

    docs = [("user", {"mcp_servers": {"well_behaved": server}})]
    async with Runtime.open(tmp_path / "ws", home=tmp_path / "home", config_documents=docs, approver=approver) as rt:
        spec = rt.tools.resolve("well_behaved.echo").spec
        try:
            await rt.call_tool("well_behaved.echo", {"message": "hi"})
        except PolicyDenied:
            pass
    return (asked[0] if asked else None), spec.undeclared


@pytest.mark.parametrize(
    ("entry", "reason", "undeclared"),
    [
        ({}, f"declares no domain/capability; treated as system/execute, {ALWAYS}", ("domain", "capability")),
        # the user believes its annotations, but it sends none: still the default
        (
            {"trust_annotations": True},
            f"declares no domain/capability; treated as system/execute, {ALWAYS}",
            ("domain", "capability"),
        ),
        ({"domain": "local"}, f"declares no capability; treated as local/execute, {ALWAYS}", ("capability",)),
        # what the config declares keeps the reasons it had
        ({"domain": "network", "capability": "execute"}, f"runs commands (network/execute), {ALWAYS}", ()),
        ({"domain": "local", "capability": "read"}, None, ()),
    ],
)
async def test_the_reason_says_what_the_server_declared(
    tmp_path: Path, entry: dict[str, Any], reason: str | None, undeclared: tuple[str, ...]
) -> None:
    assert await _asked(tmp_path, **entry) == (reason, undeclared)
