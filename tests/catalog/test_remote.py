"""Remote sources against a real HTTP server on 127.0.0.1: good, slow, failing, malformed, 304."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from catalog_server import CatalogServer

from kairox_catalog.fetch import DocumentCache, FetchError, fetch_document
from kairox_catalog.remote import RemoteSource

DOC = {"entries": [{"name": "one", "launch": {"command": "uvx", "args": ["one-server"]}}]}
DOC2 = {"entries": [{"name": "two", "launch": {"command": "npx", "args": ["-y", "two"]}}]}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def source(server: CatalogServer, path: str, cache: Path, **kw: float) -> RemoteSource:
    return RemoteSource(
        "team", server.url(path), cache_dir=cache, ttl=kw.get("ttl", 3600.0), timeout=kw.get("timeout", 2.0)
    )


async def cached_source(server: CatalogServer, cache: Path, **kw: float) -> RemoteSource:
    """A source of ``/c.json`` whose first load cached :data:`DOC`; with a TTL of 0, every
    later load asks the server again."""
    server.serve("/c.json", DOC)
    src = source(server, "/c.json", cache, ttl=0, **kw)
    await src.load()
    return src


@pytest.mark.anyio
async def test_good_document_is_fetched_then_served_from_cache_within_the_ttl(
    catalog_server: CatalogServer, tmp_path: Path
) -> None:
    catalog_server.serve("/c.json", DOC)
    src = source(catalog_server, "/c.json", tmp_path)
    first = await src.load()
    assert [e.name for e in first.entries] == ["one"] and first.warnings == ()
    assert src.last_origin == "network"
    second = await src.load()
    assert [e.name for e in second.entries] == ["one"]
    assert src.last_origin == "cache"
    assert len(catalog_server.hits("/c.json")) == 1


@pytest.mark.anyio
async def test_after_the_ttl_the_document_is_revalidated_with_etag_and_304_keeps_the_copy(
    catalog_server: CatalogServer, tmp_path: Path
) -> None:
    url = catalog_server.serve("/c.json", DOC)
    cache = DocumentCache(tmp_path)
    clock = Clock()
    first = await fetch_document(url, cache=cache, ttl=60, timeout=2, clock=clock)
    assert first.origin == "network"
    clock.now += 61
    second = await fetch_document(url, cache=cache, ttl=60, timeout=2, clock=clock)
    assert second.origin == "revalidated" and second.body == first.body
    conditional = catalog_server.hits("/c.json")[-1]
    assert conditional.if_none_match is not None and conditional.status == 304
    assert conditional.if_modified_since == "Wed, 21 Oct 2026 07:28:00 GMT"
    # the 304 refreshed the record: within the TTL again, no request
    clock.now += 30
    assert (await fetch_document(url, cache=cache, ttl=60, timeout=2, clock=clock)).origin == "cache"
    assert len(catalog_server.hits("/c.json")) == 2


@pytest.mark.anyio
async def test_last_modified_alone_revalidates_too(catalog_server: CatalogServer, tmp_path: Path) -> None:
    url = catalog_server.serve("/lm.json", DOC, etag=False)
    cache = DocumentCache(tmp_path)
    await fetch_document(url, cache=cache, ttl=0, timeout=2)
    again = await fetch_document(url, cache=cache, ttl=0, timeout=2)
    assert again.origin == "revalidated"
    last = catalog_server.hits("/lm.json")[-1]
    assert last.if_none_match is None and last.status == 304


@pytest.mark.anyio
async def test_a_changed_document_replaces_the_cached_copy(catalog_server: CatalogServer, tmp_path: Path) -> None:
    src = await cached_source(catalog_server, tmp_path)
    catalog_server.serve("/c.json", DOC2)
    result = await src.load()
    assert [e.name for e in result.entries] == ["two"] and src.last_origin == "network"
    assert catalog_server.hits("/c.json")[-1].status == 200


@pytest.mark.anyio
async def test_failing_server_serves_the_cached_copy_with_a_warning(
    catalog_server: CatalogServer, tmp_path: Path
) -> None:
    src = await cached_source(catalog_server, tmp_path)
    catalog_server.serve("/c.json", {"error": "boom"}, status=500)
    result = await src.load()
    assert [e.name for e in result.entries] == ["one"]
    assert src.last_origin == "stale"
    assert len(result.warnings) == 1 and "HTTP 500" in result.warnings[0] and "cached copy" in result.warnings[0]


@pytest.mark.anyio
async def test_slow_server_times_out_and_the_cached_copy_is_served(
    catalog_server: CatalogServer, tmp_path: Path
) -> None:
    src = await cached_source(catalog_server, tmp_path, timeout=0.3)
    catalog_server.serve("/c.json", DOC2, delay=2.0)
    result = await src.load()
    assert [e.name for e in result.entries] == ["one"]
    assert src.last_origin == "stale" and "timed out" in result.warnings[0].lower()


@pytest.mark.anyio
async def test_slow_server_without_a_cache_is_a_source_error(catalog_server: CatalogServer, tmp_path: Path) -> None:
    catalog_server.serve("/slow.json", DOC, delay=2.0)
    result = await source(catalog_server, "/slow.json", tmp_path, timeout=0.3).load()
    assert result.entries == ()
    assert result.errors[0].where == "document" and "timed out" in result.errors[0].reason.lower()


@pytest.mark.anyio
async def test_offline_serves_the_cache(catalog_server: CatalogServer, tmp_path: Path) -> None:
    src = await cached_source(catalog_server, tmp_path)
    catalog_server.__exit__()  # the server is gone: connection refused
    result = await src.load()
    assert [e.name for e in result.entries] == ["one"] and src.last_origin == "stale"
    assert "cannot reach 127.0.0.1" in result.warnings[0]


@pytest.mark.anyio
async def test_malformed_document_never_replaces_a_good_cached_copy(
    catalog_server: CatalogServer, tmp_path: Path
) -> None:
    src = await cached_source(catalog_server, tmp_path)
    catalog_server.serve("/c.json", raw=b'{"entries": [ {"name": ')
    result = await src.load()
    assert [e.name for e in result.entries] == ["one"]
    assert "unusable document" in result.warnings[0]
    # and the cache still holds the good copy
    record = DocumentCache(tmp_path).read(catalog_server.url("/c.json"))
    assert record is not None and json.loads(record.body) == DOC


@pytest.mark.anyio
async def test_malformed_document_without_a_cache_is_reported(catalog_server: CatalogServer, tmp_path: Path) -> None:
    catalog_server.serve("/bad.json", raw=b"<html>not json</html>")
    result = await source(catalog_server, "/bad.json", tmp_path).load()
    assert result.entries == () and "not valid JSON" in result.errors[0].reason


@pytest.mark.anyio
async def test_malformed_entries_are_skipped_and_the_rest_load(catalog_server: CatalogServer, tmp_path: Path) -> None:
    doc = {"entries": [*DOC["entries"], {"name": "broken", "launch": {"args": []}}, *DOC2["entries"]]}
    catalog_server.serve("/mixed.json", doc)
    result = await source(catalog_server, "/mixed.json", tmp_path).load()
    assert [e.name for e in result.entries] == ["one", "two"]
    assert [(e.where, e.name) for e in result.errors] == [("entries[1].launch", "broken")]
    assert "needs a command" in result.errors[0].reason


@pytest.mark.anyio
@pytest.mark.parametrize(
    "garbage",
    [b"", b"{not json", b'{"version": 1}', b'{"version": 1, "url": "x", "body": "", "sha256": "0", "fetched_at": 0}'],
)
async def test_a_corrupt_cache_is_discarded_and_refetched(
    catalog_server: CatalogServer, tmp_path: Path, garbage: bytes
) -> None:
    url = catalog_server.serve("/c.json", DOC)
    cache = DocumentCache(tmp_path)
    await fetch_document(url, cache=cache, ttl=3600, timeout=2)
    cache.path_for(url).write_bytes(garbage)
    again = await fetch_document(url, cache=cache, ttl=3600, timeout=2)
    assert again.origin == "network" and json.loads(again.body) == DOC
    assert any("corrupt" in w for w in cache.warnings)
    assert cache.read(url) is not None


@pytest.mark.anyio
async def test_a_tampered_cache_body_fails_its_checksum(catalog_server: CatalogServer, tmp_path: Path) -> None:
    url = catalog_server.serve("/c.json", DOC)
    cache = DocumentCache(tmp_path)
    await fetch_document(url, cache=cache, ttl=3600, timeout=2)
    record = json.loads(cache.path_for(url).read_text())
    record["body"] = json.dumps(DOC2)
    cache.path_for(url).write_text(json.dumps(record))
    assert cache.read(url) is None and not cache.path_for(url).exists()


@pytest.mark.anyio
async def test_404_without_cache_raises_fetch_error(catalog_server: CatalogServer, tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="HTTP 404"):
        await fetch_document(catalog_server.url("/missing.json"), cache=DocumentCache(tmp_path), timeout=2)


@pytest.mark.anyio
async def test_local_files_are_read_directly(tmp_path: Path) -> None:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(DOC))
    for url in (str(path), f"file://{path}"):
        result = await RemoteSource("local", url, cache_dir=tmp_path / "cache").load()
        assert [e.name for e in result.entries] == ["one"]
    assert not (tmp_path / "cache").exists()
    missing = await RemoteSource("local", str(tmp_path / "nope.json")).load()
    assert "cannot read" in missing.errors[0].reason
