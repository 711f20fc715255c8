"""Codex marketplaces (.agents/plugins/marketplace.json): local, url and git-subdir sources, policies,
the local plugin's own manifest; every bad entry is an error naming its field, never an exception."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_catalog.catalog import Catalog
from kairox_catalog.codex_marketplace import is_codex_marketplace, parse_codex_marketplace
from kairox_catalog.install import Installer, InstallOptions
from kairox_catalog.marketplace import marketplace_base
from kairox_catalog.model import InstallSource
from kairox_testing import KairoxHarness

MARKET = Path(__file__).resolve().parent.parent / "fixtures" / "bundles" / "codex-marketplace" / "tools-market"
DOC = MARKET / ".agents" / "plugins" / "marketplace.json"


def test_the_fixture_marketplace() -> None:
    data = json.loads(DOC.read_text())
    assert is_codex_marketplace(data, str(DOC))
    result = parse_codex_marketplace(data, source="tools", location=str(DOC))
    entries = {e.name: e for e in result.entries}
    assert sorted(entries) == ["formatter", "linter", "mono-part", "remote-kit"]
    formatter = entries["formatter"]
    # a local source is relative to the marketplace root (the directory holding .agents/)
    assert formatter.install == InstallSource(type="path", path=str(MARKET / "plugins" / "formatter"))
    assert formatter.install is not None
    assert Path(formatter.install.path, ".codex-plugin", "plugin.json").is_file()
    # the plugin's own manifest describes it
    assert (formatter.title, formatter.description, formatter.version) == ("Formatter", "Formats the change", "1.2.0")
    assert "Productivity" in formatter.tags and formatter.source == "tools"
    assert entries["linter"].install == InstallSource(
        type="path", path=str(MARKET / "plugins" / "linter")
    )  # the plain "./path" form
    assert entries["linter"].description == "Lints code" and "installed-by-default" in entries["linter"].tags
    assert entries["remote-kit"].install == InstallSource(
        type="git", url="https://github.com/example/remote-kit", ref="v1"
    )
    assert entries["mono-part"].install == InstallSource(
        type="git", url="https://github.com/example/mono.git", path="plugins/part"
    )
    errors = {e.name: e for e in result.errors}
    assert sorted(errors) == ["escapes", "retired"]
    assert errors["retired"].where == "plugins[4].policy.installation" and "NOT_AVAILABLE" in errors["retired"].reason
    assert errors["escapes"].where == "plugins[5].source.path"


def test_base_of_a_marketplace_path_and_url() -> None:
    assert marketplace_base("/srv/m/.agents/plugins/marketplace.json") == "/srv/m"
    assert marketplace_base("https://x.dev/m/.agents/plugins/marketplace.json") == "https://x.dev/m/"
    assert marketplace_base("/srv/other/marketplace.json") == "/srv/other"
    # the layouts Codex reads (.agents/plugins/, .claude-plugin/) and the .codex-plugin/ beside a
    # Codex plugin's manifest: the root is the folder holding them, never the layout folder itself
    assert marketplace_base("/srv/m/.claude-plugin/marketplace.json") == "/srv/m"
    assert marketplace_base("file:///srv/m/.codex-plugin/marketplace.json") == "/srv/m"
    assert marketplace_base("/.codex-plugin/marketplace.json") == "/"
    assert marketplace_base("/srv/m/plugins/marketplace.json") == "/srv/m/plugins"


def test_a_relative_source_in_a_remote_marketplace_is_a_url() -> None:
    doc = {"name": "m", "plugins": [{"name": "p", "source": {"source": "local", "path": "./plugins/p"}}]}
    result = parse_codex_marketplace(doc, source="s", location="https://x.dev/m/.agents/plugins/marketplace.json")
    [entry] = result.entries
    assert entry.install == InstallSource(type="path", path="https://x.dev/m/plugins/p")


def test_claude_marketplaces_are_not_taken_for_codex_ones() -> None:
    claude = {"name": "c", "owner": {"name": "o"}, "plugins": [{"name": "p", "source": "./p"}]}
    assert not is_codex_marketplace(claude, "/srv/c/.claude-plugin/marketplace.json")
    assert is_codex_marketplace(claude, "/srv/c/.agents/plugins/marketplace.json")
    assert is_codex_marketplace({"name": "x", "plugins": [{"name": "p", "source": {"source": "local", "path": "./p"}}]})


def test_document_level_problems() -> None:
    [err] = parse_codex_marketplace([], source="s").errors
    assert "expected an object" in err.reason
    [err] = parse_codex_marketplace({"plugins": []}, source="s").errors
    assert err.where == "name"
    [err] = parse_codex_marketplace({"name": "m", "plugins": 3}, source="s").errors
    assert err.where == "plugins"


_SOURCE = st.one_of(
    st.sampled_from(["./plugins/a", "./", "plugins/a", "./../x", "./a/./b", ""]),
    st.fixed_dictionaries(
        {"source": st.sampled_from(["local", "url", "git-subdir", "npm", 3])},
        optional={
            "path": st.one_of(st.sampled_from(["./plugins/a", "sub/dir", "../up", "", "/abs"]), st.integers()),
            "url": st.one_of(st.sampled_from(["owner/repo", "https://g.dev/r.git", "-oops", ""]), st.integers()),
            "ref": st.one_of(st.text(max_size=5), st.none()),
            "sha": st.text(max_size=5),
        },
    ),
    st.integers(),
    st.none(),
)
_ENTRY = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(st.text(max_size=12), st.integers()),
        "source": _SOURCE,
        "policy": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "installation": st.sampled_from(["AVAILABLE", "INSTALLED_BY_DEFAULT", "NOT_AVAILABLE", "maybe", 1]),
                    "authentication": st.sampled_from(["ON_INSTALL", "ON_USE", "never"]),
                    "products": st.one_of(st.lists(st.text(max_size=4), max_size=2), st.integers()),
                },
            ),
            st.integers(),
        ),
        "category": st.one_of(st.text(max_size=8), st.integers()),
        "extra": st.text(max_size=4),
    },
)


@given(
    name=st.one_of(st.text(min_size=1, max_size=8), st.integers(), st.none()),
    plugins=st.one_of(st.lists(st.one_of(_ENTRY, st.integers(), st.text(max_size=3)), max_size=5), st.integers()),
    location=st.sampled_from(
        ["", "/srv/m/.agents/plugins/marketplace.json", "https://x.dev/.agents/plugins/marketplace.json"]
    ),
)
def test_any_marketplace_gives_entries_and_errors_never_an_exception(name: Any, plugins: Any, location: str) -> None:
    doc: dict[str, Any] = {"plugins": plugins}
    if name is not None:
        doc["name"] = name
    result = parse_codex_marketplace(doc, source="s", location=location)
    for err in result.errors:
        assert err.reason
        assert err.where.split(".")[0].split("[")[0] in ("", "name", "plugins", "interface")
    for entry in result.entries:
        assert entry.kind == "plugin" and entry.name and entry.install is not None
        if entry.install.type == "path" and location.startswith("/"):
            assert entry.install.path.startswith("/srv/m/")
            assert ".." not in entry.install.path.split("/")
    if isinstance(plugins, list):
        assert len(result.entries) + len(result.errors) <= len(plugins) or not result.entries


@pytest.mark.anyio
async def test_a_codex_marketplace_source_lists_and_installs_its_plugins(
    harness: KairoxHarness, tmp_path: Path
) -> None:
    """Through the catalog as a user configures it: a [[catalog.sources]] entry at the document."""
    market = tmp_path / "market"
    shutil.copytree(MARKET, market)
    doc = market / ".agents" / "plugins" / "marketplace.json"
    harness.write_config(
        f'[catalog]\nbuiltin = false\n\n[[catalog.sources]]\nname = "codex"\nurl = "{doc}"\nkind = "auto"\n'
    )
    harness.trust()
    async with harness.open(start=False) as rt:
        snap = await Catalog(rt).load()
        assert sorted(e.name for e in snap.entries) == ["formatter", "linter", "mono-part", "remote-kit"]
        assert sorted(e.name for e in snap.errors) == ["escapes", "retired"]
        report = await Installer(rt).install(snap.get("formatter"), InstallOptions())
        assert report.target == harness.workspace / ".kairox" / "plugins" / "formatter"
        assert (report.target / ".codex-plugin" / "plugin.json").is_file()
        assert (report.target / "skills" / "format" / "SKILL.md").is_file()
