"""Claude marketplaces: ``strict: false`` entries whose manifest is the marketplace entry
(inline ``lspServers``; ``skills`` / ``commands`` lists) install as the entry describes.

The fixture ``tests/fixtures/catalog/marketplace/inline/`` was written for these tests from
Claude Code's plugin marketplace documentation."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairox_catalog._reader import EntryProblem
from kairox_catalog.bundles import assemble_plugin
from kairox_catalog.catalog import Catalog
from kairox_catalog.documents import parse_document
from kairox_catalog.install import Installer, InstallOptions
from kairox_catalog.marketplace import bundle_to_entry
from kairox_testing import KairoxHarness

MARKET = Path(__file__).parent.parent / "fixtures" / "catalog" / "marketplace" / "inline"


def read_market() -> Any:
    return json.loads((MARKET / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))


def test_strict_false_entries_carry_their_manifest() -> None:
    result = parse_document(read_market(), source="m", location=str(MARKET / ".claude-plugin" / "marketplace.json"))
    office, lsp = result.entries
    assert office.manifest == {
        "name": "office-skills",
        "description": "Four of the five skills in this repository",
        "skills": ["./skills/xlsx", "./skills/docx", "./skills/pptx", "./skills/pdf"],
        "commands": ["./commands/release-notes.md"],
    }
    assert any("installs only the listed commands ./commands/release-notes.md; skills" in n for n in office.notes)
    assert lsp.manifest["lspServers"] == {"gopls": {"command": "gopls", "extensionToLanguage": {".go": "go"}}}
    (escaper,) = result.errors
    assert (escaper.where, escaper.name) == ("plugins[2].skills[0]", "escaper")
    assert "escapes the plugin root" in escaper.reason


def test_a_strict_entry_supplements_with_its_components_only() -> None:
    # strict is Claude Code's default: the entry's components are added to the plugin's own
    lsp = {"gopls": {"command": "gopls", "extensionToLanguage": {".go": "go"}}}
    entry = bundle_to_entry({"name": "p", "source": "./p", "lspServers": lsp}, "plugins[0]", base="/m")
    assert (entry.manifest, entry.supplements) == ({"name": "p", "lspServers": lsp}, True)
    assert any("adds its lspServers" in n for n in entry.notes)
    plain = bundle_to_entry({"name": "p", "source": "./p", "description": "d"}, "plugins[0]", base="/m")
    assert (plain.manifest, plain.supplements) == ({}, False)


def test_assemble_copies_only_the_listed_components(tmp_path: Path) -> None:
    (entry, _lsp) = parse_document(read_market(), source="m", location=str(MARKET)).entries
    out, notes = assemble_plugin(MARKET, entry.manifest, tmp_path / "out")
    assert notes == []  # the marketplace root has no plugin.json of its own: nothing to merge
    assert sorted(p.name for p in (out / "skills").iterdir()) == ["docx", "pdf", "pptx", "xlsx"]
    assert sorted(p.name for p in (out / "commands").iterdir()) == ["release-notes.md"]
    manifest = json.loads((out / ".claude-plugin" / "plugin.json").read_text())
    assert manifest == entry.manifest
    assert not (out / ".claude-plugin" / "marketplace.json").exists()  # the plugin's own manifests are replaced
    assert (out / "plugins" / "gopls-lsp" / "README.md").is_file()  # everything else is kept


def test_assemble_refuses_a_listed_path_that_is_missing(tmp_path: Path) -> None:
    with pytest.raises(OSError, match=re.escape("skills: './skills/nope' does not exist")):
        assemble_plugin(MARKET, {"name": "x", "skills": ["./skills/nope"]}, tmp_path / "out")


@pytest.mark.anyio
async def test_strict_false_plugins_install_as_the_marketplace_describes(
    kairox_harness: KairoxHarness, tmp_path: Path
) -> None:
    market = shutil.copytree(MARKET, tmp_path / "market")
    url = market / ".claude-plugin" / "marketplace.json"
    kairox_harness.write_config(
        f'[catalog]\nbuiltin = false\n\n[[catalog.sources]]\nname = "m"\nurl = "{url}"\nkind = "claude-marketplace"\n'
    )
    kairox_harness.trust()
    async with kairox_harness.open(start=False) as rt:
        snap = await Catalog(rt).load()
        report = await Installer(rt).install(snap.get("gopls-lsp"), InstallOptions())
        plugin = json.loads((report.target / ".claude-plugin" / "plugin.json").read_text())
        assert plugin["lspServers"]["gopls"]["command"] == "gopls"  # was "no plugin manifest"
        report = await Installer(rt).install(snap.get("office-skills"), InstallOptions())
        skills = sorted(p.name for p in (report.target / "skills").iterdir())
        assert skills == ["docx", "pdf", "pptx", "xlsx"]  # not the fifth


# -- properties ------------------------------------------------------------------------------

_path = st.one_of(
    st.sampled_from(["./skills/a", "skills/b", "../x", "/etc", "./a/../../b", "C:/x", "", "./ok"]), st.text(max_size=8)
)
_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    _path,
    st.lists(st.one_of(_path, st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["p", "a-b", ""]), "source": st.sampled_from(["./p", "./", "../p"])},
        optional={
            "strict": st.one_of(st.booleans(), st.integers()),
            **{
                k: _value for k in ("skills", "commands", "agents", "outputStyles", "hooks", "mcpServers", "lspServers")
            },
        },
    )
)
def test_any_marketplace_entry_is_an_entry_or_an_entry_problem(data: dict[str, Any]) -> None:
    try:
        entry = bundle_to_entry(data, "plugins[0]", base="/market")
    except EntryProblem:
        return
    for key in ("skills", "commands", "agents", "outputStyles"):
        for rel in entry.manifest.get(key, []):
            parts = rel.replace("\\", "/").split("/")
            assert ".." not in parts and not rel.startswith("/") and ":" not in rel
    components = {"skills", "commands", "agents", "outputStyles", "hooks", "mcpServers", "lspServers"}
    if data.get("strict") is False:
        assert entry.manifest and not entry.supplements
    else:
        assert bool(entry.manifest) == bool(components & {k for k, v in data.items() if v is not None})
        assert entry.supplements == bool(entry.manifest)
