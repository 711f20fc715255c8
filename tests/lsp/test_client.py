"""LspClient against an in-memory fake peer: requests, cancelling, server requests, progress (error answers, timeouts
and loss, which it shares with DapClient, are tested for both in tests/dap/test_client.py)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_lsp._client import LspClient, lookup_setting

from .helpers import MemoryPeer, serving


class FakePeer(MemoryPeer):
    """A scripted language server: ``reply`` sends JSON-RPC to the client."""

    async def reply(self, message: dict[str, Any]) -> None:
        await self.say({"jsonrpc": "2.0", **message})


@pytest.mark.anyio
async def test_request_and_result() -> None:
    peer = FakePeer()
    async with serving(LspClient(peer)) as client:
        results: list[Any] = []

        async def call() -> None:
            results.append(await client.request("textDocument/hover", {"x": 1}))

        async with peer.calling(call) as msg:
            assert msg["method"] == "textDocument/hover" and msg["params"] == {"x": 1}
            await peer.reply({"id": msg["id"], "result": {"contents": "doc"}})
        assert results == [{"contents": "doc"}]


@pytest.mark.anyio
async def test_cancelled_caller_sends_cancel_request() -> None:
    peer = FakePeer()
    async with serving(LspClient(peer)) as client:
        with anyio.move_on_after(0.05):
            await client.request("slow", timeout=10)
        sent = await peer.recv()
        cancel = await peer.recv()
        assert cancel["method"] == "$/cancelRequest" and cancel["params"] == {"id": sent["id"]}


@pytest.mark.anyio
async def test_server_requests_are_answered() -> None:
    peer = FakePeer()
    settings = {"python": {"analysis": {"mode": "strict"}}, "pylsp.plugins.pyflakes.enabled": True}
    async with serving(LspClient(peer, settings=settings, root=Path("/work/proj"))) as client:
        await peer.reply(
            {
                "id": "c1",
                "method": "workspace/configuration",
                "params": {"items": [{"section": "python.analysis"}, {"section": "pylsp"}, {"section": "nothing"}, {}]},
            }
        )
        await peer.reply({"id": 7, "method": "window/workDoneProgress/create", "params": {"token": "t"}})
        await peer.reply(
            {
                "id": 8,
                "method": "client/registerCapability",
                "params": {"registrations": [{"id": "r1", "method": "workspace/symbol"}]},
            }
        )
        await peer.reply({"id": 9, "method": "workspace/workspaceFolders"})
        await peer.reply({"id": 10, "method": "custom/thing", "params": {}})
        answers = {}
        for _ in range(5):
            msg = await peer.recv()
            answers[msg["id"]] = msg
        assert answers["c1"]["result"] == [
            {"mode": "strict"},
            {"plugins.pyflakes.enabled": True},
            None,
            settings,
        ]
        assert answers[7] == {"jsonrpc": "2.0", "id": 7, "result": None}
        assert answers[8]["result"] is None and client.supports("workspaceSymbolProvider")
        assert answers[9]["result"] == [{"uri": "file:///work/proj", "name": "proj"}]
        assert answers[10]["error"]["code"] == -32601


@pytest.mark.anyio
async def test_wait_idle_follows_progress() -> None:
    peer = FakePeer()
    async with serving(LspClient(peer)) as client:
        await peer.reply(
            {"method": "$/progress", "params": {"token": 1, "value": {"kind": "begin", "title": "Indexing"}}}
        )
        with anyio.fail_after(1):
            while not client.progress:  # noqa: ASYNC110 - polls a plain attribute
                await anyio.sleep(0.001)
        assert await client.wait_idle(0.05) is False
        async with anyio.create_task_group() as tg:
            done: list[bool] = []

            async def waiter() -> None:
                done.append(await client.wait_idle(5))

            tg.start_soon(waiter)
            await peer.reply({"method": "$/progress", "params": {"token": 1, "value": {"kind": "report"}}})
            await anyio.sleep(0.01)
            assert done == []
            await peer.reply({"method": "$/progress", "params": {"token": 1, "value": {"kind": "end"}}})
        assert done == [True]


@pytest.mark.anyio
async def test_wait_diagnostics_needs_a_publication_after_the_change() -> None:
    peer = FakePeer()
    client = LspClient(peer)
    uri = "file:///a.py"
    async with serving(client):
        await peer.reply({"method": "textDocument/publishDiagnostics", "params": {"uri": uri, "diagnostics": []}})
        assert await client.wait_diagnostics(uri, 1)
        client.mark_changed(uri)
        assert await client.wait_diagnostics(uri, 0.05) is False
        diag = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "message": "m"}
        await peer.reply(
            {"method": "textDocument/publishDiagnostics", "params": {"uri": uri, "version": 2, "diagnostics": [diag]}}
        )
        assert await client.wait_diagnostics(uri, 1)
        assert client.diagnostics[uri] == (2, [diag])


@pytest.mark.anyio
async def test_initialize_negotiates_and_sends_settings() -> None:
    peer = FakePeer()
    async with serving(LspClient(peer, root=Path("/work/proj"), settings={"a": 1})) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.initialize)
            init = await peer.recv()
            params = init["params"]
            assert params["rootUri"] == "file:///work/proj"
            assert params["workspaceFolders"] == [{"uri": "file:///work/proj", "name": "proj"}]
            assert params["capabilities"]["general"]["positionEncodings"][0] == "utf-16"
            assert "initializationOptions" not in params
            await peer.reply(
                {"id": init["id"], "result": {"capabilities": {"positionEncoding": "utf-8", "hoverProvider": True}}}
            )
            assert (await peer.recv())["method"] == "initialized"
            config = await peer.recv()
            assert config == {
                "jsonrpc": "2.0",
                "method": "workspace/didChangeConfiguration",
                "params": {"settings": {"a": 1}},
            }
        assert client.encoding == "utf-8"
        assert client.supports("hoverProvider") and not client.supports("definitionProvider")


@pytest.mark.anyio
async def test_shutdown_sends_shutdown_then_exit() -> None:
    peer = FakePeer()
    async with serving(LspClient(peer)) as client:
        async with peer.calling(functools.partial(client.shutdown, 2.0)) as msg:
            assert msg["method"] == "shutdown"
            await peer.reply({"id": msg["id"], "result": None})
            assert (await peer.recv())["method"] == "exit"


@pytest.mark.anyio
async def test_malformed_messages_are_ignored() -> None:
    peer = FakePeer()
    async with serving(LspClient(peer)) as client:
        await peer.say([1, 2])
        await peer.reply({"id": [1], "result": 1})
        await peer.reply({"method": "$/progress", "params": "x"})
        await peer.reply({"method": "textDocument/publishDiagnostics", "params": {"uri": 3}})
        got: list[Any] = []

        async def call() -> None:
            got.append(await client.request("ping"))

        async with peer.calling(call) as msg:
            await peer.reply({"id": msg["id"], "result": "pong"})
        assert got == ["pong"] and not client.closed


names = st.text(alphabet="abcxyz", min_size=1, max_size=3)
nested = st.recursive(st.integers(), lambda c: st.dictionaries(names, c, min_size=1, max_size=3), max_leaves=10)


@given(st.dictionaries(names, nested, min_size=1, max_size=3), st.data())
def test_lookup_setting_walks_nested_tables(settings: dict[str, Any], data: st.DataObject) -> None:
    node: Any = settings
    parts: list[str] = []
    while isinstance(node, dict) and node:
        key = data.draw(st.sampled_from(sorted(node)))
        parts.append(key)
        node = node[key]
        if data.draw(st.booleans()):
            break
    assert lookup_setting(settings, ".".join(parts)) == node


@given(st.dictionaries(st.lists(names, min_size=1, max_size=3).map(".".join), st.integers(), min_size=1))
def test_lookup_setting_reads_flat_dotted_keys(settings: dict[str, int]) -> None:
    for key, value in settings.items():
        assert lookup_setting(settings, key) == value
    assert lookup_setting(settings, None) == settings
