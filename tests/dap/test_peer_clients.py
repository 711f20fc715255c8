"""What the LSP and DAP clients share (kairox_peer.PeerClient and what each adds the same way),
tested for both against an in-memory peer: error answers, timeouts that cancel, loss."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import attrs
import pytest

from kairox_dap._client import ConnectionLost, DapClient, DapError, RequestTimeout
from kairox_lsp._client import ConnectionLost as LspConnectionLost
from kairox_lsp._client import LspClient, LspError
from kairox_lsp._client import RequestTimeout as LspRequestTimeout

from .helpers import MemoryPeer, serving

Message = Callable[[dict[str, Any]], dict[str, Any]]


@attrs.frozen
class PeerKind:
    """One client, side by side with the other: how it is made, what it raises, and what
    its peer sends and receives for a cancel, a late answer and an error answer."""

    client: Callable[..., LspClient | DapClient]
    timed_out: type[Exception]
    lost: type[Exception]
    cancel_of: Message
    late_answer_to: Message
    #: the client's error for an error answer (:attr:`error_answer_to`), and its text
    error: type[Exception]
    error_text: str
    error_answer_to: Message

    def make(self, peer: MemoryPeer, **kwargs: Any) -> LspClient | DapClient:
        client = self.client(peer, **kwargs)
        if isinstance(client, DapClient):
            client.capabilities = {"supportsCancelRequest": True}
        return client


PEER_KINDS = [
    pytest.param(
        PeerKind(
            LspClient,
            LspRequestTimeout,
            LspConnectionLost,
            lambda sent: {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": sent["id"]}},
            lambda sent: {"jsonrpc": "2.0", "id": sent["id"], "result": 1},
            LspError,
            r"^nope \(code -32601\)$",
            lambda sent: {"jsonrpc": "2.0", "id": sent["id"], "error": {"code": -32601, "message": "nope"}},
        ),
        id="lsp",
    ),
    pytest.param(
        PeerKind(
            DapClient,
            RequestTimeout,
            ConnectionLost,
            lambda sent: {"type": "request", "command": "cancel", "arguments": {"requestId": sent["seq"]}},
            lambda sent: {"seq": 99, "type": "response", "request_seq": sent["seq"], "command": "x", "success": True},
            DapError,
            r"^slow failed: name 'x' is not defined$",  # the error's format is preferred to the message
            lambda sent: {
                "seq": 98,
                "type": "response",
                "request_seq": sent["seq"],
                "command": sent["command"],
                "success": False,
                "message": "error",
                "body": {"error": {"id": 1, "format": "name 'x' is not defined"}},
            },
        ),
        id="dap",
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", PEER_KINDS)
async def test_a_request_that_times_out_is_cancelled(kind: PeerKind) -> None:
    """Both peer clients: the caller gets a timeout, the peer is told to cancel, a late answer is ignored."""
    peer = MemoryPeer()
    async with serving(kind.make(peer)) as client:
        with pytest.raises(kind.timed_out):
            await client.request("slow", timeout=0.05)
        sent = await peer.recv()
        cancel = await peer.recv()
        assert {k: v for k, v in cancel.items() if k != "seq"} == kind.cancel_of(sent)
        await peer.say(kind.late_answer_to(sent))  # ignored: nobody waits for it any more


@pytest.mark.anyio
@pytest.mark.parametrize("kind", PEER_KINDS)
async def test_an_error_answer_raises_the_clients_error(kind: PeerKind) -> None:
    peer = MemoryPeer()
    async with serving(kind.make(peer)) as client:

        async def call() -> None:
            with pytest.raises(kind.error, match=kind.error_text):
                await client.request("slow", {"expression": "x"})

        async with peer.calling(call) as sent:
            await peer.say(kind.error_answer_to(sent))


@pytest.mark.anyio
@pytest.mark.parametrize("kind", PEER_KINDS)
async def test_a_lost_connection_fails_pending_requests_at_once(kind: PeerKind) -> None:
    """Both peer clients: the waiting caller fails promptly (not after its 30 s timeout) with the
    loss described, and so does every later request."""
    peer = MemoryPeer()
    async with serving(kind.make(peer, name="srv", describe_loss=lambda: "exit code -9")) as client:

        async def call() -> None:
            with pytest.raises(kind.lost, match="srv closed the connection: exit code -9"):
                await client.request("slow", timeout=30)

        async with peer.calling(call):
            with anyio.fail_after(1):
                peer.hang_up()
                await client.wait_closed()
        assert client.closed
        with pytest.raises(kind.lost):
            await client.request("again")
