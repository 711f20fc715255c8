"""Once a server's tools are registered, none of the SDK's ``Tool`` objects is kept.

Kairox turns each listed tool into a :class:`~kairox.ToolSpec`; the SDK's
pydantic objects it came from were held for the connection's life by the frame
that listed them (at 100 servers of 50 tools, a fifth of the client's memory per
server). ``benchmarks/bench_peers.py --only scale`` measures the memory.
"""

from __future__ import annotations

import gc
from pathlib import Path

import mcp.types
import pytest
from peers import fixture_server

from kairox import Runtime, ServerState
from kairox_mcp import manager_of

pytestmark = pytest.mark.anyio


def _sdk_tools() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is mcp.types.Tool)


async def test_no_sdk_tool_object_outlives_the_registration(tmp_path: Path) -> None:
    for d in ("ws", "home"):
        (tmp_path / d).mkdir()
    command, *args = fixture_server("well_behaved")
    docs = [("user", {"mcp_servers": {"wb": {"command": command, "args": args}}})]
    before = _sdk_tools()
    async with Runtime.open(tmp_path / "ws", home=tmp_path / "home", config_documents=docs) as rt:
        assert manager_of(rt).server("wb").state is ServerState.READY
        assert len(rt.tools.by_provider("mcp:wb")) >= 6
        assert _sdk_tools() == before
