"""The plugin's hooks: cheap to import, the [catalog] section, sources from the config, cache location."""

from __future__ import annotations

import pytest
from catalog_server import CatalogServer
from shared_helpers import loaded_after

from kairox_catalog.catalog import Catalog, EntryNotFound
from kairox_catalog.remote import RemoteSource
from kairox_testing import KairoxHarness


def test_importing_hooks_imports_no_http_client_and_none_of_the_work() -> None:
    heavy = ("httpx", "httpx2", "mcp", "pydantic", "starlette", "urllib.request", "http.client", "tomlkit")
    loaded = loaded_after("import kairox_catalog.hooks", *heavy, "kairox_catalog")
    assert loaded == ["kairox_catalog", "kairox_catalog.hooks"]


@pytest.mark.anyio
async def test_catalog_section_errors_name_the_field(harness: KairoxHarness) -> None:
    harness.write_config('[catalog]\ncache_ttl = "soon"\n\n[[catalog.sources]]\nname = "x"\nurl = "u"\nkind = "rss"\n')
    harness.trust()  # the workspace's part of [catalog] is structured (and checked) only once trusted
    async with harness.open(start=False) as rt:
        paths = {e.path: e.message for e in rt.config.errors}
    assert paths["catalog.cache_ttl"] == "expected a number, got 'soon'"
    assert paths["catalog.sources[0].kind"].startswith("expected one of 'auto'")


@pytest.mark.anyio
async def test_configured_sources_are_registered_with_the_cache_under_kairox_home(
    harness: KairoxHarness, catalog_server: CatalogServer
) -> None:
    url = catalog_server.serve("/c.json", {"entries": [{"name": "one", "launch": {"command": "x"}}]})
    harness.write_config(
        "[catalog]\nbuiltin = false\ncache_ttl = 5\ntimeout = 3\n\n"
        f'[[catalog.sources]]\nname = "team"\nurl = "{url}"\n\n'
        '[[catalog.sources]]\nname = "team"\nurl = "http://127.0.0.1:9/dup.json"\n\n'
        '[[catalog.sources]]\nname = "off"\nurl = "http://127.0.0.1:9/off.json"\nenabled = false\n'
    )
    harness.trust()
    async with harness.open(start=False) as rt:
        registrar = rt.catalog_sources()
        assert registrar.names() == ["team"]
        team = registrar["team"]
        assert isinstance(team, RemoteSource) and (team.ttl, team.timeout, team.url) == (5.0, 3.0, url)
        snap = await Catalog(rt).load()
        assert [e.key for e in snap.entries] == ["team:one"]
        assert snap.get("team:one").name == "one"
        with pytest.raises(EntryNotFound, match="did you mean one"):
            snap.get("onee")
        with pytest.raises(EntryNotFound, match="no catalog source named nope"):
            await Catalog(rt).load(sources=["nope"])
    cached = list((harness.home / "cache" / "catalog").glob("*.json"))
    assert len(cached) == 1


class _Exploding:
    name = "exploding"

    async def entries(self, runtime: object) -> list[object]:
        raise RuntimeError("source is broken")


class _ThirdParty:
    name = "third"

    async def entries(self, runtime: object) -> list[object]:
        return [{"name": "ext", "launch": {"command": "ext-server"}}, {"name": 3}]


@pytest.mark.anyio
async def test_third_party_sources_through_the_hook_and_a_broken_one_costs_only_itself(
    harness: KairoxHarness,
) -> None:
    from kairox import hookimpl

    class Plugin:
        @hookimpl  # type: ignore[untyped-decorator]
        def kairox_register_catalog_sources(self, registrar: object) -> None:
            registrar.add(_Exploding())  # type: ignore[attr-defined]
            registrar.add(_ThirdParty())  # type: ignore[attr-defined]

    harness.register(Plugin(), name="third-party")
    async with harness.open(start=False) as rt:
        snap = await Catalog(rt).load()
    assert {e.key for e in snap.entries} >= {"third:ext", "builtin:time"}
    assert [(e.source, e.where) for e in snap.errors] == [("third", "[1].name")]
    status = {s.name: s for s in snap.sources}
    assert "source is broken" in status["exploding"].failed and status["third"].owner == "third-party"
    assert any("exploding failed" in w for w in snap.warnings)
