"""Restart and stop of one peer server by name, for the providers of peer servers.

What the ``restart_server`` / ``stop_server`` functions of kairox-lsp and
kairox-dap share: find the runtime's provider
(:func:`peer_provider`), ask it to restart or stop the server, and return that
server's :class:`~kairox.ServerStatus` (:func:`restart_peer`, :func:`stop_peer`).
:func:`peer_controls` makes a feature's three functions of that kind at once, and
:func:`unavailable_servers` lists the configured servers that cannot start.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from kairox import KairoxError, ServerState, ServerStatus

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = [
    "PeerServers",
    "peer_controls",
    "peer_provider",
    "restart_peer",
    "server_named",
    "stop_peer",
    "unavailable_servers",
]

P = TypeVar("P")
S = TypeVar("S", bound="PeerServers")
V = TypeVar("V")


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


def peer_controls(
    provider: str, kind: type[S], distribution: str, label: str
) -> tuple[
    Callable[[Runtime], S],
    Callable[[Runtime, str], Awaitable[ServerStatus]],
    Callable[[Runtime, str], Awaitable[ServerStatus]],
]:
    """A feature's ``provider_of(runtime)``, ``restart_server(runtime, name)`` and
    ``stop_server(runtime, name)`` for its provider ``provider`` of class ``kind`` (from
    ``distribution``), whose servers the docstrings call ``label`` ("language server")."""

    def provider_of(runtime: Runtime) -> S:
        return peer_provider(runtime, provider, kind, distribution)

    async def restart_server(runtime: Runtime, name: str) -> ServerStatus:
        return await restart_peer(provider_of(runtime), name)

    async def stop_server(runtime: Runtime, name: str) -> ServerStatus:
        return await stop_peer(provider_of(runtime), name)

    provider_of.__doc__ = f"The runtime's ``{provider}`` provider (raises :class:`~kairox.KairoxError` when {distribution} is not loaded)."
    restart_server.__doc__ = (
        f"Restart the {label} ``name`` of ``runtime`` (:meth:`{kind.__name__}.restart`);\n"
        "returns its status once it is ready or failed."
    )
    stop_server.__doc__ = (
        f"Stop the {label} ``name`` of ``runtime`` (:meth:`{kind.__name__}.stop_server`);\n"
        "returns its status (``stopped``) once the process is reaped."
    )
    module = kind.__module__
    for function in (provider_of, restart_server, stop_server):
        function.__module__ = module
        function.__qualname__ = function.__name__
    return provider_of, restart_server, stop_server


def server_named(servers: Mapping[str, V], name: str, label: str) -> V:
    """The server ``name`` of ``servers``; raises :class:`~kairox.KairoxError` naming the
    configured ones (``label``: "language server", "debug adapter") when there is none."""
    server = servers.get(name)
    if server is None:
        known = ", ".join(servers) or "none"
        raise KairoxError(f"no {label} named {name!r} that can be started here (configured: {known})")
    return server


def unavailable_servers(runtime: Runtime | None, section: str, kind: str) -> list[ServerStatus]:
    """The servers of ``[section.NAME]`` that cannot start, as statuses of ``kind``: the held
    entries (untrusted, with the reason) and the broken ones (failed, with their errors)."""
    if runtime is None:
        return []
    config = runtime.config
    out = [
        ServerStatus(name, kind, ServerState.UNTRUSTED, entry.reason, 0, entry.file)
        for name, entry in config.held_entries(section).items()
    ]
    for name, errors in config.broken_entries(section).items():
        reason = "; ".join(str(e) for e in errors)
        out.append(ServerStatus(name, kind, ServerState.FAILED, reason, 0, config.source_of(section, name) or ""))
    return out
