"""Where servers come from: .mcp.json, Philont mcp.json, kairox.toml, and their precedence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_helpers import open_runtime

from kairox._types import Capability, Domain, ServerState
from kairox_mcp.config import McpServerConfig
from kairox_mcp.sources import (
    PLAYWRIGHT_SERVER,
    load_definitions,
    parse_mcp_json,
    parse_philont_mcp_json,
    philont_config_path,
)

ENV = {"HOME": "/home/u", "TOKEN": "t0k", "EMPTY": ""}


def mcp_json(servers: dict[str, Any]) -> tuple[dict[str, McpServerConfig], list[str]]:
    defs, errors = parse_mcp_json({"mcpServers": servers}, file=".mcp.json", env=ENV)
    return {d.name: d.config for d in defs}, [str(e) for e in errors]


def test_mcp_json_types_and_aliases() -> None:
    servers, errors = mcp_json(
        {
            "local": {"command": "npx", "args": ["-y", "srv"], "env": {"A": "${TOKEN}"}},
            "remote": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "alias": {"type": "streamable-http", "url": "https://h/mcp"},
            "old": {"type": "sse", "url": "https://h/sse"},
            "cursor": {"url": "https://h/mcp"},
            "explicit": {"type": "stdio", "command": "srv"},
        }
    )
    assert errors == []
    assert servers["local"].type == "stdio" and servers["local"].env == {"A": "t0k"}
    assert servers["remote"].type == "streamable_http"
    assert servers["remote"].headers == {"Authorization": "Bearer t0k"}
    assert servers["alias"].type == "streamable_http"
    assert servers["old"].type == "sse"
    assert servers["cursor"].type == "streamable_http"  # a url and no command: remote
    assert servers["explicit"].command == "srv"


def test_mcp_json_variable_defaults_and_unset_variables() -> None:
    servers, errors = mcp_json(
        {
            "a": {"command": "${MISSING:-fallback}", "args": ["${EMPTY:-used-when-empty}"]},
            "b": {"command": "srv", "args": ["${NOT_SET}"]},
        }
    )
    assert servers["a"].command == "fallback" and servers["a"].args == ["used-when-empty"]
    assert "b" not in servers
    assert errors == [
        ".mcp.json: mcpServers.b.args[0]: environment variable NOT_SET is not set "
        "(write ${NOT_SET:-default} for a fallback)"
    ]


def test_mcp_json_unknown_keys_are_ignored_and_bad_known_keys_drop_only_their_entry() -> None:
    servers, errors = mcp_json(
        {
            "ok": {"command": "srv", "alwaysAllow": ["x"], "description": "other tools add keys"},
            "bad": {"command": "srv", "args": "--flag"},
            "off": {"command": "srv", "disabled": True},
            "notobj": "srv",
        }
    )
    assert set(servers) == {"ok", "off"}
    assert not servers["off"].enabled
    assert ".mcp.json: mcpServers.bad.args: expected a list, got '--flag'" in errors
    assert ".mcp.json: mcpServers.notobj: expected an object" in errors


def test_mcp_json_document_shapes() -> None:
    assert parse_mcp_json({}, file="f", env={}) == ([], [])
    _, errors = parse_mcp_json([], file="f", env={})
    assert [str(e) for e in errors] == ["f: expected a JSON object with an `mcpServers` object"]
    _, errors = parse_mcp_json({"mcpServers": []}, file="f", env={})
    assert "mcpServers" in str(errors[0])


def test_philont_entries() -> None:
    data = {
        "servers": [
            {
                "name": "fs",
                "transport": {"transport": "stdio", "command": "npx", "args": ["-y", "fs"]},
                "timeout": 1500,
                "toolPrefix": "files",
                "domain": "local",
                "capability": "read",
            },
            {"name": "web", "transport": {"transport": "sse", "url": "https://h/sse"}},
            {"name": "broken", "transport": {"transport": "stdio"}},
            {"transport": {"transport": "stdio", "command": "x"}},
            {"name": "neg", "transport": {"command": "x"}, "timeout": -1},
        ]
    }
    defs, errors = parse_philont_mcp_json(data, file="mcp.json", env=ENV)
    by_name = {d.name: d for d in defs}
    assert set(by_name) == {"fs", "web"}
    fs = by_name["fs"].config
    assert fs.tool_timeout_s == 1.5 and fs.tool_prefix == "files"
    assert (fs.domain, fs.capability) == (Domain.LOCAL, Capability.READ)
    assert by_name["web"].config.type == "sse" and by_name["web"].origin == "philont"
    text = [str(e) for e in errors]
    assert any("servers[2]" in t and "command" in t for t in text)
    assert any("servers[3]" in t and "name" in t for t in text)
    assert any("servers[4].timeout" in t for t in text)
    bare, errors = parse_philont_mcp_json([{"name": "a", "transport": {"command": "x"}}], file="f", env={})
    assert [d.name for d in bare] == ["a"] and errors == []


def test_philont_config_path_and_browser_flag(tmp_path: Path) -> None:
    assert philont_config_path({"HOME": "/h"}) == Path("/h/.philont/mcp.json")
    assert philont_config_path({"HOME": "/h", "PHILONT_MCP_CONFIG": "/etc/p.json"}) == Path("/etc/p.json")
    defs, errors = load_definitions(
        workspace=tmp_path, env={"HOME": str(tmp_path), "PHILONT_MCP_BROWSER": "1"}, toml_servers={}, toml_source={}
    )
    assert errors == []
    browser = defs["browser"].config
    assert browser == PLAYWRIGHT_SERVER
    assert browser.args == ["-y", "@playwright/mcp@latest", "--headless", "--isolated"]
    assert (browser.domain, browser.capability) == (Domain.NETWORK, Capability.EXECUTE)
    # a declared "browser" is kept
    (tmp_path / ".philont").mkdir()
    (tmp_path / ".philont" / "mcp.json").write_text(
        json.dumps([{"name": "browser", "transport": {"command": "my-browser"}}])
    )
    defs, _ = load_definitions(
        workspace=tmp_path, env={"HOME": str(tmp_path), "PHILONT_MCP_BROWSER": "1"}, toml_servers={}, toml_source={}
    )
    assert defs["browser"].config.command == "my-browser"


def test_precedence_kairox_toml_over_mcp_json_over_philont(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".philont").mkdir(parents=True)
    (home / ".philont" / "mcp.json").write_text(
        json.dumps(
            {
                "servers": [
                    {"name": "a", "transport": {"command": "philont-a"}},
                    {"name": "b", "transport": {"command": "philont-b"}},
                    {"name": "c", "transport": {"command": "philont-c"}},
                ]
            }
        )
    )
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"b": {"command": "mcpjson-b"}, "c": {"command": "mcpjson-c"}}})
    )
    toml = {"c": McpServerConfig(command="toml-c")}
    defs, errors = load_definitions(
        workspace=tmp_path, env={"HOME": str(home)}, toml_servers=toml, toml_source={"c": "kairox.toml"}
    )
    assert errors == []
    assert {n: (d.config.command, d.origin) for n, d in defs.items()} == {
        "a": ("philont-a", "philont"),
        "b": ("mcpjson-b", ".mcp.json"),
        "c": ("toml-c", "kairox.toml"),
    }
    assert defs["b"].source == str(tmp_path / ".mcp.json")


def test_broken_files_are_errors_not_exceptions(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text("{not json")
    defs, errors = load_definitions(workspace=tmp_path, env={"HOME": str(tmp_path)}, toml_servers={}, toml_source={})
    assert defs == {}
    assert len(errors) == 1 and "invalid JSON" in str(errors[0]) and ".mcp.json" in str(errors[0])


@pytest.mark.anyio
async def test_manager_reads_all_sources_and_reports_their_errors(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"fromjson": {"command": "srv"}, "bad": {"command": 1}}})
    )
    servers = {"fromtoml": {"command": "srv"}}
    # trusted: a workspace's .mcp.json servers are definitions only once the workspace is trusted
    async with open_runtime(tmp_path, servers, load_entrypoints=False, start=False, trusted=True) as rt:
        from kairox_mcp import manager_of

        manager = manager_of(rt)
        assert sorted(manager.definitions) == ["fromjson", "fromtoml"]
        assert any("mcpServers.bad.command" in str(e) for e in rt.config.errors)
        status = {s.name: s for s in manager.status()}
        assert list(status) == ["fromjson", "fromtoml", "bad"]
        assert status["fromjson"].detail == status["fromtoml"].detail == "not started"
        # a broken entry is listed too, failed with its error, rather than left out
        assert status["bad"].state is ServerState.FAILED and "mcpServers.bad.command" in status["bad"].detail


# -- property tests: outside input never raises ----------------------------------------

json_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=12)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
entry_keys = st.sampled_from(["type", "command", "args", "env", "url", "headers", "cwd", "disabled", "x"])
mcp_entries = st.dictionaries(
    entry_keys,
    st.one_of(
        json_values,
        st.sampled_from(["stdio", "http", "sse", "streamable-http", "https://h/mcp", "${A:-b}", "${UNSET}"]),
    ),
    max_size=6,
)


@given(
    doc=st.one_of(
        json_values,
        st.fixed_dictionaries({"mcpServers": st.dictionaries(st.text(max_size=6), mcp_entries, max_size=4)}),
    )
)
def test_mcp_json_never_raises_and_yields_valid_configs(doc: Any) -> None:
    defs, errors = parse_mcp_json(doc, file="f", env={"A": "a"})
    for d in defs:
        assert isinstance(d.config, McpServerConfig)
        assert d.config.type in ("stdio", "sse", "streamable_http")
    for e in errors:
        assert str(e).startswith("f")


philont_entries = st.fixed_dictionaries(
    {"name": st.one_of(st.text(max_size=6), json_values)},
    optional={
        "transport": st.one_of(
            json_values, st.dictionaries(entry_keys | st.just("transport"), json_values, max_size=5)
        ),
        "timeout": json_values,
        "toolPrefix": json_values,
        "domain": st.one_of(json_values, st.sampled_from(["local", "network", "system"])),
        "capability": st.one_of(json_values, st.sampled_from(["read", "write", "execute"])),
    },
)


@given(
    doc=st.one_of(
        json_values,
        st.lists(philont_entries, max_size=4),
        st.fixed_dictionaries({"servers": st.lists(philont_entries, max_size=4)}),
    )
)
def test_philont_json_never_raises_and_yields_valid_configs(doc: Any) -> None:
    defs, errors = parse_philont_mcp_json(doc, file="p", env={})
    for d in defs:
        assert isinstance(d.config, McpServerConfig) and d.name
    assert all(str(e).startswith("p") for e in errors)


def test_mcp_json_rejects_unknown_types_and_empty_names() -> None:
    servers, errors = mcp_json({"w": {"type": "websocket", "url": "ws://h"}, " ": {"command": "x"}})
    assert servers == {}
    assert any("mcpServers.w.type" in e and "'websocket'" in e for e in errors)
    assert any("non-empty name" in e for e in errors)
