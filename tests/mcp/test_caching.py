"""2026-07-28 caching hints (``ttlMs``, ``cacheScope``) honoured by kairox's MCP client.

The peer is ``tests/fixtures/mcp_servers/caching.py``, a real process (stdio, or streamable
HTTP), which counts the requests it answers (its tool ``counts``) and numbers each read of a
resource. Time is the manager's clock, moved by hand: no test waits for a TTL to pass.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import peers
import pytest
from mcp.client.caching import CacheEntry, CacheKey
from mcp.types import ReadResourceResult, TextResourceContents
from mcp_helpers import open_runtime

from kairox import Runtime
from kairox_mcp import McpResourcesChanged, manager_of
from kairox_mcp.caching import ResultStore

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

READ = {"domain": "local", "capability": "read"}


class Clock:
    """Seconds that pass only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@contextlib.contextmanager
def caching_entry(how: str, *args: str, **extra: Any) -> Iterator[dict[str, Any]]:
    server = peers.fixture_server("caching")
    if how == "stdio":
        yield {"command": server[0], "args": [*server[1:], *args], **READ, **extra}
        return
    port = peers.free_port()
    with peers.http_peer([*server, "--http", str(port), *args], port) as url:
        yield {"type": "streamable_http", "url": url, **READ, **extra}


@contextlib.asynccontextmanager
async def started(tmp_path: Path, entry: dict[str, Any], clock: Clock) -> Any:
    async with open_runtime(tmp_path, {"c": entry}, start=False) as rt:
        manager_of(rt).clock = clock  # before the first listing: its freshness is on this clock
        await rt.start_providers(["mcp"])
        status = {s.name: s for s in rt.status().servers}
        assert status["c"].state.value == "ready", status["c"].detail
        yield rt


async def counts(rt: Runtime) -> dict[str, int]:
    """The requests the server answered so far, by method."""
    counted: dict[str, int] = json.loads((await rt.call_tool("c.counts", {})).text)
    return counted


async def read(rt: Runtime, uri: str, **kwargs: Any) -> str:
    contents = await manager_of(rt).read_resource("c", uri, **kwargs)
    return contents[0].text or ""


@pytest.mark.parametrize("how", ["stdio", "streamable_http"])
async def test_tools_are_listed_again_once_their_ttl_has_passed(tmp_path: Path, how: str) -> None:
    clock = Clock()
    with caching_entry(how, "--ttl", "5000") as entry:
        async with started(tmp_path, entry, clock) as rt:
            manager = manager_of(rt)
            client = manager.server("c").client
            assert client is not None and client.modern and client.tools_ttl_ms == 5000
            assert (await counts(rt))["tools/list"] == 1
            assert await manager.refresh_tools() == 0  # fresh: kept
            clock.advance(4.999)
            assert await manager.refresh_tools() == 0
            assert (await counts(rt))["tools/list"] == 1
            clock.advance(0.002)  # 5.001 s after the listing: stale, listed again when needed
            assert manager.server("c").tools_stale
            assert await manager.refresh_tools() == 1
            assert (await counts(rt))["tools/list"] == 2
            assert await manager.refresh_tools() == 0  # the new listing is fresh for 5 s more
            assert (await counts(rt))["tools/list"] == 2
            assert {s.id for s in rt.tools.by_provider("mcp:c")} == {"c.counts", "c.add"}


async def test_a_ttl_of_zero_is_stale_at_once(tmp_path: Path) -> None:
    clock = Clock()
    with caching_entry("stdio", "--ttl", "0") as entry:
        async with started(tmp_path, entry, clock) as rt:
            manager = manager_of(rt)
            assert await manager.refresh_tools() == 1  # no time passed, and still stale
            assert await manager.refresh_tools() == 1
            assert (await counts(rt))["tools/list"] == 3
            await manager.list_resources("c")
            await manager.list_resources("c")
            assert (await counts(rt))["resources/list"] == 2


async def test_reads_and_lists_are_kept_as_long_as_their_ttl(tmp_path: Path) -> None:
    clock = Clock()
    with caching_entry("stdio", "--ttl", "5000") as entry:
        async with started(tmp_path, entry, clock) as rt:
            manager = manager_of(rt)
            assert await read(rt, "count://private") == "read 1 of count://private"
            assert await read(rt, "count://private") == "read 1 of count://private"  # kept
            assert await read(rt, "count://public") == "read 1 of count://public"
            assert await read(rt, "count://fresh") == "read 1 of count://fresh"  # ttlMs 0: never kept
            assert await read(rt, "count://fresh") == "read 2 of count://fresh"
            # cached=False (what the gateway asks): always the server's answer
            assert await read(rt, "count://private", cached=False) == "read 2 of count://private"
            for _ in range(2):
                assert [r.uri for r in await manager.list_resources("c")][:3] == [
                    "count://private",
                    "count://public",
                    "count://fresh",
                ]
                assert [p.name for p in await manager.list_prompts("c")] == ["hello"]
                assert [t.uri_template for t in await manager.list_resource_templates("c")] == ["count://item/{n}"]
            seen = await counts(rt)
            assert (seen["resources/read"], seen["resources/list"], seen["prompts/list"]) == (5, 1, 1)
            assert seen["resources/templates/list"] == 1
            clock.advance(5.001)
            assert await read(rt, "count://private") == "read 3 of count://private"
            await manager.list_resources("c")
            assert (await counts(rt))["resources/list"] == 2


async def test_a_list_changed_evicts_the_kept_list(tmp_path: Path) -> None:
    """The server says (on its listen stream) that its resources changed: the kept listing,
    fresh for a minute more, is not served again."""
    clock = Clock()
    with caching_entry("stdio", "--ttl", "60000") as entry:
        async with started(tmp_path, entry, clock) as rt:
            manager = manager_of(rt)
            assert len(await manager.list_resources("c")) == 3
            changed = anyio.Event()
            rt.events.subscribe(lambda _e: changed.set(), McpResourcesChanged)
            assert (await rt.call_tool("c.add", {"name": "x"})).text == "added count://added/x"
            with anyio.fail_after(10):
                await changed.wait()
            assert "count://added/x" in {r.uri for r in await manager.list_resources("c")}
            assert (await counts(rt))["resources/list"] == 2


async def test_a_handshake_era_server_is_not_cached(tmp_path: Path) -> None:
    """2025-11-25 has no caching hints: nothing changes (tools kept until list_changed, reads
    and lists asked each time)."""
    clock = Clock()
    with caching_entry("stdio", "--ttl", "5000", protocol="2025-11-25") as entry:
        async with started(tmp_path, entry, clock) as rt:
            manager = manager_of(rt)
            client = manager.server("c").client
            assert client is not None and not client.modern and client.tools_ttl_ms is None
            clock.advance(3600)
            assert not manager.server("c").tools_stale
            assert await manager.refresh_tools() == 0
            assert await read(rt, "count://private") == "read 1 of count://private"
            assert await read(rt, "count://private") == "read 2 of count://private"
            await manager.list_resources("c")
            await manager.list_resources("c")
            seen = await counts(rt)
            assert (seen["tools/list"], seen["resources/list"]) == (1, 2)


def _entry(text: str, expires_at: float = 2e9) -> CacheEntry:
    result = ReadResourceResult(contents=[TextResourceContents(uri="x://a", text=text)])
    return CacheEntry(value=result, scope="private", expires_at=expires_at)


async def test_the_store_is_bounded_in_entries_and_bytes() -> None:
    store = ResultStore(max_entries=3, max_bytes=4000, max_entry_bytes=1500)
    for i in range(10):
        await store.set(CacheKey("resources/read", f"x://{i}"), _entry("a" * 100))
    assert len(store) == 3
    assert await store.get(CacheKey("resources/read", "x://6")) is None  # least recently used first out
    assert await store.get(CacheKey("resources/read", "x://9")) is not None
    await store.set(CacheKey("resources/read", "big"), _entry("b" * 2000))  # over max_entry_bytes: not kept
    assert await store.get(CacheKey("resources/read", "big")) is None
    await store.clear()
    for i in range(10):
        await store.set(CacheKey("resources/read", f"y://{i}"), _entry("c" * 1200))
    assert len(store) <= 3 and store.stored_bytes <= 4000
    assert await store.get(CacheKey("resources/read", "y://9")) is not None
    # the same key again replaces its entry (and its bytes)
    before = store.stored_bytes
    await store.set(CacheKey("resources/read", "y://9"), _entry("c" * 1200))
    assert store.stored_bytes == before
