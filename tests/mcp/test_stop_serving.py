"""A ready server stops at once when asked: stop() ends the connection it is served on.

The lifecycle serves a ready connection until it closes or stop() is called;
stop() cancels that scope (no task of its own waits on each of the two). Were
stop() to leave the connection be, every stop would wait out its grace and end
with the connection cut and a warning.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from peers import fixture_server

from kairox import Runtime, ServerState
from kairox_mcp import manager_of

pytestmark = pytest.mark.anyio


async def test_stopping_a_ready_server_ends_it_gracefully(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kairox_mcp")
    for d in ("ws", "home"):
        (tmp_path / d).mkdir()
    command, *args = fixture_server("well_behaved")
    servers = {name: {"command": command, "args": [*args, "--name", name]} for name in ("one", "two")}
    docs = [("user", {"mcp_servers": servers})]
    async with Runtime.open(tmp_path / "ws", home=tmp_path / "home", config_documents=docs) as rt:
        manager = manager_of(rt)
        one, two = manager.server("one"), manager.server("two")
        assert {one.state, two.state} == {ServerState.READY}
        await one.stop(grace=30)
        assert one.state is ServerState.STOPPED
        assert two.state is ServerState.READY  # the other one is served on
        assert one.last_failure is None
    assert not [r for r in caplog.records if "did not stop within" in r.getMessage()]
