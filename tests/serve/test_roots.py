"""A backend's ``roots/list`` through ``kairox serve --http``: a client that declared roots is
asked (on its call, as for sampling: a request on the handshake's back channel, an
``InputRequiredResult`` round on 2026-07-28), and its roots reach the backend only where they
lie inside the gateway's own roots (the workspace and ``[policy] writable_roots``): a remote
client's paths name its machine, not this one. A client without the capability is not asked;
the backend is told the gateway's roots. (Over stdio the client is on this machine: its roots
are the backend's as given, test_forward.py::test_roots and test_held.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types
import pytest
from serve_helpers import TOKEN, connect, serve_http
from test_forward import Host, with_sdk_backend
from test_stdio import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]

#: the handshake's back channel, and 2026-07-28's InputRequiredResult rounds
MODES = ["legacy", "auto"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_remote_clients_roots_outside_the_workspace_never_reach_the_backend(tmp_path: Path, mode: str) -> None:
    """The attack: an HTTP client answers ``roots/list`` with folders of this machine outside
    the workspace (directly, through a link inside it, through ``..``, the whole disk, a path
    of another host). The backend, a real MCP server, reports the roots it was given: only the
    one inside the workspace, as its real path; each dropped root is logged."""
    ws = with_sdk_backend(tmp_path)
    inside = ws.root / "src"
    inside.mkdir()
    secret = tmp_path / "secret"  # beside the workspace, not in it
    secret.mkdir()
    (ws.root / "leads-out").symlink_to(secret, target_is_directory=True)
    offered = {
        "inside": inside.as_uri(),
        "outside": secret.as_uri(),
        "a link out": (ws.root / "leads-out").as_uri(),
        "dot-dot": f"{inside.as_uri()}/../../secret",
        "the whole disk": "file:///",
        "another host": f"file://client.example{inside}",
    }
    asked: list[int] = []

    async def list_roots(context: Any) -> types.ListRootsResult:
        asked.append(1)
        return types.ListRootsResult.model_validate({"roots": [{"uri": u, "name": n} for n, u in offered.items()]})

    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN), verbose=True) as (url, _proc):
        async with connect(url, mode=mode, list_roots_callback=list_roots) as client:
            result = await client.call_tool("asks_roots", {})
    assert not result.is_error, text_of(result)
    assert asked == [1]
    assert json.loads(text_of(result)) == [{"uri": inside.resolve().as_uri(), "name": "inside"}]
    assert "secret" not in text_of(result)
    log = (ws.root.parent / f"serve-{urlsplit(url).port}.log").read_text(errors="replace")
    assert log.count("is outside the gateway's roots") == len(offered) - 1, log[-3000:]


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_without_roots_is_not_asked(tmp_path: Path, mode: str) -> None:
    """A client that declared sampling but not roots: it gets no roots question (and its call
    does not fail for it); the backend is told the gateway's roots, the workspace."""
    ws = with_sdk_backend(tmp_path)
    host = Host()
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        async with connect(url, mode=mode, sampling_callback=host.sample) as client:
            result = await client.call_tool("asks_roots", {})
    assert not result.is_error, text_of(result)
    assert [r["uri"] for r in json.loads(text_of(result))] == [ws.root.resolve().as_uri()]
    assert host.samples == host.approvals == []
