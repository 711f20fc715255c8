"""DapServerLifecycle: one debug adapter process, started on demand and always reaped.

States (as :class:`~kairox.ServerState`): ``stopped`` (idle, or ended) ->
``starting`` -> ``ready`` -> ``stopped`` | ``failed``, each an event
(:mod:`kairox_dap._events`). There is no restart: a crashed adapter ends its
debug session, and the next ``dap.launch`` starts a new one. On stop, crash
and cancellation the adapter's process group and session are killed, and so
is every debuggee it reported (``process`` events), checked to still belong
to the adapter's session before it is signalled.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio

from kairox import EventBus, ServerState
from kairox.process import kill_group
from kairox_lsp._config import child_env
from kairox_lsp._process import StdioPeer

from ._client import ConnectionLost, DapClient, DapError, RequestTimeout, as_dict
from ._config import DapServerConfig
from ._events import DapServerFailed, DapServerRunning, DapServerStarting, DapServerStopped

__all__ = ["AdapterUnavailable", "DapServerLifecycle"]

logger = logging.getLogger(__name__)

Spawn = Callable[..., None]


class AdapterUnavailable(RuntimeError):
    """The adapter could not be started, or went away."""


def initialize_arguments(adapter_id: str) -> dict[str, Any]:
    return {
        "clientID": "kairox",
        "clientName": "kairox",
        "adapterID": adapter_id,
        "locale": "en",
        "linesStartAt1": True,
        "columnsStartAt1": True,
        "pathFormat": "path",
        "supportsVariableType": True,
        "supportsVariablePaging": False,
        "supportsRunInTerminalRequest": False,
        "supportsProgressReporting": False,
        "supportsStartDebuggingRequest": False,
    }


class DapServerLifecycle:
    """Runs one configured adapter while a debug session needs it."""

    def __init__(
        self,
        name: str,
        config: DapServerConfig,
        *,
        workspace: Path,
        env: Mapping[str, str],
        events: EventBus | None = None,
        source: str = "",
    ) -> None:
        self.name = name
        self.config = config
        self.workspace = workspace
        self.env = env
        self.events = events or EventBus()
        self.source = source
        self.state = ServerState.STOPPED
        self.client: DapClient | None = None
        self.peer: StdioPeer | None = None
        self.error = ""
        self.returncode: int | None = None
        #: pids of debuggees the adapter reported (killed with it, if still in its session)
        self.debuggees: set[int] = set()
        self.ended_normally = False
        self._stopping = False
        self._wake = anyio.Event()
        self._changed = anyio.Event()
        self._done = anyio.Event()
        self._done.set()
        self._scope: anyio.CancelScope | None = None

    @property
    def pid(self) -> int | None:
        return self.peer.pid if self.peer is not None and self.client is not None else None

    @property
    def active(self) -> bool:
        return not self._done.is_set()

    def _set(self, state: ServerState) -> None:
        self.state = state
        self._changed.set()
        self._changed = anyio.Event()

    def _tail(self) -> str:
        return self.peer.stderr.text(40) if self.peer is not None else ""

    # -- starting ------------------------------------------------------------
    async def start(self, spawn: Spawn) -> DapClient:
        """Start the adapter (its supervising task goes to ``spawn``) and wait until it answered ``initialize``."""
        if self.state is ServerState.READY and self.client is not None and not self.client.closed:
            return self.client
        if self.active:
            await self.stop()
        self._stopping = False
        self._done = anyio.Event()
        self._wake = anyio.Event()
        self.error = ""
        self.debuggees = set()
        self.ended_normally = False
        self._set(ServerState.STARTING)
        spawn(self.run, name=f"dap adapter {self.name}")
        with anyio.move_on_after(self.config.startup_timeout + 5):
            while self.state is ServerState.STARTING:
                await self._changed.wait()
        if self.state is ServerState.READY and self.client is not None:
            return self.client
        if self.state is ServerState.STARTING:
            await self.stop()
            raise AdapterUnavailable(f"debug adapter {self.name} did not start in time")
        raise AdapterUnavailable(f"debug adapter {self.name} failed: {self.error}")

    async def run(self) -> None:
        """The supervising task: start, initialize, wait for stop or exit, reap."""
        cfg = self.config
        self.events.publish(DapServerStarting(self.name, cfg.command))
        error = ""
        peer: StdioPeer | None = None
        self._scope = anyio.CancelScope()
        try:
            with self._scope:
                try:
                    peer = await StdioPeer.spawn(
                        cfg.command, cfg.args, env=child_env(self.env, cfg.env), cwd=self.workspace
                    )
                except OSError as exc:
                    error = f"cannot start {cfg.command!r}: {exc}"
                else:
                    self.peer = peer
                    error = await self._serve(peer)
        except Exception as exc:  # a bug here must never take the runtime down
            logger.exception("debug adapter %s: supervisor error", self.name)
            error = f"internal error: {type(exc).__name__}: {exc}"
        finally:
            self.client = None
            with anyio.CancelScope(shield=True):
                if peer is not None:
                    self._kill_debuggees(peer.pid)
                    self.returncode = await peer.aclose(cfg.shutdown_timeout)
            clean = self._stopping or (self.ended_normally and self.returncode == 0)
            if error and not clean:
                self.error = error
                self._set(ServerState.FAILED)
                self.events.publish(DapServerFailed(self.name, error, self._tail(), self.returncode))
            else:
                self._set(ServerState.STOPPED)
                self.events.publish(DapServerStopped(self.name, self.returncode))
            self._done.set()

    async def _serve(self, peer: StdioPeer) -> str:
        cfg = self.config
        client = DapClient(
            peer,
            name=self.name,
            request_timeout=cfg.request_timeout,
            describe_loss=lambda: self._describe_loss(peer),
        )
        client.listeners.append(self._on_event)
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.drain_stderr)
            tg.start_soon(client.run)
            tg.start_soon(self._wake_on_close, client)
            try:
                with anyio.fail_after(cfg.startup_timeout):
                    body = await client.request("initialize", initialize_arguments(cfg.adapter_id or self.name))
            except TimeoutError:
                tg.cancel_scope.cancel()
                return f"no answer to initialize within {cfg.startup_timeout:g} s"
            except (DapError, ConnectionLost, RequestTimeout) as exc:
                tg.cancel_scope.cancel()
                return f"initialize failed: {exc}"
            client.capabilities = body if isinstance(body, dict) else {}
            self.client = client
            self._set(ServerState.READY)
            self.events.publish(DapServerRunning(self.name, peer.pid))
            while not self._stopping and not client.closed:
                await self._wake.wait()
            tg.cancel_scope.cancel()
        if self._stopping:
            return ""
        code = await peer.wait(1.0)
        return f"exited with code {code}" if code is not None else "closed its output"

    def _on_event(self, event: dict[str, Any]) -> None:
        body = as_dict(event.get("body"))
        if event.get("event") == "process" and isinstance(body.get("systemProcessId"), int):
            self.debuggees.add(body["systemProcessId"])
        elif event.get("event") == "terminated":
            self.ended_normally = True

    def _kill_debuggees(self, sid: int) -> None:
        for pid in self.debuggees:
            try:
                if os.getsid(pid) != sid:  # gone, or the pid was reused by someone else
                    continue
            except (ProcessLookupError, PermissionError):
                continue
            if not kill_group(pid, signal.SIGKILL):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    async def _wake_on_close(self, client: DapClient) -> None:
        await client.wait_closed()
        self._wake.set()

    def _describe_loss(self, peer: StdioPeer) -> str:
        code = peer.returncode
        parts = [f"exit code {code}" if code is not None else "it closed its output"]
        tail = [line.strip() for line in peer.stderr.lines()[-5:] if line.strip()]
        if tail:
            parts.append("stderr: " + " | ".join(tail))
        return "; ".join(parts)

    # -- stopping ------------------------------------------------------------------
    async def stop(self) -> None:
        """Stop the adapter (close stdin, grace, kill) and wait until it is reaped."""
        self._stopping = True
        self._wake.set()
        if self.state is ServerState.STARTING and self._scope is not None:
            self._scope.cancel()
        await self._done.wait()
