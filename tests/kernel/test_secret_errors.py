"""A config error about a secret value names the field but never echoes the value."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from kairox._convert import structure
from kairox.errors import ConfigError


@attrs.frozen
class Server:
    command: str = ""
    env: dict[str, str] = attrs.field(factory=dict)
    headers: dict[str, str] = attrs.field(factory=dict)
    api_key: str = ""
    api_key_env: str = ""
    retries: int = 0


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ({"env": {"GITHUB_TOKEN": 1234567}}, "mcp_servers.x.env.GITHUB_TOKEN"),
        ({"headers": {"Authorization": 987654321}}, "mcp_servers.x.headers.Authorization"),
        ({"api_key": 55555}, "mcp_servers.x.api_key"),
    ],
)
def test_secret_values_are_not_echoed(doc: dict[str, object], path: str) -> None:
    with pytest.raises(ConfigError) as info:
        structure(doc, Server, path="mcp_servers.x", file="kairox.toml")
    message = str(info.value)
    assert message.startswith(f"kairox.toml: {path}: expected a string")
    assert "not shown: secret" in message
    for secret in ("1234567", "987654321", "55555"):
        assert secret not in message


def test_ordinary_values_are_still_shown(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"mcp_servers\.x\.retries: expected an integer, got 'three'"):
        structure({"retries": "three"}, Server, path="mcp_servers.x", file="kairox.toml")
    with pytest.raises(ConfigError, match=r"api_key_env: expected a string, got 12"):
        structure({"api_key_env": 12}, Server, path="mcp_servers.x", file="kairox.toml")
