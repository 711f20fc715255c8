"""``kairox plugin ...``: list, inspect, install (through the policy engine), uninstall, enable/disable, trust."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from plugin_helpers import FIXTURES, copy_fixture, real, write_plugin

from kairox.ext import TrustStore
from kairox_manifests.trust import bundle_digest
from kairox_testing import KairoxHarness

NO_TEMP_ROOT = "[policy]\ninclude_temp_dir = false\n"


def user_dir(h: KairoxHarness) -> Path:
    return h.home / "plugins"


def listing(h: KairoxHarness) -> dict[str, dict[str, Any]]:
    result = h.cli("plugin", "list", "--json")
    assert result.exit_code == 0, result.output
    return {p["name"] + "@" + p["scope"]: p for p in json.loads(result.stdout)["plugins"]}


def test_list_shows_every_plugin_and_why_it_does_not_load(kairox_harness: KairoxHarness) -> None:
    copy_fixture("codex/release-notes", user_dir(kairox_harness) / "release-notes")
    copy_fixture("broken/bad-hooks", user_dir(kairox_harness) / "bad-hooks")
    copy_fixture("claude/code-review", kairox_harness.workspace / ".kairox" / "plugins" / "code-review")
    plugins = listing(kairox_harness)
    assert plugins["release-notes@user"]["state"] == "available"
    assert plugins["release-notes@user"]["format"] == "codex"
    assert plugins["bad-hooks@user"]["state"] == "failed"
    assert plugins["code-review@workspace"]["state"] == "untrusted"
    inventory = {(i["kind"], i["name"]) for i in plugins["code-review@workspace"]["inventory"]}
    assert ("mcp_server", "time") in inventory and ("skill", "review-diff") in inventory
    text = kairox_harness.cli("plugin", "list").stdout
    assert "release-notes" in text and "enabled" in text
    # the untrusted workspace bundle is listed with why it does not load and the command that changes that
    assert (
        "! workspace plugin code-review is untrusted: run `kairox trust " in text and "to trust the workspace" in text
    )
    assert plugins["code-review@workspace"]["reason"].startswith("workspace plugin code-review is untrusted: ")


def test_inspect_path_and_name(kairox_harness: KairoxHarness) -> None:
    result = kairox_harness.cli("plugin", "inspect", str(FIXTURES / "kairox" / "docs-helper"))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "docs-helper 2.0.0  (kairox, user)" in out
    assert "trust:         community (declared)" in out
    assert "sandboxPolicy=read_only" in out
    assert "requires node >=18" in out
    assert "[on ] hook/pre_turn.inject-context" in out
    copy_fixture("codex/release-notes", user_dir(kairox_harness) / "release-notes")
    data = json.loads(kairox_harness.cli("plugin", "inspect", "release-notes", "--json").stdout)
    assert data["format"] == "codex" and data["compatibility"]["compatible"] is True
    assert [i["name"] for i in data["inventory"]] == ["changelog", "notes"]


def test_inspect_broken_plugin_exits_1_with_file_and_path(kairox_harness: KairoxHarness) -> None:
    result = kairox_harness.cli("plugin", "inspect", str(FIXTURES / "broken" / "escape"), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    [problem] = data["problems"]
    assert problem["path"] == "skills" and problem["file"].endswith(".claude-plugin/plugin.json")
    assert "outside the plugin root" in problem["message"]


def test_install_outside_the_writable_roots_asks(kairox_harness: KairoxHarness) -> None:
    kairox_harness.write_config(NO_TEMP_ROOT, where="user")
    source = str(FIXTURES / "claude" / "code-review")
    refused = kairox_harness.cli("plugin", "install", source)
    assert refused.exit_code == 1
    assert "needs approval (writes outside the writable roots)" in refused.stderr
    assert not (user_dir(kairox_harness) / "code-review").exists()
    done = kairox_harness.cli("plugin", "install", source, "--yes")
    assert done.exit_code == 0, done.output
    installed = user_dir(kairox_harness) / "code-review"
    assert (installed / ".claude-plugin" / "plugin.json").is_file()
    assert (installed / "scripts" / "guard-bash.py").stat().st_mode & 0o111  # modes are kept
    assert listing(kairox_harness)["code-review@user"]["state"] == "available"
    again = kairox_harness.cli("plugin", "install", source, "--yes")
    assert again.exit_code == 1 and "--force" in again.stderr
    forced = kairox_harness.cli("plugin", "install", source, "--yes", "--force")
    assert forced.exit_code == 0 and "replaced code-review" in forced.stdout
    assert [p.name for p in user_dir(kairox_harness).iterdir()] == ["code-review"]  # no staging left


def test_install_into_the_workspace_is_allowed_and_trusted(kairox_harness: KairoxHarness) -> None:
    kairox_harness.write_config(NO_TEMP_ROOT, where="user")
    result = kairox_harness.cli("plugin", "install", str(FIXTURES / "kairox" / "docs-helper"), "--scope", "workspace")
    assert result.exit_code == 0, result.output
    dest = kairox_harness.workspace / ".kairox" / "plugins" / "docs-helper"
    assert dest.is_dir()
    # installing is the user's own act: the installed bundle (only it) is trusted as it is now
    record = TrustStore(kairox_harness.home).get(kairox_harness.workspace)
    assert record is not None and dict(record.items) == {"bundle:.kairox/plugins/docs-helper": bundle_digest(dest)}
    state = listing(kairox_harness)["docs-helper@workspace"]["state"]
    assert state in ("available", "incompatible")  # incompatible only where node is missing
    removed = kairox_harness.cli("plugin", "uninstall", "docs-helper", "--scope", "workspace", "--yes")
    assert removed.exit_code == 0, removed.output
    record = TrustStore(kairox_harness.home).get(kairox_harness.workspace)
    assert record is None or not record.items  # uninstalling forgets that trust


def test_install_refuses_what_is_not_a_plugin(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = kairox_harness.cli("plugin", "install", str(tmp_path / "empty"), "--yes")
    assert result.exit_code == 1 and "not a plugin" in result.stderr
    result = kairox_harness.cli("plugin", "install", str(FIXTURES / "broken" / "bad-hooks"), "--yes")
    assert result.exit_code == 1 and "hooks: expected a list" in result.stderr


def test_uninstall(kairox_harness: KairoxHarness) -> None:
    copy_fixture("codex/release-notes", user_dir(kairox_harness) / "release-notes")
    result = kairox_harness.cli("plugin", "uninstall", "release-notes", "--yes")
    assert result.exit_code == 0, result.output
    assert not (user_dir(kairox_harness) / "release-notes").exists()
    missing = kairox_harness.cli("plugin", "uninstall", "release-notes", "--yes")
    assert missing.exit_code == 1 and "no plugin 'release-notes' is installed" in missing.stderr


def test_enable_disable_plugin_and_contribution(kairox_harness: KairoxHarness) -> None:
    copy_fixture("claude/code-review", user_dir(kairox_harness) / "code-review")
    assert kairox_harness.cli("plugin", "disable", "code-review").exit_code == 0
    assert listing(kairox_harness)["code-review@user"]["state"] == "disabled"
    assert kairox_harness.cli("plugin", "enable", "code-review").exit_code == 0
    result = kairox_harness.cli("plugin", "disable", "code-review:time")
    assert result.exit_code == 0 and "disabled code-review:mcp_server/time" in result.stdout
    # a workspace's settings never change one of the user's own plugins: refused, and without effect
    refused = kairox_harness.cli("plugin", "disable", "code-review:skill/review-diff", "--scope", "workspace")
    assert refused.exit_code != 0 and "use --scope user" in refused.output
    plugin = listing(kairox_harness)["code-review@user"]
    assert {(i["kind"], i["name"]): i["enabled"] for i in plugin["inventory"]}[("skill", "review-diff")] is True
    result = kairox_harness.cli("plugin", "disable", "code-review:skill/review-diff")
    assert result.exit_code == 0
    plugin = listing(kairox_harness)["code-review@user"]
    flags = {(i["kind"], i["name"]): i["enabled"] for i in plugin["inventory"]}
    assert flags[("mcp_server", "time")] is False and flags[("skill", "review-diff")] is False
    assert flags[("skill", "security-audit")] is True
    unknown = kairox_harness.cli("plugin", "disable", "code-review:nothing")
    assert unknown.exit_code == 2 and "has no contribution 'nothing'" in unknown.output


def test_trust_a_workspace_plugin(kairox_harness: KairoxHarness) -> None:
    root = write_plugin(
        kairox_harness.workspace / ".kairox" / "plugins" / "w", {".kairox-plugin/plugin.json": {"name": "w"}}
    )
    assert listing(kairox_harness)["w@workspace"]["state"] == "untrusted"
    result = kairox_harness.cli("plugin", "trust", "w")
    assert result.exit_code == 0 and str(real(root)) in result.stdout
    assert listing(kairox_harness)["w@workspace"]["state"] == "available"
    assert kairox_harness.cli("plugin", "trust", "w", "--revoke").exit_code == 0
    assert listing(kairox_harness)["w@workspace"]["state"] == "untrusted"
