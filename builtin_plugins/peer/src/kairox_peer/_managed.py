"""ManagedServer: one peer process (a language server, a debug adapter) started, watched and reaped.

The lifecycle that kairox-lsp's ``LspServerLifecycle`` and kairox-dap's
``DapServerLifecycle`` share. States (as :class:`~kairox.ServerState`):
``stopped`` -> ``starting`` -> ``ready`` -> ``stopped`` | ``failed``. One
attempt is one process from start to exit: spawn it (:class:`StdioPeer`, its
own session), connect a :class:`PeerClient`, initialize within
``startup_timeout``, then wait until :meth:`ManagedServer.stop` or until the
process goes away. A process that ends on its own is restarted when
:meth:`ManagedServer._restart_delay` gives a delay, else the server is
``failed``. The process is always reaped: on stop (the subclass's goodbye, close
stdin, grace, kill the group and session), on crash and on cancellation.

A subclass supplies the protocol: :meth:`~ManagedServer._connect` (the client
over the peer), :meth:`~ManagedServer._initialize`, the events it publishes
and, optionally, a goodbye and what to kill with the process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import anyio

from kairox import Event, ServerState
from kairox.ext import EventBus

from ._client import PeerClient
from ._config import PeerServerConfig, child_env
from ._process import StdioPeer

__all__ = ["ManagedServer", "Spawn"]

logger = logging.getLogger(__name__)

#: how a server's supervising task is started: ``runtime.spawn`` (``spawn(fn, name=...)``)
Spawn = Callable[..., None]

ConfigT = TypeVar("ConfigT", bound=PeerServerConfig)
ClientT = TypeVar("ClientT", bound=PeerClient)


class ManagedServer(Generic[ConfigT, ClientT]):
    """Runs one configured peer process; :meth:`run` is the supervising task (:meth:`launch` starts it)."""

    #: what the process is called in messages ("language server", "debug adapter")
    kind: ClassVar[str] = "server"
    #: what the client raises when ``initialize`` fails (besides a timeout)
    initialize_errors: ClassVar[tuple[type[Exception], ...]] = (ConnectionError,)

    def __init__(
        self,
        name: str,
        config: ConfigT,
        *,
        workspace: Path,
        env: Mapping[str, str],
        events: EventBus | None = None,
        source: str = "",
        on_change: Callable[[Any], None] | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.workspace = workspace
        self.env = env
        self.events = events or EventBus()
        self.source = source
        #: called with the server after every state change (an exception is logged)
        self.on_change = on_change
        self.state = ServerState.STOPPED
        self.client: ClientT | None = None
        self.peer: StdioPeer | None = None
        self.error = ""
        #: what the peer said it can do, from the last connection that reached ``ready``
        self.capabilities: dict[str, Any] = {}
        self.attempts = 0
        self.restarts = 0
        self.returncode: int | None = None
        self._stopping = False
        self._running = False  # a supervising task was started
        self._wake = anyio.Event()
        self._changed = anyio.Event()
        self._done = anyio.Event()
        self._attempt_scope: anyio.CancelScope | None = None

    # -- state --------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """The process's pid while a client is connected to it."""
        return self.peer.pid if self.peer is not None and self.client is not None else None

    @property
    def active(self) -> bool:
        """Its supervising task was started and has not ended."""
        return self._running and not self._done.is_set()

    def _set(self, state: ServerState) -> None:
        self.state = state
        self._changed.set()
        self._changed = anyio.Event()
        if self.on_change is not None:
            try:
                self.on_change(self)
            except Exception:
                logger.exception("%s %s: state-change callback failed", self.kind, self.name)

    def stderr_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines the process wrote to stderr."""
        return self.peer.stderr.text(lines) if self.peer is not None else ""

    def describe_loss(self, peer: StdioPeer) -> str:
        """Why the connection to ``peer`` closed: its exit code and its last stderr lines."""
        code = peer.returncode
        parts = [f"exit code {code}" if code is not None else "it closed its output"]
        tail = [line.strip() for line in peer.stderr.lines()[-5:] if line.strip()]
        if tail:
            parts.append("stderr: " + " | ".join(tail))
        return "; ".join(parts)

    # -- what a subclass supplies ---------------------------------------------------
    def _connect(self, peer: StdioPeer) -> ClientT:
        """The client over a started process (pass ``describe_loss=lambda: self.describe_loss(peer)``)."""
        raise NotImplementedError

    async def _initialize(self, client: ClientT) -> None:
        """The protocol's handshake (bounded by ``startup_timeout``); raises :attr:`initialize_errors`."""
        raise NotImplementedError

    def _on_ready(self, client: ClientT, peer: StdioPeer) -> None:
        """The handshake is done (state ``ready``): publish the running event."""

    async def _goodbye(self, client: ClientT) -> None:
        """Say goodbye in the protocol before the process is closed on :meth:`stop` (LSP: ``shutdown``)."""

    def _before_reap(self, peer: StdioPeer) -> None:
        """The process is about to be closed and reaped: kill what else belongs to it."""

    def _restart_delay(self, reached: bool) -> float | None:
        """Seconds to wait before starting again after the process ended on its own; ``None``: failed."""
        return None

    def _ended_cleanly(self) -> bool:
        """The process ended on its own, and that is not a failure (a debug adapter after its session)."""
        return False

    def _starting_event(self) -> Event | None:
        return None

    def _failed_event(self, error: str, restart_in: float | None) -> Event | None:
        return None

    def _stopped_event(self) -> Event | None:
        return None

    def _publish(self, event: Event | None) -> None:
        if event is not None:
            self.events.publish(event)

    # -- the supervising task ---------------------------------------------------------
    def launch(self, spawn: Spawn) -> None:
        """Start :meth:`run` with ``spawn`` (``runtime.spawn``); the state is ``starting`` from now on."""
        self._done = anyio.Event()
        self._running = True
        self._set(ServerState.STARTING)
        spawn(self.run, name=f"{self.kind} {self.name}")

    async def run(self) -> None:
        """Start the process and keep it running until :meth:`stop` (or cancellation)."""
        self._running = True
        try:
            while not self._stopping:
                self.attempts += 1
                self._wake = anyio.Event()
                self._set(ServerState.STARTING)
                self._publish(self._starting_event())
                reached, error = await self._attempt()
                if self._stopping or self._ended_cleanly():
                    break
                delay = self._restart_delay(reached)
                self.error = error
                logger.warning("%s %s: %s", self.kind, self.name, error)
                self._publish(self._failed_event(error, delay))
                if delay is None:
                    self._set(ServerState.FAILED)
                    break
                self.restarts += 1
                self._wake = anyio.Event()
                self._set(ServerState.STARTING)
                with anyio.move_on_after(delay):
                    await self._wake.wait()
        finally:
            self.client = None
            if self.state is not ServerState.FAILED:
                self._set(ServerState.STOPPED)
                self._publish(self._stopped_event())
            self._done.set()

    async def _attempt(self) -> tuple[bool, str]:
        """One process, in a scope :meth:`stop` cancels while it is not ready: (it reached ready, why it ended)."""
        scope = self._attempt_scope = anyio.CancelScope()
        try:
            with scope:
                return await self._run_once()
        except Exception as exc:  # a bug here must never take the runtime down
            logger.exception("%s %s: supervisor error", self.kind, self.name)
            return False, f"internal error: {type(exc).__name__}: {exc}"
        finally:
            self._attempt_scope = None
        return False, ""  # cancelled by stop()

    async def _run_once(self) -> tuple[bool, str]:
        """One process from start to exit: (it reached ready, why it ended or "" when stopped)."""
        cfg = self.config
        self.returncode = None
        try:
            peer = await StdioPeer.spawn(cfg.command, cfg.args, env=child_env(self.env, cfg.env), cwd=self.workspace)
        except OSError as exc:
            return False, f"cannot start {cfg.command!r}: {exc}"
        self.peer = peer
        client = self._connect(peer)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(peer.drain_stderr)
                tg.start_soon(client.run)
                tg.start_soon(self._wake_on_close, client)
                try:
                    with anyio.fail_after(cfg.startup_timeout):
                        await self._initialize(client)
                except TimeoutError:
                    tg.cancel_scope.cancel()
                    return False, f"no answer to initialize within {cfg.startup_timeout:g} s"
                except self.initialize_errors as exc:
                    tg.cancel_scope.cancel()
                    return False, f"initialize failed: {exc}"
                self.client = client
                self.error = ""
                self._set(ServerState.READY)
                self._on_ready(client, peer)
                while not self._stopping and not client.closed:
                    await self._wake.wait()
                if self._stopping:
                    if not client.closed:
                        await self._goodbye(client)
                    tg.cancel_scope.cancel()
                    return True, ""
                tg.cancel_scope.cancel()
            code = await peer.wait(1.0)
            return True, f"exited with code {code}" if code is not None else "closed its output"
        finally:
            self.client = None
            with anyio.CancelScope(shield=True):
                self._before_reap(peer)
                self.returncode = await peer.aclose(cfg.shutdown_timeout)

    async def _wake_on_close(self, client: ClientT) -> None:
        await client.wait_closed()
        self._wake.set()

    # -- stopping -----------------------------------------------------------------
    async def stop(self) -> None:
        """Stop the process (goodbye, close stdin, grace, kill) and wait until it is reaped."""
        self._stopping = True
        self._wake.set()
        if self.state is not ServerState.READY and self._attempt_scope is not None:
            self._attempt_scope.cancel()
        if self._running:
            await self._done.wait()

    async def restart(self, spawn: Spawn, *, timeout: float | None = None) -> ServerState:
        """Stop the process if it runs, then start a fresh one (``spawn``: ``runtime.spawn``)
        and wait (bounded by ``startup_timeout``, or ``timeout``) until it is ready or failed.

        A restart asked for is a fresh start: the attempt and restart counts begin again.
        Returns the state it settled in (``starting`` when it did not settle in time)."""
        if self.active:
            await self.stop()
        self._stopping = False
        self.error = ""
        self.attempts = 0
        self.restarts = 0
        self.launch(spawn)
        limit = self.config.startup_timeout + 1 if timeout is None else timeout
        with anyio.move_on_after(limit):
            while self.state is ServerState.STARTING:
                await self._changed.wait()
        return self.state
