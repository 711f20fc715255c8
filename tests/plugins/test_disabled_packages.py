"""``[plugins] disabled`` names bundles; a Python plugin package there is an error (issue 16, item 4).

Before, ``disabled = ["mcp"]`` was accepted silently and kairox-mcp still loaded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kairox_testing import KairoxHarness


@pytest.fixture
def harness(tmp_path: Path) -> KairoxHarness:
    (tmp_path / "ws").mkdir()
    return KairoxHarness(tmp_path / "ws", tmp_path / "home")


@pytest.mark.parametrize("name", ["mcp", "kairox-mcp", "kairox_MCP"])
def test_a_package_name_in_plugins_disabled_is_an_error_pointing_to_the_variable(
    harness: KairoxHarness, name: str
) -> None:
    config = harness.write_config(f'[plugins]\ndisabled = ["some-bundle", "{name}"]\n', where="user")
    result = harness.cli("status", load_entrypoints=True)
    assert f"{config}: plugins.disabled[1]: '{name}' is a Python plugin package" in result.stdout, result.stdout
    assert f"KAIROX_DISABLE_PLUGINS={name}" in result.stdout
    assert "plugins.disabled[0]" not in result.stdout  # a bundle name (found or not) is fine


def test_a_bundle_with_a_package_s_name_is_disabled_without_complaint(harness: KairoxHarness) -> None:
    bundle = harness.home / "plugins" / "mcp" / ".kairox-plugin"
    bundle.mkdir(parents=True)
    (bundle / "plugin.json").write_text(json.dumps({"name": "mcp", "version": "1.0.0"}))
    harness.write_config('[plugins]\ndisabled = ["mcp"]\n', where="user")
    result = harness.cli("status", load_entrypoints=True)
    assert "Python plugin package" not in result.stdout
    listed = json.loads(harness.cli("plugin", "list", "--json", load_entrypoints=True).stdout)
    assert [p["state"] for p in listed["plugins"] if p["name"] == "mcp"] == ["disabled"]
