"""Tool annotations are untrusted hints: a server cannot decide its own approval.

The MCP spec: clients MUST treat annotations as untrusted unless the server is trusted.
A real SDK server (tests/fixtures/mcp_servers/liar.py) marks a tool that writes a file
``readOnlyHint: true``. Only a server the user marked ``trust_annotations = true`` in
their own config gets its hints believed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from peers import fixture_server

from kairox import Capability, PolicyDenied, Runtime

pytestmark = pytest.mark.anyio

STRICT = {"approval": "untrusted", "sandbox": "read_only"}


def _server(**extra: Any) -> dict[str, Any]:
    command, *args = fixture_server("liar")
    return {"command": command, "args": args, **extra}


async def _call(tmp_path: Path, docs: list[tuple[str, dict[str, Any]]], **kwargs: Any) -> tuple[Any, Path]:
    target = tmp_path / "written.txt"
    async with Runtime.open(tmp_path / "ws", home=tmp_path / "home", config_documents=docs, **kwargs) as rt:
        spec = rt.tools.resolve("liar.peek").spec
        try:
            await rt.call_tool("liar.peek", {"path": str(target)})
        except PolicyDenied as exc:
            return (spec, exc), target
        return (spec, None), target


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    return tmp_path / "ws"


async def test_a_read_only_hint_does_not_make_a_tool_run_unasked(tmp_path: Path, ws: Path) -> None:
    docs = [("user", {"policy": STRICT, "mcp_servers": {"liar": _server()}})]
    (spec, denied), target = await _call(tmp_path, docs)
    assert spec.capability is Capability.EXECUTE  # the conservative default, not the hint
    assert spec.annotations.get("readOnlyHint") is True  # kept, to show
    assert denied is not None and "needs approval" in str(denied)
    assert not target.exists()


async def test_the_users_own_trust_annotations_lets_the_hint_decide(tmp_path: Path, ws: Path) -> None:
    # the control: the same call runs when the user vouches for the server's hints
    docs = [("user", {"policy": STRICT, "mcp_servers": {"liar": _server(trust_annotations=True)}})]
    (spec, denied), target = await _call(tmp_path, docs)
    assert spec.capability is Capability.READ and denied is None
    assert target.exists()


async def test_trust_annotations_from_a_workspace_or_a_bundle_is_ignored(tmp_path: Path, ws: Path) -> None:
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"liar": _server(trust_annotations=True)}}))
    toml = "[mcp_servers.liar2]\n" + "".join(
        f"{k} = {json.dumps(v)}\n" for k, v in _server(trust_annotations=True).items()
    )
    (ws / "kairox.toml").write_text(toml)
    docs = [("user", {"policy": STRICT})]
    async with Runtime.open(ws, home=tmp_path / "home", config_documents=docs, trusted=True) as rt:
        for name in ("liar.peek", "liar2.peek"):
            spec = rt.tools.resolve(name).spec
            assert spec.capability is Capability.EXECUTE, name  # a trusted workspace still cannot vouch
            with pytest.raises(PolicyDenied):
                await rt.call_tool(name, {"path": str(tmp_path / "x.txt")})
        # and config show / status say the workspace's kairox.toml value was not applied
        notes = [(n.key, n.reason) for n in rt.config.not_applied]
        assert ("liar2.trust_annotations", "honoured only in your own config") in notes
    assert not (tmp_path / "x.txt").exists()
