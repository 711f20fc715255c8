"""DapServerLifecycle: one debug adapter process, started on demand and always reaped.

A :class:`kairox_peer.ManagedServer` (states, reaping) speaking DAP: ``stopped``
(idle, or ended) -> ``starting`` -> ``ready`` -> ``stopped`` | ``failed``, each
an event (:mod:`kairox_dap._events`). There is no restart: a crashed adapter
ends its debug session, and the next ``dap.launch`` starts a new one. On stop,
crash and cancellation the adapter's process group and session are killed, and
so is every debuggee it reported (``process`` events), checked to still belong
to the adapter's session before it is signalled.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
from typing import Any

import anyio

from kairox import Event, ServerState
from kairox_peer import ManagedServer, Spawn, StdioPeer
from kairox_process import kill_group

from ._client import ConnectionLost, DapClient, DapError, RequestTimeout, as_dict
from ._config import DapServerConfig
from ._events import DapServerFailed, DapServerRunning, DapServerStarting, DapServerStopped

__all__ = ["AdapterUnavailable", "DapServerLifecycle"]

logger = logging.getLogger(__name__)


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


class DapServerLifecycle(ManagedServer[DapServerConfig, DapClient]):
    """Runs one configured adapter while a debug session needs it."""

    kind = "debug adapter"
    initialize_errors = (DapError, ConnectionLost, RequestTimeout)

    #: the adapter said ``terminated``: the session ended on its own (an exit then is no failure)
    ended_normally = False

    @functools.cached_property
    def debuggees(self) -> set[int]:
        """Pids of debuggees the adapter reported (killed with it, if still in its session)."""
        return set()

    # -- starting ------------------------------------------------------------
    async def start(self, spawn: Spawn) -> DapClient:
        """Start the adapter (its supervising task goes to ``spawn``) and wait until it answered ``initialize``."""
        if self.state is ServerState.READY and self.client is not None and not self.client.closed:
            return self.client
        if self.active:
            await self.stop()
        self._stopping = False
        self.error = ""
        self.debuggees.clear()
        self.ended_normally = False
        self.launch(spawn)
        with anyio.move_on_after(self.config.startup_timeout + 5):
            while self.state is ServerState.STARTING:
                await self._changed.wait()
        if self.state is ServerState.READY and self.client is not None:
            return self.client
        if self.state is ServerState.STARTING:
            await self.stop()
            raise AdapterUnavailable(f"debug adapter {self.name} did not start in time")
        raise AdapterUnavailable(f"debug adapter {self.name} failed: {self.error}")

    # -- the protocol ------------------------------------------------------------
    def _connect(self, peer: StdioPeer) -> DapClient:
        client = DapClient(
            peer,
            name=self.name,
            request_timeout=self.config.request_timeout,
            describe_loss=lambda: self.describe_loss(peer),
        )
        client.listeners.append(self._on_event)
        return client

    async def _initialize(self, client: DapClient) -> None:
        body = await client.request("initialize", initialize_arguments(self.config.adapter_id or self.name))
        self.capabilities = client.capabilities = body if isinstance(body, dict) else {}

    def _on_ready(self, client: DapClient, peer: StdioPeer) -> None:
        self.events.publish(DapServerRunning(self.name, peer.pid))

    def _on_event(self, event: dict[str, Any]) -> None:
        body = as_dict(event.get("body"))
        if event.get("event") == "process" and isinstance(body.get("systemProcessId"), int):
            self.debuggees.add(body["systemProcessId"])
        elif event.get("event") == "terminated":
            self.ended_normally = True

    def _ended_cleanly(self) -> bool:
        return self.ended_normally and self.returncode == 0

    def _before_reap(self, peer: StdioPeer) -> None:
        sid = peer.pid
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

    def _starting_event(self) -> Event:
        return DapServerStarting(self.name, self.config.command)

    def _failed_event(self, error: str, restart_in: float | None) -> Event:
        return DapServerFailed(self.name, error, self.stderr_tail(), self.returncode)

    def _stopped_event(self) -> Event:
        return DapServerStopped(self.name, self.returncode)
