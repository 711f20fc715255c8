"""LspServerLifecycle: one language server process, started, watched and restarted.

States (as :class:`~kairox.ServerState`): ``starting`` -> ``ready`` ->
``stopped`` | ``failed``; each transition is an event
(:mod:`kairox_lsp._events`). A server that exits on its own after it was ready
is restarted with exponential backoff, up to ``max_restarts`` times, and every
document it had open is opened again. Requests in flight when it dies fail at
once (:class:`~kairox_lsp.ConnectionLost`). The process is always reaped: on
stop (``shutdown`` + ``exit``, close stdin, grace, kill the group), on crash
and on cancellation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio

from kairox import EventBus, ServerState

from ._client import ConnectionLost, LspClient, LspError, RequestTimeout
from ._config import LspServerConfig, child_env, language_for, patterns_for
from ._documents import DocumentStore
from ._events import LspServerFailed, LspServerRunning, LspServerStarting, LspServerStopped
from ._process import StdioPeer

__all__ = ["BACKOFF_BASE", "BACKOFF_MAX", "LspServerLifecycle", "ServerUnavailable"]

logger = logging.getLogger(__name__)

BACKOFF_BASE = 0.5
BACKOFF_MAX = 30.0


class ServerUnavailable(RuntimeError):
    """The server is not running (failed, stopped, or did not come back in time)."""


class LspServerLifecycle:
    """Runs one configured server; :meth:`run` is the supervising task."""

    def __init__(
        self,
        name: str,
        config: LspServerConfig,
        *,
        workspace: Path,
        env: Mapping[str, str],
        events: EventBus | None = None,
        source: str = "",
        on_change: Callable[[LspServerLifecycle], None] | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.workspace = workspace
        self.env = env
        self.events = events or EventBus()
        self.source = source
        self.on_change = on_change
        self.patterns = patterns_for(config)
        self.documents = DocumentStore(lambda path: language_for(config, path))
        self.state = ServerState.STOPPED
        self.client: LspClient | None = None
        self.peer: StdioPeer | None = None
        #: capabilities of the last connection that reached ``ready`` (kept while restarting)
        self.capabilities: dict[str, Any] = {}
        self.error = ""
        self.restarts = 0
        self.attempts = 0
        self.returncode: int | None = None
        self._stopping = False
        self._wake = anyio.Event()
        self._changed = anyio.Event()
        self._done = anyio.Event()
        self._attempt_scope: anyio.CancelScope | None = None
        self._running = False

    # -- state --------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self.peer.pid if self.peer is not None and self.client is not None else None

    @property
    def available(self) -> bool:
        """Ready, or restarting after having been ready (its tools stay registered meanwhile)."""
        if self.state is ServerState.READY:
            return True
        return self.state is ServerState.STARTING and bool(self.capabilities) and not self._stopping

    def _set(self, state: ServerState) -> None:
        self.state = state
        self._changed.set()
        self._changed = anyio.Event()
        if self.on_change is not None:
            try:
                self.on_change(self)
            except Exception:
                logger.exception("lsp server %s: state-change callback failed", self.name)

    def _tail(self) -> str:
        return self.peer.stderr.text(40) if self.peer is not None else ""

    async def wait_settled(self, timeout: float) -> ServerState:
        """Wait until the server is no longer starting (bounded); returns the state."""
        with anyio.move_on_after(timeout):
            while self.state is ServerState.STARTING or (self.state is ServerState.STOPPED and not self._running):
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

    # -- the supervising task ---------------------------------------------------
    async def run(self) -> None:
        """Start the server and keep it running until :meth:`stop` (or cancellation)."""
        self._running = True
        try:
            while not self._stopping:
                self.attempts += 1
                self._wake = anyio.Event()
                scope = self._attempt_scope = anyio.CancelScope()
                reached, error = False, ""
                with scope:
                    try:
                        reached, error = await self._run_once()
                    except Exception as exc:  # a bug here must never take the runtime down
                        logger.exception("language server %s: supervisor error", self.name)
                        reached, error = False, f"internal error: {type(exc).__name__}: {exc}"
                self._attempt_scope = None
                if self._stopping:
                    break
                if scope.cancel_called and not error:  # pragma: no cover - only stop() cancels it
                    break
                can_restart = (
                    self.config.restart_on_crash
                    and self.restarts < self.config.max_restarts
                    and (reached or self.attempts > 1)
                )
                delay = min(BACKOFF_BASE * 2**self.restarts, BACKOFF_MAX) if can_restart else None
                self.error = error
                logger.warning("language server %s: %s", self.name, error)
                self.events.publish(
                    LspServerFailed(self.name, error, self._tail(), returncode=self.returncode, restart_in=delay)
                )
                if delay is None:
                    self._set(ServerState.FAILED)
                    break
                self.restarts += 1
                self._wake = anyio.Event()
                self._set(ServerState.STARTING)
                if not self._stopping:
                    with anyio.move_on_after(delay):
                        await self._wake.wait()
        finally:
            self.client = None
            if self.state is not ServerState.FAILED:
                self._set(ServerState.STOPPED)
                self.events.publish(LspServerStopped(self.name, self.returncode))
            self._done.set()

    async def _run_once(self) -> tuple[bool, str]:
        """One process from start to exit: (it reached ready, why it ended or "" when stopped)."""
        cfg = self.config
        self._set(ServerState.STARTING)
        self.events.publish(LspServerStarting(self.name, cfg.command, self.attempts))
        self.returncode = None
        try:
            peer = await StdioPeer.spawn(cfg.command, cfg.args, env=child_env(self.env, cfg.env), cwd=self.workspace)
        except OSError as exc:
            return False, f"cannot start {cfg.command!r}: {exc}"
        self.peer = peer
        client = LspClient(
            peer,
            name=self.name,
            root=self.workspace,
            settings=cfg.settings,
            request_timeout=cfg.request_timeout,
            describe_loss=lambda: self._describe_loss(peer),
        )
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(peer.drain_stderr)
                tg.start_soon(client.run)
                tg.start_soon(self._wake_on_close, client)
                try:
                    with anyio.fail_after(cfg.startup_timeout):
                        await client.initialize(initialization_options=cfg.initialization_options)
                        await self.documents.reopen(client)
                except TimeoutError:
                    tg.cancel_scope.cancel()
                    return False, f"no answer to initialize within {cfg.startup_timeout:g} s"
                except (LspError, ConnectionLost, RequestTimeout) as exc:
                    tg.cancel_scope.cancel()
                    return False, f"initialize failed: {exc}"
                self.client = client
                self.capabilities = dict(client.server_capabilities)
                self.error = ""
                self._set(ServerState.READY)
                self.events.publish(
                    LspServerRunning(self.name, peer.pid, client.encoding, str(client.server_info.get("name", "")))
                )
                while not self._stopping and not client.closed:
                    await self._wake.wait()
                if self._stopping and not client.closed:
                    await client.shutdown(cfg.shutdown_timeout)
                    tg.cancel_scope.cancel()
                    return True, ""
                tg.cancel_scope.cancel()
            code = await peer.wait(1.0)
            return True, f"exited with code {code}" if code is not None else "closed its output"
        finally:
            self.client = None
            self.returncode = await peer.aclose(cfg.shutdown_timeout)

    async def _wake_on_close(self, client: LspClient) -> None:
        await client.wait_closed()
        self._wake.set()

    def _describe_loss(self, peer: StdioPeer) -> str:
        code = peer.returncode
        parts = [f"exit code {code}" if code is not None else "it closed its output"]
        tail = peer.stderr.lines()[-5:]
        if tail:
            parts.append("stderr: " + " | ".join(line.strip() for line in tail if line.strip()))
        return "; ".join(parts)

    async def stop(self) -> None:
        """Stop the server (graceful, then forced) and wait for the supervising task to end."""
        self._stopping = True
        self._wake.set()
        if self.state is not ServerState.READY and self._attempt_scope is not None:
            self._attempt_scope.cancel()
        if self._running:
            await self._done.wait()
