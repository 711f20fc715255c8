"""An idle connection holds no chunk of what its server last sent.

The pumps read up to 64 KiB at a time; a frame that keeps its last chunk while
it waits for the next one keeps an idle server's last answer (a big
``tools/list``) in memory, and with 100 servers that adds up. The pump tasks'
frames are looked at while they wait.
"""

from __future__ import annotations

import asyncio
import types
from pathlib import Path
from typing import Any

import anyio
import pytest
from stdio_helpers import context, open_session, server

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]


def _frames(coro: Any) -> list[types.FrameType]:
    out = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            out.append(frame)
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return out


def _pump_locals() -> dict[str, dict[str, Any]]:
    found = {}
    for task in asyncio.all_tasks():
        for frame in _frames(task.get_coro()):
            if frame.f_code.co_name in ("_stdout_pump", "_stderr_pump"):
                found[frame.f_code.co_name] = dict(frame.f_locals)
    return found


async def test_the_pumps_keep_no_chunk_while_they_wait(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    with anyio.fail_after(30):
        async with open_session(server("well_behaved"), ctx) as session:
            big = await session.call_tool("big", {"size": 300_000})
            assert len(big.content[0].text) == 300_000
            await session.call_tool("log", {"text": "e" * 5000})  # and a line on stderr
            await anyio.sleep(0.05)  # both pumps back to waiting
            pumps = _pump_locals()
            assert set(pumps) == {"_stdout_pump", "_stderr_pump"}, pumps.keys()
            for name, local in pumps.items():
                held = {k: len(v) for k, v in local.items() if isinstance(v, bytes | bytearray) and len(v) > 1000}
                assert not held, f"{name} holds {held}"
                assert "line" not in local, name
