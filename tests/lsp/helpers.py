"""Helpers shared by the LSP and DAP tests (tests/dap imports them as ``lsp.helpers``).

Process checks, finding real servers, a runtime with one plugin, an in-memory
message peer for client tests, and a strategy of JSON-shaped outside input.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import anyio
import pytest
from hypothesis import strategies as st
from peers import alive, live_descendants

from kairox import Runtime
from kairox_peer import PeerClient

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "lsp_project"


# process checks live in tests/peers.py, shared by every suite
live_children = live_descendants
__all__ = [
    "FIXTURE",
    "MemoryPeer",
    "alive",
    "config_runtime",
    "json_values",
    "live_children",
    "open_runtime",
    "serving",
    "server_command",
]


def server_command(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


def config_runtime(
    tmp_path: Path, plugin: ModuleType, document: dict[str, Any], env: dict[str, str] | None = None
) -> Runtime:
    """A runtime (not opened) with ``plugin`` only and ``document`` as its workspace kairox.toml."""
    return Runtime(
        tmp_path,
        home=tmp_path / "home",
        env=env or {},
        load_entrypoints=False,
        plugins=[plugin],
        config_files=[],
        config_documents=[("ws/kairox.toml", document)],
    )


def open_runtime(
    workspace: Path, plugin: ModuleType, document: dict[str, Any], **kwargs: Any
) -> AbstractAsyncContextManager[Runtime]:
    """``Runtime.open`` on ``workspace`` with ``plugin`` only and ``document`` as its kairox.toml."""
    return Runtime.open(
        workspace,
        home=workspace / ".home",
        load_entrypoints=False,
        plugins=[plugin],
        config_files=[],
        config_documents=[("kairox.toml", document)],
        **kwargs,
    )


class MemoryPeer:
    """Both ends of an in-memory message pipe: the client's side (``send``, ``messages``, a
    :class:`kairox_lsp.MessagePeer`) and the scripted server's (``recv``, ``say``, ``hang_up``)."""

    def __init__(self) -> None:
        self._to_server_send, self._to_server = anyio.create_memory_object_stream[dict[str, Any]](100)
        self._to_client, self._to_client_recv = anyio.create_memory_object_stream[dict[str, Any]](100)

    async def send(self, message: Mapping[str, Any]) -> None:
        await self._to_server_send.send(dict(message))

    async def messages(self) -> AsyncIterator[Any]:
        async for message in self._to_client_recv:
            yield message

    # the server's side
    async def recv(self) -> dict[str, Any]:
        """The next message the client sent (within 5 s)."""
        with anyio.fail_after(5):
            return await self._to_server.receive()

    async def say(self, message: Any) -> None:
        """Send ``message`` to the client."""
        await self._to_client.send(message)

    def hang_up(self) -> None:
        """Close the client's input, as a server that exits does."""
        self._to_client.close()

    @asynccontextmanager
    async def calling(self, call: Callable[[], Awaitable[Any]]) -> AsyncIterator[dict[str, Any]]:
        """Run ``call()`` in the background: the block gets the request it sent; the call ends with the block."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            yield await self.recv()


C = TypeVar("C", bound=PeerClient)


@asynccontextmanager
async def serving(client: C) -> AsyncIterator[C]:
    """``client`` reading its peer while the block runs; it stops reading after the block."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.run)
        yield client
        tg.cancel_scope.cancel()


def json_values(keys: Sequence[str], *, max_int: int, max_text: int, max_size: int, max_leaves: int) -> Any:
    """JSON values whose objects use ``keys``: the outside input a client must survive."""
    return st.recursive(
        st.none() | st.booleans() | st.integers(-5, max_int) | st.text(max_size=max_text),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(list(keys)), c, max_size=max_size),
        max_leaves=max_leaves,
    )
