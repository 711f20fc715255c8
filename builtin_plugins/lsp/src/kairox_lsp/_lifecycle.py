"""LspServerLifecycle: one language server process, started, watched and restarted.

A :class:`kairox_peer.ManagedServer` (states, reaping) speaking LSP: each
transition is an event (:mod:`kairox_lsp._events`). A server that exits on its
own after it was ready is restarted with exponential backoff, up to
``max_restarts`` times, and every document it had open is opened again.
Requests in flight when it dies fail at once (:class:`~kairox_lsp.ConnectionLost`).
On stop it gets ``shutdown`` + ``exit`` before stdin is closed and its group killed.
"""

from __future__ import annotations

import functools
import logging

import anyio

from kairox import Event, ServerState
from kairox_peer import ManagedServer, StdioPeer

from ._client import ConnectionLost, LspClient, LspError, RequestTimeout
from ._config import LspServerConfig, language_for, patterns_for
from ._documents import DocumentStore
from ._events import LspServerFailed, LspServerRunning, LspServerStarting, LspServerStopped

__all__ = ["BACKOFF_BASE", "BACKOFF_MAX", "LspServerLifecycle", "ServerUnavailable"]

logger = logging.getLogger(__name__)

BACKOFF_BASE = 0.5
BACKOFF_MAX = 30.0


class ServerUnavailable(RuntimeError):
    """The server is not running (failed, stopped, or did not come back in time)."""


class LspServerLifecycle(ManagedServer[LspServerConfig, LspClient]):
    """Runs one configured language server; :meth:`run` is the supervising task."""

    kind = "language server"
    initialize_errors = (LspError, ConnectionLost, RequestTimeout)

    @functools.cached_property
    def patterns(self) -> list[str]:
        """The globs of the files this server handles."""
        return patterns_for(self.config)

    @functools.cached_property
    def documents(self) -> DocumentStore:
        """The documents open on the server (opened again on each new connection)."""
        return DocumentStore(lambda path: language_for(self.config, path))

    # -- state --------------------------------------------------------------
    @property
    def available(self) -> bool:
        """Ready, or restarting after having been ready (its tools stay registered meanwhile)."""
        if self.state is ServerState.READY:
            return True
        return self.state is ServerState.STARTING and bool(self.capabilities) and not self._stopping

    async def wait_settled(self, timeout: float) -> ServerState:
        """Wait until the server is no longer starting (bounded); returns the state."""
        with anyio.move_on_after(timeout):
            # a server stopped on purpose before it ever ran (stop_server) is settled too
            while self.state is ServerState.STARTING or (
                self.state is ServerState.STOPPED and not self._running and not self._stopping
            ):
                await self._changed.wait()
        return self.state

    async def ready_client(self, timeout: float | None = None) -> LspClient:
        """The live connection, waiting (bounded) while the server starts or restarts."""
        client = self.client
        if self.state is ServerState.READY and client is not None and not client.closed:
            return client  # the common case, without a cancel scope
        limit = self.config.startup_timeout if timeout is None else timeout
        with anyio.move_on_after(limit):
            while True:
                if self.state is ServerState.READY and self.client is not None and not self.client.closed:
                    return self.client
                if self.state is ServerState.FAILED or self._stopping or self._done.is_set():
                    break
                await self._changed.wait()
        if self.state is ServerState.FAILED:
            raise ServerUnavailable(f"language server {self.name} failed: {self.error}")
        if self._stopping or self._done.is_set():
            raise ServerUnavailable(f"language server {self.name} is stopped")
        raise ServerUnavailable(f"language server {self.name} is not ready after {limit:g} s ({self.state.value})")

    # -- the protocol ------------------------------------------------------------
    def _connect(self, peer: StdioPeer) -> LspClient:
        cfg = self.config
        return LspClient(
            peer,
            name=self.name,
            root=self.workspace,
            settings=cfg.settings,
            request_timeout=cfg.request_timeout,
            describe_loss=lambda: self.describe_loss(peer),
        )

    async def _initialize(self, client: LspClient) -> None:
        await client.initialize(initialization_options=self.config.initialization_options)
        await self.documents.reopen(client)

    def _on_ready(self, client: LspClient, peer: StdioPeer) -> None:
        self.capabilities = dict(client.server_capabilities)
        self.events.publish(
            LspServerRunning(self.name, peer.pid, client.encoding, str(client.server_info.get("name", "")))
        )

    async def _goodbye(self, client: LspClient) -> None:
        await client.shutdown(self.config.shutdown_timeout)

    def _restart_delay(self, reached: bool) -> float | None:
        cfg = self.config
        if cfg.restart_on_crash and self.restarts < cfg.max_restarts and (reached or self.attempts > 1):
            return min(BACKOFF_BASE * 2.0**self.restarts, BACKOFF_MAX)
        return None

    def _starting_event(self) -> Event:
        return LspServerStarting(self.name, self.config.command, self.attempts)

    def _failed_event(self, error: str, restart_in: float | None) -> Event:
        return LspServerFailed(self.name, error, self.stderr_tail(), returncode=self.returncode, restart_in=restart_in)

    def _stopped_event(self) -> Event:
        return LspServerStopped(self.name, self.returncode)
