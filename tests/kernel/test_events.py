"""The event bus: typed events, sync and async subscribers, streams."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import attrs
import pytest

from kairox import Event, ServerState, SessionEnded, SessionStarted, ToolCallFinished, ToolCallStarted, ToolsChanged
from kairox.ext import EventBus
from kairox_testing import EventLog, KairoxHarness


@attrs.frozen
class PluginThing(Event):
    """Plugins define their own events by subclassing kairox.Event."""

    name: str
    state: ServerState = ServerState.READY
    error: Exception | None = None


def test_kind_and_to_dict() -> None:
    event = PluginThing("x", error=ValueError("bad"))
    assert event.kind == "PluginThing"
    assert event.to_dict() == {"kind": "PluginThing", "name": "x", "state": "ready", "error": "ValueError: bad"}
    assert ToolsChanged("p", ("a",)).to_dict() == {
        "kind": "ToolsChanged",
        "provider": "p",
        "added": ("a",),
        "removed": (),
    }


def test_sync_subscribers_in_order_with_type_filter_and_unsubscribe(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus()
    seen: list[str] = []
    bus.subscribe(lambda e: seen.append(f"all:{e.kind}"))

    def broken(event: Event) -> None:
        raise RuntimeError("subscriber bug")

    bus.subscribe(broken)
    unsubscribe = bus.subscribe(lambda e: seen.append(f"sessions:{e.kind}"), SessionStarted, SessionEnded)
    bus.publish(SessionStarted("s1"))
    bus.publish(PluginThing("x"))
    unsubscribe()
    unsubscribe()  # twice is harmless
    bus.publish(SessionEnded("s1"))
    assert seen == ["all:SessionStarted", "sessions:SessionStarted", "all:PluginThing", "all:SessionEnded"]
    assert "subscriber bug" in caplog.text


def test_async_subscriber_without_a_runtime_is_dropped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus()

    async def sub(event: Event) -> None:
        raise AssertionError("never runs")

    bus.subscribe(sub)
    bus.publish(SessionStarted("s"))
    assert "no running runtime" in caplog.text


@pytest.mark.anyio
async def test_async_subscribers_run_on_the_runtime(kairox_harness: KairoxHarness) -> None:
    seen: list[str] = []

    async def sub(event: Event) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(event.kind)

    async def broken(event: Event) -> None:
        raise RuntimeError("async subscriber bug")

    async with kairox_harness.open() as rt:
        rt.events.subscribe(sub, SessionStarted)
        rt.events.subscribe(broken)
        rt.events.publish(SessionStarted("s"))
        rt.events.publish(SessionEnded("s"))
        with anyio.fail_after(2):
            while not seen:
                await anyio.lowlevel.checkpoint()
    assert seen == ["SessionStarted"]


@pytest.mark.anyio
async def test_stream() -> None:
    bus = EventBus()
    async with bus.stream(SessionStarted) as events:
        bus.publish(SessionStarted("a"))
        bus.publish(SessionEnded("a"))
        bus.publish(SessionStarted("b"))
        got = [await events.receive(), await events.receive()]
    assert [e.session_id for e in got] == ["a", "b"]
    bus.publish(SessionStarted("after"))  # the stream is gone: nothing to deliver to


@pytest.mark.anyio
async def test_stream_overflow_drops_and_counts(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus()
    async with bus.stream(buffer=2) as events:
        for i in range(5):
            bus.publish(SessionStarted(str(i)))
        assert bus.dropped == 3
        assert [(await events.receive()).session_id for _ in range(2)] == ["0", "1"]
    assert caplog.text.count("event stream full") == 1


def test_event_log_helper() -> None:
    bus = EventBus()
    log = EventLog(bus)
    bus.publish(SessionStarted("a"))
    log.detach()
    bus.publish(SessionStarted("b"))
    assert log.kinds() == ["SessionStarted"]


# -- has_listeners: what lets a publisher skip building an event ----------------------------


@pytest.mark.anyio
async def test_has_listeners_counts_matching_subscribers_streams_and_active_ones() -> None:
    bus = EventBus()
    assert not bus.has_listeners(ToolCallStarted)
    off = bus.subscribe(lambda e: None, ToolsChanged)
    assert not bus.has_listeners(ToolCallStarted) and bus.has_listeners(ToolsChanged)
    off()
    wanted = [False]
    seen: list[Event] = []
    bus.subscribe(seen.append, active=lambda: wanted[0])
    assert not bus.has_listeners(ToolCallStarted)  # a forwarder with nobody to forward to
    wanted[0] = True
    assert bus.has_listeners(ToolCallStarted)
    wanted[0] = False
    async with bus.stream(ToolCallFinished) as _events:
        assert bus.has_listeners(ToolCallFinished) and not bus.has_listeners(ToolCallStarted)
    assert not bus.has_listeners(ToolCallFinished)
    bus.publish(ToolsChanged(provider="p"))  # an inactive subscriber still gets what is published
    assert [e.kind for e in seen] == ["ToolsChanged"]
