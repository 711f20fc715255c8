"""``kairox plugin lint PATH``: a plugin directory checked against every format that claims
it, each problem with its format, file and field, as a plugin author runs it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from plugin_helpers import FIXTURES

from kairox_testing import KairoxHarness

BUNDLES = Path(__file__).resolve().parents[1] / "fixtures" / "bundles"


def lint(harness: KairoxHarness, path: Path) -> tuple[int, dict[str, Any]]:
    result = harness.cli("plugin", "lint", str(path), "--json", load_entrypoints=True)
    return result.exit_code, json.loads(result.stdout)


def claude_plugin(root: Path, manifest: dict[str, Any] | None = None) -> Path:
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest or {"name": root.name}))
    return root


def test_a_plugin_read_by_two_formats_is_clean(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    kit = shutil.copytree(BUNDLES / "multi" / "team-kit", tmp_path / "team-kit")
    code, report = lint(kairox_harness, kit)
    assert code == 0, report
    assert {"claude", "codex"} <= set(report["formats"])
    assert report["errors"] == 0


def test_each_broken_part_is_an_error_naming_its_file_and_field(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    plugin = claude_plugin(tmp_path / "kit")
    (plugin / "skills" / "good").mkdir(parents=True)
    (plugin / "skills" / "good" / "SKILL.md").write_text("---\nname: good\ndescription: d\n---\nbody\n")
    (plugin / "skills" / "broken").mkdir()
    (plugin / "skills" / "broken" / "SKILL.md").write_text("---\nname: broken\n---\nno description\n")
    (plugin / "agents").mkdir()
    (plugin / "agents" / "helper.md").write_text("---\nname: vendor:helper\ndescription: helps\n---\nprompt\n")
    (plugin / "agents" / "empty.md").write_text("---\nname: empty\n---\nno description\n")
    code, report = lint(kairox_harness, plugin)
    assert code == 1 and report["formats"] == ["claude"]
    by_file = {(f["file"], f["severity"]): f for f in report["findings"]}
    skill = by_file[(str(plugin / "skills" / "broken" / "SKILL.md"), "error")]
    assert skill["field"] == "description" and "missing" in skill["message"]
    agent = by_file[(str(plugin / "agents" / "empty.md"), "error")]
    assert agent["field"] == "description"
    renamed = by_file[(str(plugin / "agents" / "helper.md"), "warning")]
    assert "using 'helper'" in renamed["message"]
    assert report["errors"] == 2
    assert not any("good" in (f["file"] or "") for f in report["findings"])


def test_an_mcp_server_entry_of_the_wrong_shape_is_an_error(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    plugin = claude_plugin(tmp_path / "srv")
    (plugin / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"ok": {"command": "srv", "env": {"T": "${UNSET_HERE}"}}, "bad": {"command": 5}}})
    )
    code, report = lint(kairox_harness, plugin)
    assert code == 1
    [error] = [f for f in report["findings"] if f["severity"] == "error"]
    assert error["file"] == str(plugin / ".mcp.json") and error["field"] == "mcpServers.bad.command"
    assert error["format"] == "claude"
    # a variable this machine lacks is not the plugin's fault
    assert not any("UNSET_HERE" in f["message"] for f in report["findings"])


def test_a_philont_plugin_is_linted_by_its_own_format(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    plugin = shutil.copytree(FIXTURES / "philont" / "vault", tmp_path / "vault")
    code, report = lint(kairox_harness, plugin)
    assert (code, report["formats"], report["errors"]) == (0, ["philont"], 0)
    doc = json.loads((plugin / "plugin.json").read_text())
    doc["providesTools"].append("not a tool name")
    (plugin / "plugin.json").write_text(json.dumps(doc))
    code, report = lint(kairox_harness, plugin)
    assert code == 1
    [error] = report["findings"]
    assert (error["format"], error["field"]) == ("philont", "providesTools[3]")


def test_a_file_leading_outside_the_plugin_is_refused_not_read(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    secret = tmp_path / "outside.md"
    # a name lint would quote in its warning, were the file read
    secret.write_text("---\nname: kx-OUTSIDE:secret-0001\ndescription: d\n---\nbody\n")
    plugin = claude_plugin(tmp_path / "kit")
    (plugin / "skills" / "escape").mkdir(parents=True)
    (plugin / "skills" / "escape" / "SKILL.md").symlink_to(secret)
    result = kairox_harness.cli("plugin", "lint", str(plugin), load_entrypoints=True)
    assert result.exit_code == 1
    assert "kx-OUTSIDE" not in result.stdout + result.stderr
    assert str(plugin / "skills" / "escape") in result.stdout


def test_a_folder_no_format_recognises_is_not_a_plugin(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    code, report = lint(kairox_harness, tmp_path)
    assert code == 1 and report["formats"] == []
    assert "not a plugin" in report["findings"][0]["message"]
