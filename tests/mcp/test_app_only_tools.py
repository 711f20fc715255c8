"""MCP Apps' ``_meta.ui.visibility``: a tool for its app's UI alone (``["app"]``) is never
offered to the model (a turn's tools, ``tools.search``), yet stays registered for the hosts
that show the app (the dashboard, a gateway's clients), through the same policy."""

from __future__ import annotations

from pathlib import Path

import peers
import pytest
from mcp_helpers import open_runtime

from kairox import ApprovalAnswer, ApprovalRequest

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def test_an_app_only_tool_is_never_offered_to_the_model(tmp_path: Path) -> None:
    view = tmp_path / "view.html"
    view.write_text("<p>view</p>")
    command, *args = peers.fixture_server("app_view")
    entry = {"command": command, "args": [*args, "--view", str(view)]}
    asked: list[str] = []

    def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request.tool.id)
        return ApprovalAnswer.ALLOW_ONCE

    async with open_runtime(tmp_path, {"app": entry}, approver=approver) as rt:
        assert {"app.show", "app.model_only", "app.app_refresh"} <= {s.id for s in rt.tools.specs()}
        assert not rt.tools.get_spec("app.app_refresh").model_visible
        assert rt.tools.get_spec("app.model_only").model_visible
        async with rt.session() as session:
            for budget in (None, 100_000):
                context = await session.turn_context("refresh the app view", tool_budget=budget)
                names = {t["name"] for t in context.tools}
                assert "app_show" in names and "app_model_only" in names
                assert "app_app_refresh" not in names
                assert context.omitted_tools == 0  # hidden is not "left out, find it with tools.search"
        found = await rt.call_tool("tools.search", {"query": "refresh app view"})
        assert "app.app_refresh" not in {t["id"] for t in found.structured["tools"]}  # type: ignore[index]
        # the app's own host still calls it, through the policy like any call
        assert (await rt.call_tool("app.app_refresh", {})).text == "refreshed"
        assert asked == ["app.app_refresh"]
