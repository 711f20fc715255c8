"""DapClient against an in-memory fake adapter: requests, events without races, reverse requests, loss
(what it shares with LspClient is tested for both in test_peer_clients.py)."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_dap._client import ConnectionLost, DapClient, DapError, OutputBuffer

from .helpers import MemoryPeer, json_values, serving


class FakeAdapter(MemoryPeer):
    """A scripted debug adapter: ``respond`` to a request, send an ``event``."""

    seq = 1000

    async def respond(
        self, request: dict[str, Any], body: Any = None, *, success: bool = True, message: str = ""
    ) -> None:
        self.seq += 1
        reply: dict[str, Any] = {
            "seq": self.seq,
            "type": "response",
            "request_seq": request["seq"],
            "command": request["command"],
            "success": success,
        }
        if body is not None:
            reply["body"] = body
        if message:
            reply["message"] = message
        await self.say(reply)

    async def event(self, name: str, body: Any = None) -> None:
        self.seq += 1
        await self.say({"seq": self.seq, "type": "event", "event": name, "body": body or {}})


@pytest.mark.anyio
async def test_launch_is_not_awaited_before_configuration_done() -> None:
    """The debugpy order: the launch response only comes after configurationDone."""
    adapter = FakeAdapter()
    async with serving(DapClient(adapter)) as client:
        cursor = client.cursor()
        launch_seq = await client.send_request("launch", {"program": "p.py"})
        launch = await adapter.recv()
        await adapter.event("initialized")
        found = await client.wait_event({"initialized"}, after=cursor, timeout=5)
        assert found is not None and found[1]["event"] == "initialized"
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.request, "configurationDone")
            done = await adapter.recv()
            assert done["command"] == "configurationDone"
            await adapter.respond(done)
        await adapter.respond(launch)
        assert await client.response(launch_seq) is None


@pytest.mark.anyio
async def test_events_that_arrive_before_the_wait_are_not_missed() -> None:
    adapter = FakeAdapter()
    async with serving(DapClient(adapter)) as client:
        await adapter.event("stopped", {"reason": "old"})
        with anyio.fail_after(5):
            while client.cursor() == 0:  # noqa: ASYNC110 - waits for the reader task
                await anyio.sleep(0.001)
        cursor = client.cursor()
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.request, "continue", {"threadId": 1})
            request = await adapter.recv()
            await adapter.event("continued")
            await adapter.event("stopped", {"reason": "breakpoint"})  # before the response
            await adapter.respond(request)
        found = await client.wait_event({"stopped"}, after=cursor, timeout=1)
        assert found is not None
        index, event = found
        assert event["body"] == {"reason": "breakpoint"} and index == cursor + 1
        assert await client.wait_event({"stopped"}, after=index + 1, timeout=0.05) is None


@pytest.mark.anyio
async def test_wait_event_ends_early_when_told() -> None:
    adapter = FakeAdapter()
    async with serving(DapClient(adapter)) as client:
        seq = await client.send_request("launch")
        request = await adapter.recv()
        await adapter.respond(request, success=False, message="no such program")
        with anyio.fail_after(2):
            found = await client.wait_event({"initialized"}, after=0, timeout=30, unless=lambda: client.answered(seq))
        assert found is None
        with pytest.raises(DapError, match="launch failed: no such program"):
            await client.response(seq)


@pytest.mark.anyio
async def test_reverse_requests_are_refused() -> None:
    adapter = FakeAdapter()
    async with serving(DapClient(adapter)):
        await adapter.say({"seq": 5, "type": "request", "command": "runInTerminal", "arguments": {"args": ["x"]}})
        reply = await adapter.recv()
        assert reply["type"] == "response" and reply["request_seq"] == 5
        assert reply["success"] is False and reply["command"] == "runInTerminal"


@pytest.mark.anyio
async def test_loss_ends_waiting_for_an_event() -> None:
    adapter = FakeAdapter()
    async with serving(DapClient(adapter, name="debugpy", describe_loss=lambda: "exit code -9")) as client:
        adapter.hang_up()
        with anyio.fail_after(1), pytest.raises(ConnectionLost, match="debugpy closed the connection: exit code -9"):
            await client.wait_event({"stopped"}, after=0, timeout=30)


@pytest.mark.anyio
async def test_output_events_fill_the_buffer_without_telemetry() -> None:
    adapter = FakeAdapter()
    async with serving(DapClient(adapter)) as client:
        await adapter.event("output", {"category": "telemetry", "output": "ptvsd"})
        await adapter.event("output", {"category": "stdout", "output": "hello\n"})
        await adapter.event("output", {"category": "stderr", "output": "oops\n"})
        with anyio.fail_after(5):
            while client.cursor() < 3:  # noqa: ASYNC110 - waits for the reader task
                await anyio.sleep(0.001)
        assert client.output.read_new() == "hello\n[stderr] oops\n"
        assert client.output.read_new() == ""


@given(st.lists(st.tuples(st.sampled_from(["stdout", "console"]), st.text(max_size=20)), max_size=30), st.data())
def test_output_reads_add_up_to_everything_once(chunks: list[tuple[str, str]], data: st.DataObject) -> None:
    buffer = OutputBuffer(max_chars=10_000)
    seen = []
    for category, text in chunks:
        buffer.add(category, text)
        if data.draw(st.booleans()):
            seen.append(buffer.read_new())
    seen.append(buffer.read_new())
    assert "".join(seen) == "".join(text for _c, text in chunks)


def test_a_line_split_over_output_events_gets_one_prefix() -> None:
    # debugpy sent a traceback's last line as "NameError: " and "name 'this' is not defined\n"
    buffer = OutputBuffer()
    for text in ["Traceback (most recent call last):\n", "    this is not python\n", "NameError: "]:
        buffer.add("stderr", text)
    buffer.add("stderr", "name 'this' is not defined\n")
    buffer.add("stdout", "out")
    buffer.add("stderr", "err\n")
    assert buffer.text() == (
        "[stderr] Traceback (most recent call last):\n[stderr]     this is not python\n"
        "[stderr] NameError: name 'this' is not defined\nout\n[stderr] err\n"
    )


@given(st.text(alphabet="ab\n", max_size=60), st.lists(st.integers(0, 60), max_size=8), st.data())
def test_how_an_adapter_splits_output_does_not_change_what_is_shown(
    text: str, cuts: list[int], data: st.DataObject
) -> None:
    whole = OutputBuffer()
    whole.add("stderr", text)
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    split = OutputBuffer()
    reads = []
    for a, b in itertools.pairwise(points):
        split.add("stderr", text[a:b])
        if data.draw(st.booleans()):
            reads.append(split.read_new())
    reads.append(split.read_new())
    assert split.text() == whole.text() == "".join(reads)


@given(st.lists(st.text(min_size=1, max_size=30), max_size=40), st.integers(10, 100))
def test_output_is_bounded_and_says_what_it_dropped(texts: list[str], limit: int) -> None:
    buffer = OutputBuffer(max_chars=limit)
    for text in texts:
        buffer.add("stdout", text)
    kept = buffer.text()
    assert len(kept) <= limit + 30  # the newest chunk is always kept whole
    new = buffer.read_new()
    if buffer.dropped:
        assert new.startswith(f"[... {buffer.dropped} characters of output dropped]\n")
    assert new.endswith(kept)


dap_values = json_values(
    ["seq", "type", "event", "body", "command", "request_seq", "success", "output", "category"],
    max_int=5,
    max_text=6,
    max_size=6,
    max_leaves=20,
)


@given(st.lists(dap_values, max_size=8))
def test_any_messages_leave_the_client_working(messages: list[Any]) -> None:
    async def main() -> None:
        adapter = FakeAdapter()
        client = DapClient(adapter)
        client._seq = itertools.count(10_000)  # garbage responses (request_seq <= 5) never match ours

        async with serving(client):
            for message in messages:
                await adapter.say(message)
            async with anyio.create_task_group() as tg:
                got: list[Any] = []

                async def call() -> None:
                    got.append(await client.request("threads", timeout=5))

                tg.start_soon(call)
                while True:  # skip refusals of reverse requests the garbage contained
                    request = await adapter.recv()
                    if request.get("command") == "threads" and request.get("type") == "request":
                        break
                await adapter.respond(request, {"threads": []})
            assert got == [{"threads": []}] and not client.closed

    anyio.run(main)
