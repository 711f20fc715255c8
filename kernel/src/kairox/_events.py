"""Typed events and the event bus."""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Union

import anyio
import attrs

if TYPE_CHECKING:  # anyio's streams (and its synchronization primitives) load with the first stream
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = [
    "Event",
    "EventBus",
    "HookFailed",
    "PluginLoadFailed",
    "ProviderFailed",
    "ProviderReady",
    "ProviderStarting",
    "ProviderStopped",
    "SessionEnded",
    "SessionStarted",
    "SkillActivated",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolNameCollision",
    "ToolsChanged",
]

logger = logging.getLogger(__name__)


@attrs.frozen
class Event:
    """Base class of every event. Subclasses are frozen attrs classes."""

    @property
    def kind(self) -> str:
        return type(self).__name__

    def to_dict(self) -> dict[str, Any]:
        data = attrs.asdict(self, recurse=True, value_serializer=_serialize)
        data["kind"] = self.kind
        return data


def _serialize(_inst: object, _field: object, value: Any) -> Any:
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    if hasattr(value, "value") and type(value).__module__ != "builtins" and hasattr(type(value), "__members__"):
        return value.value
    return value


@attrs.frozen
class ToolsChanged(Event):
    """A provider's tools were added or removed (canonical ids)."""

    provider: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


@attrs.frozen
class ToolNameCollision(Event):
    exported_name: str
    canonical_ids: tuple[str, ...]


@attrs.frozen
class ToolCallStarted(Event):
    """A tool call was resolved and begins its way through validation, policy and hooks."""

    tool: str
    call_id: str
    session_id: str | None = None


@attrs.frozen
class ToolCallFinished(Event):
    """A tool call ended: its duration and ``outcome`` (``"ok"``, ``"error"``, ``"denied"``, ``"failed"``)."""

    tool: str
    call_id: str
    duration_s: float
    outcome: str  # "ok" | "error" | "denied" | "failed"
    detail: str = ""
    session_id: str | None = None


@attrs.frozen
class ProviderStarting(Event):
    """A provider (an MCP server, a language server, ...) starts."""

    provider: str


@attrs.frozen
class ProviderReady(Event):
    """A provider is ready; its tools are registered."""

    provider: str


@attrs.frozen
class ProviderFailed(Event):
    """A provider failed to start or died; ``error`` says why. The others go on."""

    provider: str
    error: str


@attrs.frozen
class ProviderStopped(Event):
    """A provider stopped."""

    provider: str


@attrs.frozen
class PluginLoadFailed(Event):
    """A plugin could not be loaded or registered (at ``stage``); the others load."""

    plugin: str
    stage: str
    error: str


@attrs.frozen
class HookFailed(Event):
    """A plugin's hook raised or timed out; ``plugin`` names it."""

    hook: str
    plugin: str
    error: str


@attrs.frozen
class SessionStarted(Event):
    """A session opened."""

    session_id: str


@attrs.frozen
class SkillActivated(Event):
    """A session activated a skill (``session.activate_skill``)."""

    session_id: str
    skill: str
    model: str | None = None


@attrs.frozen
class SessionEnded(Event):
    """A session ended: ``reason`` is ``"closed"``, ``"error"`` or ``"cancelled"``."""

    session_id: str
    reason: str = "closed"  # "closed" | "error" | "cancelled"


Subscriber = Callable[[Event], Union[None, Awaitable[None]]]


class EventBus:
    """Publishes events to subscribers.

    Sync subscribers run inline, in subscription order; a subscriber that
    raises is logged and skipped. Async subscribers are started as tasks on the
    runtime's task group (set through :meth:`bind`). :meth:`stream` gives an
    async iterator over events with a bounded buffer (overflow drops the event
    for that stream and logs once).
    """

    def __init__(self) -> None:
        #: (subscriber, the event types it wants (none: all), its predicate (see :meth:`subscribe`))
        self._subs: list[tuple[Subscriber, tuple[type[Event], ...], Callable[[], bool] | None]] = []
        #: :meth:`has_listeners` per event type, until a subscriber or stream comes or goes:
        #: True, or the predicates that decide it (none: False)
        self._listening: dict[type[Event], bool | tuple[Callable[[], bool], ...]] = {}
        self._streams: list[tuple[MemoryObjectSendStream[Event], tuple[type[Event], ...]]] = []
        self._spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None
        self.dropped = 0

    def bind(self, spawn: Callable[[Callable[[], Awaitable[None]]], None] | None) -> None:
        self._spawn = spawn

    def subscribe(
        self, fn: Subscriber, *types: type[Event], active: Callable[[], bool] | None = None
    ) -> Callable[[], None]:
        """Call ``fn`` for each event (of ``types``, if given). Returns an unsubscribe function.

        ``active``, when given, says whether ``fn`` wants events at all right now: while it
        returns False, :meth:`has_listeners` does not count ``fn`` (a forwarder with nobody
        to forward to), so publishers may skip building events for it."""
        entry = (fn, types, active)
        self._subs.append(entry)
        self._listening.clear()

        def unsubscribe() -> None:
            if entry in self._subs:
                self._subs.remove(entry)
                self._listening.clear()

        return unsubscribe

    def has_listeners(self, kind: type[Event]) -> bool:
        """Whether publishing an event of type ``kind`` would reach anyone: a subscriber or a
        stream for it. Publishers of frequent events check this before building one."""
        known = self._listening.get(kind)
        if known is None:
            known = self._listening[kind] = self._who_listens(kind)
        if known is True or known is False:
            return known
        for active in known:
            if active():
                return True
        return False

    def _who_listens(self, kind: type[Event]) -> bool | tuple[Callable[[], bool], ...]:
        if any(not types or issubclass(kind, types) for _, types in self._streams):
            return True
        predicates = []
        for _, types, active in self._subs:
            if types and not issubclass(kind, types):
                continue
            if active is None:
                return True
            predicates.append(active)
        return tuple(predicates) if predicates else False

    def publish(self, event: Event) -> None:
        for fn, types, _ in list(self._subs):
            if types and not isinstance(event, types):
                continue
            try:
                result = fn(event)
            except Exception:
                logger.exception("event subscriber %r failed on %s", fn, event.kind)
                continue
            if inspect.isawaitable(result):
                self.run_async(result)
        for send, types in list(self._streams):
            if types and not isinstance(event, types):
                continue
            try:
                send.send_nowait(event)
            except anyio.WouldBlock:
                self.dropped += 1
                if self.dropped == 1:
                    logger.warning("event stream full: dropping events")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    def run_async(self, awaitable: Awaitable[None]) -> None:
        """Run ``awaitable`` as a task of the runtime (an async subscriber's, or an async
        ``kairox_event`` implementation's); logged and dropped when no runtime runs."""
        if self._spawn is None:
            logger.warning("async event subscriber with no running runtime; event dropped")
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            return

        async def runner() -> None:
            try:
                await awaitable
            except Exception:
                logger.exception("async event subscriber failed")

        self._spawn(runner)

    @asynccontextmanager
    async def stream(
        self, *types: type[Event], buffer: float = 10_000
    ) -> AsyncIterator[MemoryObjectReceiveStream[Event]]:
        """``async with bus.stream() as events: async for ev in events: ...``"""
        send, receive = anyio.create_memory_object_stream[Event](max_buffer_size=buffer if buffer else math.inf)
        entry = (send, types)
        self._streams.append(entry)
        self._listening.clear()
        try:
            async with receive:
                yield receive
        finally:
            self._streams.remove(entry)
            self._listening.clear()
            send.close()
