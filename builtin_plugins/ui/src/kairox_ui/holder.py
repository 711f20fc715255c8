"""The dashboard's runtime: opened once, started in the background (so the page shows
servers going from starting to ready), and reopened after a change that only a fresh
runtime sees (a trusted workspace, an installed server, a plugin switched on or off)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

from kairox import Event, Runtime, Session, ToolCall, ToolCallFinished, ToolResult
from kairox.ext import redact
from kairox_cli import config_secrets

from .disk import watch_disk
from .hub import Approvals, Hub, call_shown

__all__ = ["RuntimeHolder"]

logger = logging.getLogger(__name__)

#: seconds between two status messages while events keep coming
STATUS_EVERY = 0.1
#: calls whose result waits for their ToolCallFinished (more are calls that never finish)
CALLS_KEPT = 256


class RuntimeHolder:
    """Owns the current :class:`Runtime` (``holder.rt``) and the dashboard's session in it
    (``holder.session``), and feeds the runtime's events to the hub.

    The session lives as long as its runtime: the page's tool calls run in it (so an
    approval "for the session" is remembered there) and its session-scoped skills are the
    Skills page's ``session`` group. A reopened runtime gets a new session."""

    def __init__(self, first: Runtime, hub: Hub, approvals: Approvals, *, start: bool = True) -> None:
        self.rt = first
        self.hub = hub
        self.approvals = approvals
        self.start = start
        self.generation = 0
        #: the last ``*Failed`` event of each server of this runtime (the pill's diagnostic)
        self.failures: dict[str, dict[str, Any]] = {}
        self._first = first
        self._reload = anyio.Event()
        self._stop = anyio.Event()
        self._dirty = anyio.Event()
        self._unsubscribe: Any = None
        self._unhook: Any = None
        #: call id -> its arguments and result as the trace shows them, until its ToolCallFinished
        self._calls: dict[str, dict[str, Any]] = {}
        #: set once the providers of the current runtime finished starting
        self.started = anyio.Event()
        self.snapshot: Any = None  # set by the app: rt -> the status message
        #: the dashboard's session in the current runtime (``None`` only before :meth:`run` opened it)
        self.session: Session | None = None
        #: set (and replaced) after each attempt to open a runtime
        self._opened = anyio.Event()
        self._tg: anyio.abc.TaskGroup | None = None

    # -- the loop ----------------------------------------------------------------------
    async def run(self) -> None:
        """Serve runtimes until :meth:`stop`: attach, wait for a reload, reopen.

        This one task owns every runtime after the first: it opens each (``async with
        Runtime.open``) and closes it, so each runtime's task group is entered and left by
        the same task at the same depth (closing one from another task, or inside a scope
        entered after it, is what anyio refuses). The first runtime is the CLI's: its
        servers are stopped here, and the CLI closes it."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._status_pump)
            tg.start_soon(watch_disk, self)
            await self._serve(self._first)
            with anyio.CancelScope(shield=True):
                await self._first.aclose()
            while not self._stop.is_set():
                try:
                    async with Runtime.open(
                        self._first.workspace,
                        host=self._first.host,
                        env=self._first.env,
                        home=self._first.home,
                        approver=self.approvals,
                        start=False,
                    ) as rt:
                        self.generation += 1
                        self.hub.publish("reload", {"generation": self.generation})
                        await self._serve(rt)
                except Exception as exc:  # the page says so; the next change tries again
                    logger.exception("the dashboard could not reopen the runtime")
                    self.hub.publish("reload-failed", {"error": redact(f"{type(exc).__name__}: {exc}")})
                    self._announce_opened()
                    await self._reload.wait()
                    self._reload = anyio.Event()
            tg.cancel_scope.cancel()
        self._tg = None

    async def _serve(self, rt: Runtime) -> None:
        """Attach ``rt`` with a session of the dashboard in it until a reload is asked."""
        self._attach(rt)
        try:
            async with rt.session() as session:
                self.session = session
                try:
                    await self._reload.wait()
                finally:
                    self.session = None
        finally:
            self._detach()
        # a change asked for from here on is seen by the next runtime, which opens after it
        self._reload = anyio.Event()

    def spawn(self, fn: Callable[[], Awaitable[None]], *, name: str) -> None:
        """Run ``fn`` as long as the dashboard (not the current runtime: an install job
        outlives the reopen it asks for); its error is logged."""
        if self._tg is None:
            raise RuntimeError("the dashboard is not running")

        async def guarded() -> None:
            try:
                await fn()
            except Exception:
                logger.exception("%s failed", name)

        self._tg.start_soon(guarded, name=name)

    async def reopen(self) -> Runtime:
        """Ask for a reopen and wait for it: the runtime opened after the request (the
        current one still, when opening failed: the page was told)."""
        opened = self._opened  # the next attempt to open one starts after this request
        self.reload()
        await opened.wait()
        return self.rt

    async def opened(self) -> None:
        """Wait for the next attempt to open a runtime (after a reload)."""
        opened = self._opened
        await opened.wait()

    def skills_changed(self) -> None:
        """The current runtime's skills were scanned again: the pages list them again."""
        self.hub.publish("skills", {"generation": self.generation})
        self._dirty.set()

    def _announce_opened(self) -> None:
        opened, self._opened = self._opened, anyio.Event()
        opened.set()

    def reload(self) -> None:
        """Reopen the runtime (the current one's servers stop, the new one's start)."""
        self._reload.set()

    def stop(self) -> None:
        self._stop.set()
        self._reload.set()

    # -- one runtime -------------------------------------------------------------------
    def _attach(self, rt: Runtime) -> None:
        self.rt = rt
        self._announce_opened()
        self.failures = {}
        self.started = anyio.Event()
        rt.approver = self.approvals
        self.hub.secrets = config_secrets(rt)
        self._calls = {}
        self._unsubscribe = rt.events.subscribe(self._on_event)
        # a call's arguments and result (which no event carries) for its row in the trace
        self._unhook = rt.hooks.add("post_tool_call", self._on_result, source="kairox-ui")
        self._dirty.set()
        started = self.started

        async def start() -> None:
            try:
                if self.start:
                    await rt.start_providers()
            finally:
                started.set()
                self._dirty.set()

        rt.spawn(start, name="kairox-ui: start providers")

    def _detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._unhook is not None:
            self._unhook()
            self._unhook = None

    def _on_result(self, call: ToolCall, result: ToolResult) -> None:
        """post_tool_call: keep what the trace shows of the call (masked and cut now: bounded)."""
        while len(self._calls) >= CALLS_KEPT:
            del self._calls[next(iter(self._calls))]
        self._calls[call.call_id] = call_shown(call.arguments, result, self.hub.secrets)

    def _on_event(self, event: Event) -> None:
        call = self._calls.pop(event.call_id, None) if isinstance(event, ToolCallFinished) else None
        message = self.hub.publish_event(event, call)
        data = message["data"]
        server = message["server"]
        if server and event.kind.endswith("Failed"):
            self.failures[server] = data
        self._dirty.set()

    def touch(self) -> None:
        """Something changed that no event reports (a settings file): send the status again."""
        self._dirty.set()

    async def _status_pump(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty = anyio.Event()
            if self.snapshot is not None and self.hub.clients:
                try:
                    self.hub.publish("status", self.snapshot(self))
                except Exception:
                    logger.exception("the dashboard's status snapshot failed")
            await anyio.sleep(STATUS_EVERY)
