"""Catalog documents: kairox manifests, MCP registry server.json (both spellings), marketplace.json."""

from __future__ import annotations

import json
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from kairox_catalog.builtin import BUILTIN_ENTRIES
from kairox_catalog.documents import detect_kind, parse_document, parse_text
from kairox_catalog.model import CatalogEntry, EntryError, InstallSource, SourceResult, entry_to_dict

# -- kairox manifest ------------------------------------------------------------------


def test_builtin_entries_round_trip_through_the_kairox_format() -> None:
    doc = {"entries": [entry_to_dict(e) for e in BUILTIN_ENTRIES]}
    result = parse_document(json.loads(json.dumps(doc)), source="copy")
    assert result.errors == ()
    assert result.entries == tuple(attrs.evolve(e, source="copy") for e in BUILTIN_ENTRIES)


def test_a_malformed_entry_is_skipped_with_its_field_path_and_the_rest_load() -> None:
    doc = {
        "entries": [
            {"name": "good", "launch": {"command": "uvx", "args": ["good-server"]}},
            {"name": "bad-args", "launch": {"command": "uvx", "args": "not-a-list"}},
            {"name": "bad-type", "launch": {"command": 3}},
            {"name": "no-launch"},
            {"name": "typo", "launch": {"command": "x"}, "titel": "T"},
            {"name": "plugin-without-source", "kind": "plugin"},
            {"name": "bad-kind", "kind": "widget", "launch": {"command": "x"}},
            "just a string",
            {"name": "also-good", "launch": {"transport": "sse", "url": "https://example.com/sse"}},
        ]
    }
    result = parse_document(doc, source="t")
    assert [e.name for e in result.entries] == ["good", "also-good"]
    by_where = {e.where: e for e in result.errors}
    assert by_where["entries[1].launch.args"].reason == "expected a list, got 'not-a-list'"
    assert by_where["entries[2].launch.command"].reason == "expected a string, got 3"
    assert "needs a launch recipe" in by_where["entries[3]"].reason
    assert "unknown key" in by_where["entries[4].titel"].reason and "title" in by_where["entries[4].titel"].reason
    assert "needs an install source" in by_where["entries[5]"].reason
    assert "one of" in by_where["entries[6].kind"].reason
    assert by_where["entries[7]"].reason.startswith("expected a table")
    assert by_where["entries[1].launch.args"].name == "bad-args"
    assert len(result.errors) == 7


def test_a_stdio_recipe_needs_a_command_and_a_remote_one_a_url() -> None:
    result = parse_document(
        {"entries": [{"name": "a", "launch": {"transport": "stdio"}}, {"name": "b", "launch": {"transport": "sse"}}]},
        source="t",
    )
    assert result.entries == ()
    assert ["needs a command" in e.reason for e in result.errors] == [True, False]
    assert "needs a url" in result.errors[1].reason


def test_the_document_may_not_set_the_source_of_its_entries() -> None:
    result = parse_document([{"name": "a", "source": "builtin", "launch": {"command": "x"}}], source="mine")
    assert [e.source for e in result.entries] == ["mine"]


def test_not_json_and_not_a_catalog_are_document_errors() -> None:
    assert parse_text(b"{not json", source="s").errors[0].where == "document"
    assert "not valid JSON" in parse_text(b"{not json", source="s").errors[0].reason
    result = parse_text(b'{"hello": 1}', source="s")
    assert result.entries == () and "not a catalog document" in result.errors[0].reason
    assert parse_text(b"[]", source="s") == SourceResult()


# -- MCP registry -------------------------------------------------------------------------

CAMEL = {
    "$schema": "https://static.modelcontextprotocol.io/schemas/2025-10-17/server.schema.json",
    "name": "io.github.example/weather",
    "title": "Weather",
    "description": "Forecasts",
    "version": "1.2.0",
    "websiteUrl": "https://example.com/weather",
    "repository": {"url": "https://github.com/example/weather", "source": "github"},
    "packages": [
        {
            "registryType": "npm",
            "identifier": "@example/weather-mcp",
            "version": "1.2.0",
            "transport": {"type": "stdio"},
            "runtimeHint": "npx",
            "environmentVariables": [
                {"name": "WEATHER_API_KEY", "description": "API key", "isRequired": True, "isSecret": True},
                {"name": "UNITS", "default": "metric"},
            ],
            "packageArguments": [
                {"type": "named", "name": "--units", "value": "metric"},
                {"type": "positional", "valueHint": "city", "isRequired": True},
            ],
        }
    ],
}

SNAKE = {
    "name": "io.github.example/notes",
    "description": "Notes",
    "version_detail": {"version": "0.3.1"},
    "packages": [
        {
            "registry_name": "pypi",
            "name": "notes-mcp",
            "version": "0.3.1",
            "runtime_hint": "uvx",
            "environment_variables": [{"name": "NOTES_DIR", "is_required": True, "is_secret": False}],
        }
    ],
}

SNAKE_2025_07 = {
    "name": "io.github.example/db",
    "description": "Databases",
    "packages": [
        {
            "registry_type": "oci",
            "identifier": "ghcr.io/example/db-mcp",
            "version": "2.0",
            "transport": {"type": "stdio"},
            "environment_variables": [{"name": "DB_URL", "is_required": True, "is_secret": True}],
        }
    ],
}

REMOTE = {
    "name": "com.example/hosted",
    "description": "Hosted",
    "remotes": [
        {
            "type": "streamable-http",
            "url": "https://mcp.example.com/mcp",
            "headers": [
                {"name": "Authorization", "value": "Bearer {api_key}", "isRequired": True, "isSecret": True},
                {"name": "X-Client", "value": "kairox"},
            ],
        }
    ],
}


def test_registry_camel_case_server_json() -> None:
    (entry,) = parse_document(CAMEL, source="reg").entries
    assert entry.name == "weather" and entry.title == "Weather" and entry.version == "1.2.0"
    assert entry.launch is not None
    assert entry.launch.command == "npx"
    assert entry.launch.args == ("-y", "@example/weather-mcp@1.2.0", "--units", "metric", "{city}")
    assert [r.runtime for r in entry.requirements] == ["node"]
    key, units, city = entry.inputs
    assert (key.name, key.required, key.secret) == ("WEATHER_API_KEY", True, True)
    assert (units.name, units.default, units.required) == ("UNITS", "metric", False)
    assert (city.name, city.kind, city.required) == ("city", "arg", True)
    assert entry.homepage == "https://example.com/weather"
    assert entry.repository == "https://github.com/example/weather"
    assert "io.github.example/weather" in entry.tags


def test_registry_older_snake_case_fields() -> None:
    result = parse_document({"servers": [SNAKE, SNAKE_2025_07]}, source="reg")
    assert result.errors == ()
    notes, db = result.entries
    assert notes.launch is not None and notes.launch.command == "uvx"
    assert notes.launch.args == ("notes-mcp@0.3.1",)
    assert [(i.name, i.required, i.secret) for i in notes.inputs] == [("NOTES_DIR", True, False)]
    assert [r.runtime for r in notes.requirements] == ["uv"]
    assert db.launch is not None and db.launch.command == "docker"
    assert db.launch.args == ("run", "-i", "--rm", "-e", "DB_URL", "ghcr.io/example/db-mcp:2.0")
    assert db.prepare == ("docker", "pull", "ghcr.io/example/db-mcp:2.0")


def test_registry_remote_with_templated_secret_header() -> None:
    (entry,) = parse_document(REMOTE, source="reg").entries
    assert entry.launch is not None
    assert (entry.launch.transport, entry.launch.url) == ("streamable_http", "https://mcp.example.com/mcp")
    assert entry.launch.headers == {"X-Client": "kairox"}
    (auth,) = entry.inputs
    assert (auth.kind, auth.template, auth.variable, auth.secret) == ("header", "Bearer {value}", "API_KEY", True)


def test_registry_api_response_skips_deleted_and_superseded_and_bad_servers() -> None:
    official = "io.modelcontextprotocol.registry/official"
    doc = {
        "servers": [
            {"server": CAMEL, "_meta": {official: {"status": "active", "isLatest": True}}},
            {"server": {**CAMEL, "version": "1.1.0"}, "_meta": {official: {"isLatest": False}}},
            {"server": {**SNAKE, "name": "x/gone"}, "_meta": {official: {"status": "deleted"}}},
            {"server": {"name": "x/nothing-to-run", "packages": [{"registryType": "mcpb", "identifier": "a"}]}},
            {"server": {"name": "x/bad-pkg", "packages": [{"registryType": "npm", "identifier": 5}]}},
            {"server": {"description": "no name"}},
        ],
        "metadata": {"count": 6},
    }
    result = parse_document(doc, source="reg")
    assert [e.name for e in result.entries] == ["weather"]
    reasons = {e.where: e.reason for e in result.errors}
    assert reasons["servers[1]"] == "superseded by a newer version"
    assert reasons["servers[2]"] == "deleted from the registry"
    assert "not supported" in reasons["servers[3]"]
    assert "packages[0].identifier: expected a string, got 5" in reasons["servers[4]"]
    assert reasons["servers[5].name"] == "required field is missing"


def test_registry_single_server_and_detection() -> None:
    assert detect_kind(CAMEL) == "mcp-registry"
    assert detect_kind({"servers": []}) == "mcp-registry"
    assert detect_kind([SNAKE]) == "mcp-registry"
    assert detect_kind({"entries": []}) == "kairox"
    assert detect_kind({"plugins": []}) == "claude-marketplace"
    assert detect_kind(3) is None
    assert parse_document(SNAKE, source="r", kind="mcp-registry").entries[0].name == "notes"


# -- Claude marketplace -------------------------------------------------------------------------

MARKETPLACE = {
    "name": "team-tools",
    "owner": {"name": "Team"},
    "metadata": {"description": "ours", "pluginRoot": "./plugins"},
    "plugins": [
        {"name": "formatter", "source": "./plugins/formatter", "description": "Formats", "keywords": ["fmt"]},
        {"name": "linter", "source": "linter", "version": "1.0.0", "category": "quality"},
        {"name": "gh", "source": {"source": "github", "repo": "acme/gh-plugin", "ref": "v2"}},
        {"name": "git-url", "source": {"source": "url", "url": "https://git.example.com/p.git"}},
        {"name": "sub", "source": {"source": "git-subdir", "url": "https://git.example.com/m.git", "path": "tools/p"}},
        {"name": "npm-one", "source": {"source": "npm", "package": "@acme/claude-plugin", "version": "1.2.3"}},
        {"name": "escape", "source": "../outside"},
        {"name": "weird", "source": {"source": "ftp", "url": "ftp://x"}},
        {"name": "bad-repo", "source": {"source": "github", "repo": "no-slash"}},
        {"source": "./plugins/nameless"},
    ],
}


def test_marketplace_plugins_and_their_sources() -> None:
    result = parse_document(MARKETPLACE, source="mk", location="/srv/market/.claude-plugin/marketplace.json")
    by_name = {e.name: e for e in result.entries}
    assert set(by_name) == {"formatter", "linter", "gh", "git-url", "sub", "npm-one"}
    assert all(e.kind == "plugin" for e in result.entries)
    assert by_name["formatter"].install == InstallSource(type="path", path="/srv/market/plugins/formatter")
    assert by_name["linter"].install == InstallSource(type="path", path="/srv/market/plugins/linter")
    assert by_name["gh"].install == InstallSource(type="github", repo="acme/gh-plugin", ref="v2")
    assert by_name["sub"].install == InstallSource(type="git", url="https://git.example.com/m.git", path="tools/p")
    assert by_name["npm-one"].install == InstallSource(type="npm", package="@acme/claude-plugin", version="1.2.3")
    assert [r.runtime for r in by_name["gh"].requirements] == ["git"]
    assert "fmt" in by_name["formatter"].tags and "quality" in by_name["linter"].tags
    reasons = {e.where: e.reason for e in result.errors}
    assert "escapes" in reasons["plugins[6].source"]
    assert "unknown source type" in reasons["plugins[7].source.source"]
    assert "owner/name" in reasons["plugins[8].source.repo"]
    assert reasons["plugins[9].name"] == "required field is missing"


def test_marketplace_relative_source_from_a_url_is_listed_but_not_local() -> None:
    url = "https://example.com/market/.claude-plugin/marketplace.json"
    entry = parse_document(MARKETPLACE, source="mk", location=url).entries[0]
    assert entry.install is not None and entry.install.path == "https://example.com/market/plugins/formatter"


def test_marketplace_with_plugins_of_the_wrong_type() -> None:
    result = parse_document({"plugins": {"a": 1}}, source="mk")
    assert result.entries == () and result.errors[0].reason == "expected a list, got a table"


# -- any JSON ------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=6),
    max_leaves=40,
)

# values that reach deep into the converters: real key names with arbitrary values
_KEYS = [
    "name", "title", "description", "version", "kind", "launch", "install", "inputs", "requirements", "tags",
    "transport", "command", "args", "url", "env", "headers", "packages", "remotes", "registryType", "registry_type",
    "registry_name", "identifier", "runtimeHint", "runtime_hint", "environmentVariables", "environment_variables",
    "isRequired", "is_required", "isSecret", "is_secret", "default", "value", "type", "packageArguments",
    "runtimeArguments", "server", "_meta", "source", "repo", "path", "package", "ref", "plugins", "metadata",
    "pluginRoot", "servers", "entries", "websiteUrl", "repository", "keywords", "prepare", "notes", "runtime",
]  # fmt: skip
_SCALARS = st.sampled_from(["stdio", "sse", "streamable-http", "npm", "pypi", "oci", "github", "npm", "x/y", "./p"])
shaped = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | _SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(_KEYS), children, max_size=8),
    max_leaves=60,
)


def _check(result: SourceResult) -> None:
    assert isinstance(result, SourceResult)
    assert all(isinstance(e, CatalogEntry) and e.source == "h" for e in result.entries)
    assert all(isinstance(e, EntryError) and e.reason for e in result.errors)
    for entry in result.entries:
        json.dumps(entry_to_dict(entry))


@given(json_values, st.sampled_from(["auto", "kairox", "mcp-registry", "claude-marketplace"]))
def test_any_json_gives_entries_and_errors_never_an_exception(data: Any, kind: str) -> None:
    _check(parse_document(data, source="h", kind=kind))


@given(shaped, st.sampled_from(["auto", "kairox", "mcp-registry", "claude-marketplace"]))
def test_catalog_shaped_json_gives_entries_and_errors_never_an_exception(data: Any, kind: str) -> None:
    _check(parse_document(data, source="h", kind=kind, location="/m/.claude-plugin/marketplace.json"))
    _check(parse_document({"servers": [data]}, source="h"))
    _check(parse_document({"entries": [data]}, source="h"))
    _check(parse_document({"plugins": [data]}, source="h"))
    for doc in ({"servers": [data]}, {"entries": [data]}, {"plugins": [data]}):  # the network-only check too
        _check(parse_document(doc, source="h", location="https://x.dev/.claude-plugin/marketplace.json"))


@given(st.binary(max_size=200))
def test_any_bytes_parse_without_an_exception(raw: bytes) -> None:
    _check(parse_text(raw, source="h"))


def test_a_document_from_a_url_cannot_install_from_this_machines_files() -> None:
    doc = {
        "entries": [
            {"name": "localsteal", "kind": "skill", "install": {"type": "path", "path": "/home/me/.ssh"}},
            {"name": "fine", "kind": "skill", "install": {"type": "url", "url": "https://x.dev/SKILL.md"}},
        ]
    }
    remote = parse_document(doc, source="r", location="https://catalog.example.com/kx.json")
    assert [e.name for e in remote.entries] == ["fine"]
    [refused] = remote.errors
    assert (refused.name, refused.where) == ("localsteal", "install.path")
    assert refused.reason.startswith("a catalog fetched over the network installs only from the network")
    assert [e.fetched_from for e in remote.entries] == ["https://catalog.example.com/kx.json"]
    local = parse_document(doc, source="l", location="/srv/catalog/kx.json")
    assert [e.name for e in local.entries] == ["localsteal", "fine"]  # a local document may
    assert [e.fetched_from for e in local.entries] == ["", ""]


def test_a_remote_marketplaces_relative_sources_stay_remote() -> None:
    doc = {"name": "m", "owner": {"name": "o"}, "plugins": [{"name": "p", "source": "./plugins/p"}]}
    result = parse_document(doc, source="m", location="https://x.dev/m/.claude-plugin/marketplace.json")
    [entry] = result.entries
    assert entry.install is not None and entry.install.path == "https://x.dev/m/plugins/p"


def test_a_document_with_too_many_entries_reads_the_first_and_says_so() -> None:
    from kairox_catalog.documents import MAX_ENTRIES

    doc = {
        "entries": [
            {"name": f"e{i}", "kind": "skill", "install": {"type": "url", "url": "https://x.dev/s"}}
            for i in range(MAX_ENTRIES + 5)
        ]
    }
    result = parse_document(doc, source="big")
    assert len(result.entries) == MAX_ENTRIES
    assert result.errors[0].reason == f"lists {MAX_ENTRIES + 5} entries; only the first {MAX_ENTRIES} are read"
