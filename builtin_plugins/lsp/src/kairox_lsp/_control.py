"""Restart and stop of one peer server by name, for the providers of peer servers.

What :func:`kairox_lsp.restart_server` / :func:`kairox_lsp.stop_server` and
kairox-dap's functions of the same names share: find the runtime's provider
(:func:`peer_provider`), ask it to restart or stop the server, and return that
server's :class:`~kairox.ServerStatus` (:func:`restart_peer`, :func:`stop_peer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from kairox import KairoxError, ServerStatus

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["PeerServers", "peer_provider", "restart_peer", "stop_peer"]

P = TypeVar("P")


class PeerServers(Protocol):
    """A provider whose servers restart and stop by name (``LspToolProvider``, ``DapToolProvider``)."""

    async def restart(self, name: str) -> object: ...

    async def stop_server(self, name: str) -> object: ...

    def status(self) -> Sequence[ServerStatus]: ...


def peer_provider(runtime: Runtime, name: str, kind: type[P], distribution: str) -> P:
    """The runtime's provider ``name``, of class ``kind`` (raises :class:`~kairox.KairoxError`
    naming ``distribution`` when it is not loaded)."""
    provider = runtime.providers.get(name)
    if not isinstance(provider, kind):
        raise KairoxError(f"{distribution} is not loaded in this runtime (pip install {distribution})")
    return provider


async def restart_peer(provider: PeerServers, name: str) -> ServerStatus:
    """Restart the server ``name`` of ``provider``; returns its status once it is ready or failed."""
    await provider.restart(name)
    return _status_of(provider, name)


async def stop_peer(provider: PeerServers, name: str) -> ServerStatus:
    """Stop the server ``name`` of ``provider``; returns its status (``stopped``) once the process is reaped."""
    await provider.stop_server(name)
    return _status_of(provider, name)


def _status_of(provider: PeerServers, name: str) -> ServerStatus:
    return next(s for s in provider.status() if s.name == name)
