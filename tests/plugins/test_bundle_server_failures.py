"""A trusted bundle's server that cannot be defined is a failed server, never a silent loss."""

from __future__ import annotations

import json

from kairox_testing import KairoxHarness


def _bundle(harness: KairoxHarness) -> None:
    root = harness.workspace / ".kairox" / "plugins" / "b"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "b"}))
    servers = {"s": {"command": "some-server", "args": ["--key", "${KAIROX_TEST_UNSET_VAR}"]}}
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


def test_an_unset_variable_in_a_trusted_bundle_server_is_that_servers_failure(kairox_harness: KairoxHarness) -> None:
    _bundle(kairox_harness)
    kairox_harness.env.pop("KAIROX_TEST_UNSET_VAR", None)
    assert kairox_harness.trust(load_entrypoints=True) == ["bundle:.kairox/plugins/b"]
    result = kairox_harness.cli("status", "--json", load_entrypoints=True)
    data = json.loads(result.stdout)
    servers = {s["name"]: s for s in data["servers"]}
    assert servers["b:s"]["state"] == "failed"
    assert "KAIROX_TEST_UNSET_VAR is not set" in servers["b:s"]["detail"]
    assert "mcpServers.s.args[1]" in servers["b:s"]["detail"]  # the field
    assert ".mcp.json" in servers["b:s"]["detail"]  # the file
    assert "1 failed: mcp_server/s" in servers["b"]["detail"]
    assert data["ok"] is False
    call = kairox_harness.cli("tools", "call", "b.s.anything", load_entrypoints=True)
    assert call.exit_code == 1 and "KAIROX_TEST_UNSET_VAR is not set" in call.stderr  # not "no tool named"
