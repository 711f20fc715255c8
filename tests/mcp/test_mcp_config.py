"""The [mcp_servers.NAME] entry: fields, aliases, validation, headers, redaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_helpers import open_runtime

from kairox._convert import structure
from kairox._types import Capability, Domain
from kairox.errors import ConfigError
from kairox_mcp.config import (
    DEFAULT_STARTUP_TIMEOUT,
    DEFAULT_TOOL_TIMEOUT,
    McpServerConfig,
    normalize_transport,
    redact_config,
    redact_url,
)


def make(**fields: Any) -> McpServerConfig:
    return structure(fields, McpServerConfig, path="mcp_servers.s")


def errors_of(fields: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        structure(fields, McpServerConfig, path="mcp_servers.s", file="kairox.toml")
    return [str(e) for e in info.value.errors]


def test_every_field_in_both_spellings_structures() -> None:
    cfg = make(
        command="npx",
        args=["-y", "pkg"],
        env={"A": "1", "B": ""},
        env_vars=["HOME"],
        cwd="sub",
        inherit_env=True,
        startup_timeout_sec=12,
        tool_timeout_sec=7.5,
        enabled=False,
        required=True,
        enabled_tools=["a"],
        disabled_tools=["b"],
        tool_prefix="gh",
        domain="network",
        capability="read",
        max_restarts=1,
        restart_backoff=0.25,
    )
    assert cfg.type == "stdio"
    assert cfg.startup_timeout_s == 12.0
    assert cfg.tool_timeout_s == 7.5
    assert cfg.domain is Domain.NETWORK and cfg.capability is Capability.READ
    assert cfg.env_vars == ["HOME"] and cfg.inherit_env


def test_kairox_names_win_over_codex_names_and_defaults_apply() -> None:
    cfg = make(command="x", startup_timeout=3, startup_timeout_sec=9, tool_timeout=4, tool_timeout_sec=8)
    assert (cfg.startup_timeout_s, cfg.tool_timeout_s) == (3.0, 4.0)
    plain = make(command="x")
    assert (plain.startup_timeout_s, plain.tool_timeout_s) == (DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT)
    assert DEFAULT_STARTUP_TIMEOUT == 30.0


@pytest.mark.parametrize(
    ("given_type", "expected"),
    [
        ("stdio", "stdio"),
        ("sse", "sse"),
        ("http", "streamable_http"),
        ("streamable-http", "streamable_http"),
        ("streamable_http", "streamable_http"),
        ("streamableHttp", "streamable_http"),
        ("websocket", "websocket"),
    ],
)
def test_transport_aliases(given_type: str, expected: str) -> None:
    assert normalize_transport(given_type) == expected


def test_remote_entry_needs_url_and_stdio_entry_needs_command() -> None:
    assert any("stdio server needs `command`" in e for e in errors_of({}))
    assert any("needs `url`" in e for e in errors_of({"type": "sse"}))
    assert any("`command` is for stdio" in e for e in errors_of({"type": "http", "url": "http://h/", "command": "x"}))
    assert any("mcp_servers.s.url" in e and "scheme" in e for e in errors_of({"type": "sse", "url": "ftp://h/"}))
    cfg = make(type="http", url="https://example.com/mcp")
    assert cfg.type == "streamable_http"


def test_errors_name_the_file_and_the_field_path() -> None:
    errs = errors_of({"command": "x", "args": ["ok", 3]})
    assert errs == ["kairox.toml: mcp_servers.s.args[1]: expected a string, got 3"]
    errs = errors_of({"command": "x", "startup_timeout_secs": 3})
    assert "mcp_servers.s.startup_timeout_secs" in errs[0] and "did you mean 'startup_timeout_sec'" in errs[0]
    errs = errors_of({"command": "x", "tool_timeout": 0})
    assert "mcp_servers.s.tool_timeout" in errs[0] and "> 0" in errs[0]
    errs = errors_of({"command": "x", "domain": "cloud"})
    assert "mcp_servers.s.domain" in errs[0]


def test_headers_merge_env_headers_and_bearer_tokens() -> None:
    cfg = make(
        type="sse",
        url="https://h/sse",
        headers={"X-A": "1", "Authorization": "Basic abc"},
        http_headers={"X-B": "2"},
        env_http_headers={"X-Key": "KEY_VAR"},
        api_key_env="TOKEN_VAR",
    )
    headers = cfg.resolve_headers({"KEY_VAR": "k", "TOKEN_VAR": "t0ken"})
    assert headers == {"X-A": "1", "X-B": "2", "X-Key": "k", "Authorization": "Bearer t0ken"}
    codex = make(type="http", url="https://h/mcp", bearer_token_env_var="GH")
    assert codex.resolve_headers({"GH": "g"}) == {"Authorization": "Bearer g"}


def test_missing_secret_variable_is_named_but_no_value_leaks() -> None:
    cfg = make(type="http", url="https://h/mcp", api_key_env="MISSING", headers={"X": "secret-value"})
    with pytest.raises(ConfigError) as info:
        cfg.resolve_headers({})
    assert "MISSING" in str(info.value) and "secret-value" not in str(info.value)


def test_tool_filters() -> None:
    cfg = make(command="x", enabled_tools=["a", "b"], disabled_tools=["b"])
    assert [t for t in ("a", "b", "c") if cfg.tool_enabled(t)] == ["a"]
    assert make(command="x", disabled_tools=["c"]).tool_enabled("z")


def test_redaction_hides_env_headers_and_url_secrets() -> None:
    cfg = make(
        type="http",
        url="https://user:pw@h.example/mcp?api_key=SECRET1&page=2",
        headers={"Authorization": "Bearer SECRET2"},
        api_key_env="TOKEN_VAR",
    )
    shown = redact_config(cfg)
    text = repr(shown)
    assert "SECRET1" not in text and "SECRET2" not in text and ":pw@" not in text
    assert shown["api_key_env"] == "TOKEN_VAR"
    assert "page=2" in shown["url"]
    env_cfg = make(command="srv", env={"GITHUB_TOKEN": "ghp_x"}, env_vars=["HOME"])
    shown = redact_config(env_cfg)
    assert shown["env"] == {"GITHUB_TOKEN": "<redacted>"} and shown["env_vars"] == ["HOME"]
    assert "max_restarts" not in shown  # defaults are left out


_secret = st.text(alphabet=st.characters(min_codepoint=48, max_codepoint=122), min_size=8, max_size=30).filter(
    lambda s: s.isalnum()
)


@given(secret=_secret, name=st.sampled_from(["token", "api_key", "password", "sig", "apikey", "secret"]))
def test_secret_query_parameters_never_survive_redaction(secret: str, name: str) -> None:
    url = f"https://host.example/mcp?{name}={secret}&x=1"
    assert secret not in redact_url(url)


@given(secret=_secret, key=st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,20}", fullmatch=True))
def test_header_and_env_values_never_survive_redaction(secret: str, key: str) -> None:
    cfg = make(type="sse", url="https://h/sse", headers={key: secret})
    assert secret not in repr(redact_config(cfg))
    cfg = make(command="x", env={key: secret})
    assert secret not in repr(redact_config(cfg))


@pytest.mark.anyio
async def test_section_in_a_runtime_one_bad_entry_only_drops_itself(tmp_path: Path) -> None:
    servers = {
        "good": {"command": "srv", "args": ["--repo", "${REPO:-.}"]},
        "bad": {"command": "srv", "args": "not-a-list"},
    }
    async with open_runtime(tmp_path, servers, load_entrypoints=False, start=False) as rt:
        section = rt.config.section("mcp_servers")
        assert list(section) == ["good"]
        assert section["good"].args == ["--repo", "."]
        problems = [str(e) for e in rt.config.errors]
        assert any("mcp_servers.bad.args" in p and "expected a list" in p for p in problems)
        assert rt.config.source_of("mcp_servers", "good") == str(tmp_path / "kairox.toml")


def test_repr_never_shows_secrets() -> None:
    cfg = make(type="http", url="https://h/mcp?token=QSECRET", headers={"Authorization": "Bearer HSECRET"})
    text = repr(cfg)
    assert "QSECRET" not in text and "HSECRET" not in text and "streamable_http" in text
    assert "ESECRET" not in repr(make(command="x", env={"K": "ESECRET"}))


def test_oauth_token_endpoint_auth_method_and_client_metadata_url() -> None:
    oauth = {"client_id": "c", "token_endpoint_auth_method": "client_secret_post"}
    assert make(url="https://x/mcp", oauth=oauth).oauth_settings.token_endpoint_auth_method == "client_secret_post"
    assert make(url="https://x/mcp").oauth_settings.token_endpoint_auth_method is None  # from the AS metadata
    cimd = "https://kairox.example/client.json"
    assert make(url="https://x/mcp", oauth={"client_metadata_url": cimd}).oauth_settings.client_metadata_url == cimd
    bad = errors_of({"url": "https://x/mcp", "oauth": {"token_endpoint_auth_method": "client_secret_jwt"}})
    assert any("token_endpoint_auth_method" in e and "client_secret_jwt" in e for e in bad), bad
    for url in ("http://kairox.example/client.json", "https://kairox.example/", "https://kairox.example"):
        bad = errors_of({"url": "https://x/mcp", "oauth": {"client_metadata_url": url}})
        assert any("client_metadata_url" in e and "https URL with a path" in e for e in bad), (url, bad)
