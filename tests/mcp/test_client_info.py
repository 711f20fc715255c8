"""The ``clientInfo`` kairox sends in ``initialize``: its name and kairox-mcp's version,
read from the package metadata once per process, not once per server (a read parses the
METADATA file: about 0.7 ms a server when 100 start)."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import peers
import pytest
from mcp_helpers import open_runtime

import kairox_mcp.client as client

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def test_every_server_gets_the_version_and_the_metadata_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []

    def counted(name: str) -> str:
        reads.append(name)
        return version(name)

    client._client_version.cache_clear()
    monkeypatch.setattr(client, "version", counted)
    command, *args = peers.fixture_server("client_info")
    servers = {f"s{i}": {"command": command, "args": args, "domain": "local", "capability": "read"} for i in range(3)}
    try:
        async with open_runtime(tmp_path, servers) as rt:
            infos = [json.loads((await rt.call_tool(f"s{i}.client_info")).text) for i in range(3)]
    finally:
        client._client_version.cache_clear()  # the next test reads the real one again
    assert infos == [{"name": "kairox", "version": version("kairox-mcp")}] * 3
    assert reads == ["kairox-mcp"]
