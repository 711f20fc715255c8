"""``protocol``: the per-server choice of how a connection settles its revision (a config
field, so outside input: property-tested)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox._convert import structure
from kairox.errors import ConfigError
from kairox_mcp.config import PROTOCOLS, McpServerConfig
from kairox_mcp.lifecycle import protocol_mode


def errors_of(fields: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        structure(fields, McpServerConfig, path="mcp_servers.s", file="kairox.toml")
    return [str(e) for e in info.value.errors]


def test_auto_is_the_default_and_both_values_structure() -> None:
    assert structure({"command": "x"}, McpServerConfig, path="mcp_servers.s").protocol == "auto"
    for value in PROTOCOLS:
        config: McpServerConfig = structure({"command": "x", "protocol": value}, McpServerConfig, path="mcp_servers.s")
        assert config.protocol == value


def test_the_mode_follows_the_entry_and_sse_always_uses_the_handshake() -> None:
    def mode(**fields: Any) -> str:
        return protocol_mode(structure(fields, McpServerConfig, path="mcp_servers.s"))

    assert mode(command="x") == "auto"
    assert mode(command="x", protocol="2025-11-25") == "2025-11-25"
    assert mode(type="streamable_http", url="http://127.0.0.1:1/mcp") == "auto"
    assert mode(type="sse", url="http://127.0.0.1:1/sse") == "2025-11-25"
    assert mode(type="sse", url="http://127.0.0.1:1/sse", protocol="auto") == "2025-11-25"


@given(value=st.text(max_size=30).filter(lambda v: v not in PROTOCOLS))
def test_any_other_string_is_refused_naming_the_file_and_the_field(value: str) -> None:
    errs = errors_of({"command": "x", "protocol": value})
    assert len(errs) == 1
    assert errs[0].startswith("kairox.toml: mcp_servers.s.protocol: ")
    assert 'expected "auto" or "2025-11-25"' in errs[0]


@given(value=st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), st.lists(st.text(max_size=5))))
def test_a_value_that_is_not_a_string_is_refused_naming_the_field(value: Any) -> None:
    errs = errors_of({"command": "x", "protocol": value})
    assert len(errs) == 1 and "mcp_servers.s.protocol" in errs[0]


@pytest.mark.parametrize("value", ["2026-07-28", "2025-06-18", "legacy", "Auto", " auto", "2025-11-25 "])
def test_near_misses_are_refused(value: str) -> None:
    assert "mcp_servers.s.protocol" in errors_of({"command": "x", "protocol": value})[0]
