"""Marketplace installs give the plugin the tool would install, or fail and change nothing.

Through the CLI, as a user runs it (``kairox catalog install NAME``), with marketplaces
written in temporary folders for these tests from the formats' documentation:

- a Codex marketplace: ``.agents/plugins/marketplace.json`` (or the same document in
  ``.claude-plugin/``, which Codex also reads) with local ``./plugins/x`` sources, and a
  Claude-shaped one in ``.codex-plugin/`` beside the plugin's own manifest, whose ``./``
  source is the folder holding ``.codex-plugin/``;
- a Claude marketplace entry ``strict: false`` that lists no components, for a plugin with
  its own ``.claude-plugin/plugin.json`` (``mcpServers``) and a ``.mcp.json``;
- entries whose plugin is no plugin at all, or a broken one: the install fails, naming why,
  and the plugins folder (and any install it was to replace) stays as it was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kairox_catalog.bundles import COMPONENT_FIELDS, merge_manifest, supplement_manifest
from kairox_testing import KairoxHarness

SKILL = "---\nname: {name}\ndescription: {name} things\n---\nDo {name} things.\n"


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=1), encoding="utf-8")
    return path


def codex_plugin(root: Path, name: str, skill: str) -> Path:
    write(root / ".codex-plugin" / "plugin.json", {"name": name, "version": "0.3.0", "skills": "./skills/"})
    write(root / "skills" / skill / "SKILL.md", SKILL.format(name=skill))
    return root


def sources(*docs: tuple[str, Path]) -> str:
    out = "[catalog]\nbuiltin = false\n"
    for name, doc in docs:
        out += f'\n[[catalog.sources]]\nname = "{name}"\nurl = "{doc}"\n'
    return out


def install(harness: KairoxHarness, name: str, *more: str) -> Any:
    return harness.cli("catalog", "install", name, "--yes", *more)


def inspect(harness: KairoxHarness, name: str) -> dict[str, Any]:
    result = harness.cli("plugin", "inspect", str(harness.workspace / ".kairox" / "plugins" / name), "--json")
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def inventory(view: dict[str, Any]) -> set[str]:
    return {f"{item['kind']}/{item['name']}" for item in view["inventory"]}


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every file (its bytes) and link (its target) below ``folder``, hidden ones included."""
    out: dict[str, bytes | str] = {}
    if not folder.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = str(path.relative_to(folder))
            if path.is_symlink():
                out[rel] = os.readlink(path)
            elif path.is_file():
                out[rel] = path.read_bytes()
            else:
                out[rel] = "<dir>"
    return out


# -- Codex marketplaces: sources resolve to the plugin's own root ------------------------------


def test_a_claude_shaped_marketplace_in_codex_plugin_installs_the_plugin_beside_it(
    harness: KairoxHarness, tmp_path: Path
) -> None:
    """``./`` of a marketplace in ``.codex-plugin/`` is the folder holding ``.codex-plugin/`` (the
    plugin), not ``.codex-plugin/`` itself (which holds two JSON files and no plugin)."""
    repo = codex_plugin(tmp_path / "solo", "solo", "hello")
    doc = write(
        repo / ".codex-plugin" / "marketplace.json",
        {"name": "solo", "owner": {"name": "Solo"}, "plugins": [{"name": "solo", "source": "./"}]},
    )
    harness.write_config(sources(("solo", doc)))
    harness.trust()
    result = install(harness, "solo")
    assert result.exit_code == 0, result.output
    view = inspect(harness, "solo")
    assert view["state"] != "failed", view["reason"]
    assert (view["name"], view["format"]) == ("solo", "codex")
    assert inventory(view) == {"skill/hello"}


def test_a_codex_marketplace_resolves_local_sources_from_its_root(harness: KairoxHarness, tmp_path: Path) -> None:
    """Codex reads its marketplace from ``.agents/plugins/`` or ``.claude-plugin/``; either way
    ``./plugins/x`` is below the folder holding that layout (codex-rs ``marketplace_root_dir``)."""
    docs = []
    for layout, name in ((".agents/plugins", "agents-mk"), (".claude-plugin", "claude-mk")):
        market = tmp_path / name
        codex_plugin(market / "plugins" / f"fmt-{name}", f"fmt-{name}", "tidy")
        docs.append(
            (
                name,
                write(
                    market / layout / "marketplace.json",
                    {
                        "name": name,
                        "plugins": [
                            {
                                "name": f"fmt-{name}",
                                "source": {"source": "local", "path": f"./plugins/fmt-{name}"},
                                "policy": {"installation": "AVAILABLE"},
                            }
                        ],
                    },
                ),
            )
        )
    harness.write_config(sources(*docs))
    harness.trust()
    for name in ("fmt-agents-mk", "fmt-claude-mk"):
        result = install(harness, name)
        assert result.exit_code == 0, result.output
        view = inspect(harness, name)
        assert view["state"] != "failed" and inventory(view) == {"skill/tidy"}, view


# -- strict: false: the entry merged with the plugin's own manifest ---------------------------


def claude_market(tmp_path: Path, entry: dict[str, Any]) -> Path:
    plugin = tmp_path / "data" / "plugins" / "db"
    write(
        plugin / ".claude-plugin" / "plugin.json",
        {
            "name": "db",
            "version": "1.4.0",
            "description": "Database helpers",
            "userConfig": {"dsn": {"type": "string", "title": "DSN", "description": "the database"}},
            "mcpServers": {"sqlite": {"command": "uvx", "args": ["mcp-server-sqlite"]}},
        },
    )
    write(plugin / ".mcp.json", {"mcpServers": {"pg": {"command": "npx", "args": ["-y", "pg-mcp"]}}})
    write(plugin / "skills" / "query" / "SKILL.md", SKILL.format(name="query"))
    return write(
        tmp_path / "data" / ".claude-plugin" / "marketplace.json",
        {
            "name": "data-tools",
            "owner": {"name": "Data"},
            "plugins": [{"name": "db", "source": "./plugins/db", **entry}],
        },
    )


def test_a_strict_false_entry_listing_no_components_keeps_the_plugins_own(
    harness: KairoxHarness, tmp_path: Path
) -> None:
    doc = claude_market(tmp_path, {"strict": False, "description": "Database helpers, curated", "version": "2.0.0"})
    harness.write_config(sources(("data", doc)))
    harness.trust()
    result = install(harness, "db", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    target = Path(report["target"])
    manifest = json.loads((target / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["mcpServers"] == {"sqlite": {"command": "uvx", "args": ["mcp-server-sqlite"]}}
    assert manifest["userConfig"]["dsn"]["title"] == "DSN"  # a field the entry cannot carry: kept
    assert manifest["description"] == "Database helpers, curated"  # the entry's wins
    assert manifest["version"] == "1.4.0"  # plugin.json's wins (Claude Code's version resolution)
    assert (target / ".mcp.json").is_file()
    # what was not kept is said, naming the file and the field
    assert report["warnings"] == [
        ".claude-plugin/plugin.json version '1.4.0' is kept over the marketplace entry's '2.0.0' "
        "(Claude Code: plugin.json's version wins)",
        ".claude-plugin/plugin.json description 'Database helpers' is replaced by the marketplace entry's "
        "'Database helpers, curated'",
    ]
    view = inspect(harness, "db")
    assert view["state"] != "failed", view["reason"]
    assert inventory(view) == {"mcp_server/sqlite", "mcp_server/pg", "skill/query"}


def test_a_strict_false_entry_listing_a_component_replaces_the_plugins_and_says_so(
    harness: KairoxHarness, tmp_path: Path
) -> None:
    doc = claude_market(
        tmp_path, {"strict": False, "mcpServers": {"lite": {"command": "uvx", "args": ["mcp-server-sqlite"]}}}
    )
    write(doc.parent.parent / "plugins" / "db" / ".codex-plugin" / "plugin.json", {"name": "db", "skills": "./skills/"})
    harness.write_config(sources(("data", doc)))
    harness.trust()
    result = install(harness, "db")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert (
        ".claude-plugin/plugin.json mcpServers is not installed: the strict: false marketplace entry lists its own "
        "mcpServers, which replace it" in text
    )
    assert ".codex-plugin/plugin.json is not installed" in text
    view = inspect(harness, "db")
    assert inventory(view) == {"mcp_server/lite", "mcp_server/pg", "skill/query"}


# -- strict (the default): the entry's components added to the plugin's own ---------------------


def test_a_strict_entry_adds_its_components_to_the_plugins_own(harness: KairoxHarness, tmp_path: Path) -> None:
    doc = claude_market(
        tmp_path,
        {
            "description": "Database helpers, curated",
            "mcpServers": {"lite": {"command": "uvx", "args": ["mcp-server-sqlite"]}},
            "lspServers": {"sql": {"command": "sqls", "extensionToLanguage": {".sql": "sql"}}},
        },
    )
    harness.write_config(sources(("data", doc)))
    harness.trust()
    result = install(harness, "db", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    manifest = json.loads((Path(report["target"]) / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["description"] == "Database helpers"  # the plugin's manifest is the authority
    assert manifest["userConfig"]["dsn"]["title"] == "DSN"
    assert report["warnings"] == [
        "the marketplace entry's description 'Database helpers, curated' is not installed: "
        ".claude-plugin/plugin.json description 'Database helpers' is kept "
        "(strict, Claude Code's default: the plugin's manifest is the authority)"
    ]
    view = inspect(harness, "db")
    assert view["state"] != "failed", view["reason"]
    assert inventory(view) == {"mcp_server/sqlite", "mcp_server/lite", "mcp_server/pg", "lsp_server/sql", "skill/query"}


def test_a_strict_entry_is_the_manifest_of_a_plugin_without_one(harness: KairoxHarness, tmp_path: Path) -> None:
    # an LSP plugin whose folder holds only a README: its entry carries the server
    write(tmp_path / "m" / "plugins" / "nix" / "README.md", "Nix for Claude Code")
    lsp = {"nix": {"command": "nil", "extensionToLanguage": {".nix": "nix"}}}
    doc = write(
        tmp_path / "m" / ".claude-plugin" / "marketplace.json",
        {
            "name": "lsp",
            "owner": {"name": "x"},
            "plugins": [{"name": "nix", "source": "./plugins/nix", "lspServers": lsp}],
        },
    )
    harness.write_config(sources(("lsp", doc)))
    harness.trust()
    result = install(harness, "nix")
    assert result.exit_code == 0, result.output
    assert inventory(inspect(harness, "nix")) == {"lsp_server/nix"}


@given(
    st.dictionaries(st.sampled_from(["name", "version", "description", *COMPONENT_FIELDS]), st.integers(), max_size=6),
    st.dictionaries(st.sampled_from(["name", "version", "description", *COMPONENT_FIELDS]), st.integers(), max_size=6),
)
def test_supplementing_keeps_the_plugins_own_and_names_what_it_leaves_out(
    own: dict[str, Any], entry: dict[str, Any]
) -> None:
    merged, notes = supplement_manifest(own, entry)
    assert set(merged) == set(own) | set(entry)
    for key, value in own.items():
        if key in COMPONENT_FIELDS:
            assert value in (merged[key] if isinstance(merged[key], list) else [merged[key]])
        else:
            assert merged[key] == value
    for key, value in entry.items():
        listed = merged[key] if isinstance(merged[key], list) else [merged[key]]
        assert value in listed or any(n.startswith(f"the marketplace entry's {key} ") for n in notes), (key, notes)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_keys = st.sampled_from(["name", "version", "description", "author", "userConfig", "keywords", *COMPONENT_FIELDS])


@given(st.dictionaries(_keys, _json, max_size=8), st.dictionaries(_keys, _json, max_size=8))
def test_merging_drops_nothing_silently(own: dict[str, Any], entry: dict[str, Any]) -> None:
    merged, notes = merge_manifest(own, entry)
    assert set(merged) == set(own) | set(entry)
    for key, value in own.items():
        if merged[key] != value:  # not kept: a note names the file and the field
            assert any(n.startswith(f".claude-plugin/plugin.json {key} ") for n in notes), (key, notes)
    for key, value in entry.items():
        if merged[key] != value:
            assert key == "version" and merged[key] == own[key]
            assert any(n.startswith(".claude-plugin/plugin.json version ") for n in notes)


# -- an install that yields no loadable plugin fails and leaves nothing behind ------------------


def test_an_install_that_is_no_loadable_plugin_fails_and_changes_nothing(
    harness: KairoxHarness, tmp_path: Path
) -> None:
    market = tmp_path / "market"
    codex_plugin(market / "plugins" / "fmt", "fmt", "tidy")
    write(market / "docs" / "README.md", "just docs\n")
    # a root plugin.json that is no manifest any format reads (the check was once "a file of that name")
    write(market / "lookalike" / "plugin.json", {"hello": "world"})
    write(market / "broken" / ".claude-plugin" / "plugin.json", {"name": "broken", "mcpServers": 5})
    doc = write(
        market / ".agents" / "plugins" / "marketplace.json",
        {
            "name": "m",
            "plugins": [
                {"name": n, "source": f"./{d}"}
                for n, d in (("fmt", "plugins/fmt"), *[(x, x) for x in ("docs", "lookalike", "broken")])
            ],
        },
    )
    config = harness.write_config(sources(("m", doc)))
    harness.trust()
    plugins = harness.workspace / ".kairox" / "plugins"
    assert install(harness, "fmt").exit_code == 0
    before, config_before = snapshot(plugins), config.read_bytes()
    for name, reason in (
        ("lookalike", "not a loadable plugin: no manifest format recognises it"),
        ("broken", "not a loadable plugin: "),
        ("docs", "not a loadable plugin: no manifest format recognises it"),
    ):
        result = install(harness, name)
        assert (result.exit_code, snapshot(plugins)) == (1, before), result.output  # no folder, no staging left
        assert f"cannot install {name}: {reason}" in result.output
    broken = install(harness, "broken")
    assert ".claude-plugin/plugin.json" in broken.output and "mcpServers" in broken.output  # file and field
    assert str(plugins) not in broken.output.split("cannot install broken:")[1]  # no staging path
    assert config.read_bytes() == config_before


# -- the attack: a hostile marketplace ------------------------------------------------------------


def test_a_hostile_marketplace_cannot_write_outside_nor_leave_a_broken_install(
    harness: KairoxHarness, tmp_path: Path
) -> None:
    """Each hostile entry is refused, naming why; what is outside the plugins folder is untouched,
    and the plugins folder holds exactly the good install it held (``--force`` never trades it for
    a broken one), with no staging folder left."""
    outside = tmp_path / "outside"
    write(outside / ".claude-plugin" / "plugin.json", {"name": "outside"})
    write(outside / "secret.txt", "keep me\n")
    good = tmp_path / "good"
    codex_plugin(good / "plugins" / "victim", "victim", "tidy")
    good_doc = write(
        good / ".claude-plugin" / "marketplace.json",
        {"name": "good", "owner": {"name": "g"}, "plugins": [{"name": "victim", "source": "./plugins/victim"}]},
    )
    evil = tmp_path / "evil"
    # .claude-plugin/ a link leaving the plugin: a strict: false install writes .claude-plugin/plugin.json
    write(evil / "plugins" / "linked" / "skills" / "a" / "SKILL.md", SKILL.format(name="a"))
    (evil / "plugins" / "linked" / ".claude-plugin").symlink_to(
        os.path.relpath(outside / ".claude-plugin", evil / "plugins" / "linked")
    )
    # a listed skill that is a link to a folder outside
    (evil / "plugins" / "skilled" / "skills").mkdir(parents=True)
    (evil / "plugins" / "skilled" / "skills" / "x").symlink_to(outside)
    # a plugin.json no format reads: it once passed the check, and replaced the good install
    write(evil / "plugins" / "lookalike" / "plugin.json", {"hello": "world"})
    entries = [
        {"name": "victim", "source": "./plugins/linked", "strict": False, "description": "pwn"},
        {"name": "victim", "source": "./plugins/skilled", "strict": False, "skills": ["./skills/x"]},
        {"name": "victim", "source": "./plugins/lookalike"},
        {"name": "victim", "source": "./plugins/../../outside"},
        {"name": "victim", "source": "./plugins/lookalike", "strict": False, "mcpServers": "../../outside/x.json"},
    ]
    docs = []
    for i, entry in enumerate(entries):
        docs.append(
            (
                f"evil{i}",
                write(
                    evil / ".claude-plugin" / f"marketplace-{i}.json",
                    {"name": f"evil{i}", "owner": {"name": "e"}, "plugins": [entry]},
                ),
            )
        )
    harness.write_config(sources(("good", good_doc), *docs))
    harness.trust()
    assert install(harness, "good:victim").exit_code == 0
    plugins = harness.workspace / ".kairox" / "plugins"
    before, outside_before = snapshot(plugins), snapshot(outside)
    assert set(before) >= {"victim/.codex-plugin/plugin.json", "victim/skills/tidy/SKILL.md"}
    refusals = []
    for i in range(len(entries)):
        result = install(harness, f"evil{i}:victim", "--force")
        assert result.exit_code != 0, result.output
        assert snapshot(plugins) == before, result.output
        assert snapshot(outside) == outside_before
        refusals.append(" ".join(result.output.split()))
    assert "refusing .claude-plugin: a symbolic link" in refusals[0]
    assert "refusing skills/x: a symbolic link" in refusals[1]
    assert "cannot install victim: not a loadable plugin" in refusals[2]
    # refused as the document is read: the entry is listed as skipped, and install says why
    assert (
        "plugins[0].source (victim): source path './plugins/../../outside' escapes the marketplace root" in refusals[3]
    )
    assert "plugins[0].mcpServers (victim): path '../../outside/x.json' escapes the plugin root" in refusals[4]
