"""A workspace ``allow`` rule that cannot apply is marked where rules are shown.

A workspace allow rule never applies to a tool whose capability is execute (an MCP server's
tools are execute unless its entry declares a capability), nor to one a rule of the user's
matches. Such a rule did nothing, silently: ``config show`` and ``status`` showed it as
applied. They now name each tool it does not apply to and why; the trust note prints a
rule's key as TOML reads it (``rules["git.git_status"]``, not ``rules.git.git_status``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from peers import fixture_server

from kairox_testing import KairoxHarness, trust_workspace

REPOSITORY = Path(__file__).resolve().parents[2]


def _harness(tmp_path: Path, toml: str) -> KairoxHarness:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (ws / "kairox.toml").write_text(toml, encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KAIROX_HOME": str(home)}
    trust_workspace(ws, home, env=env)
    return KairoxHarness(ws, home, env=env)


def _json(harness: KairoxHarness, *args: str) -> Any:
    result = harness.cli(*args, "--json", load_entrypoints=True)
    return json.loads(result.stdout)


def _server(capability: str = "") -> str:
    argv = fixture_server("well_behaved")
    extra = f'capability = "{capability}"\n' if capability else ""
    return f"[mcp_servers.wb]\ncommand = {json.dumps(argv[0])}\nargs = {json.dumps(argv[1:])}\n{extra}"


def test_an_allow_rule_for_an_execute_tool_is_marked(tmp_path: Path) -> None:
    harness = _harness(tmp_path, '[policy.rules]\n"wb.echo" = "allow"\n\n' + _server())

    listed = {row["id"]: row for row in _json(harness, "tools", "list")["tools"]}
    status = _json(harness, "status")
    shown = _json(harness, "config", "show")["sections"]["policy"]["rules"]

    assert listed["wb.echo"]["decision"] == "ask", "the rule does not apply"
    warnings = " ".join(status["rule_warnings"])
    assert 'policy.rules["wb.echo"] = "allow" does not apply to wb.echo (its capability is execute)' in warnings
    assert any('policy.rules["wb.echo"]' in line for line in status["config_not_applied"])
    # config show starts no server: it says what the rule depends on, and where to see more
    assert shown["note"].startswith('rules["wb.echo"]: a workspace allow rule applies only to a tool whose')
    assert "kairox status names each tool it does not apply to" in shown["note"], shown


def test_an_allow_rule_over_a_user_rule_or_a_builtin_execute_tool_is_marked(tmp_path: Path) -> None:
    harness = _harness(tmp_path, '[policy.rules]\n"fs.*" = "allow"\n"shell.*" = "allow"\n')
    (harness.home / "kairox.toml").write_text('[policy.rules]\n"fs.write" = "ask"\n', encoding="utf-8")

    status = _json(harness, "status")

    warnings = " ".join(status["rule_warnings"])
    assert 'fs.write (your rule "fs.write" = "ask" matches it)' in warnings, warnings
    assert "shell.exec (its capability is execute)" in warnings, warnings
    applies_to_none = " ".join(status["config_not_applied"])
    assert 'policy.rules["shell.*"]' in applies_to_none and 'policy.rules["fs.*"]' not in applies_to_none


def test_an_allow_rule_that_applies_is_not_marked(tmp_path: Path) -> None:
    harness = _harness(tmp_path, '[policy.rules]\n"wb.echo" = "allow"\n\n' + _server("read"))

    listed = {row["id"]: row for row in _json(harness, "tools", "list")["tools"]}
    status = _json(harness, "status")

    assert listed["wb.echo"]["decision"] == "allow"
    assert not status["rule_warnings"] and not status["config_not_applied"], status
    shown = harness.cli("config", "show", load_entrypoints=True).stdout
    assert '(note: rules["wb.echo"]: a workspace allow rule applies only to' in shown, shown


def test_the_trust_note_prints_a_rule_key_as_one_key(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (ws / "kairox.toml").write_text('[policy.rules]\n"git.git_status" = "allow"\n', encoding="utf-8")
    harness = KairoxHarness(ws, home, env={"PATH": "/usr/bin:/bin", "HOME": str(home), "KAIROX_HOME": str(home)})

    shown = harness.cli("trust", load_entrypoints=True).stdout

    assert 'note:     sets rules["git.git_status"] = "allow"' in shown, shown


@pytest.mark.skipif(shutil.which("mcp-server-git", path=str(Path(sys.executable).parent)) is None, reason="dev group")
def test_every_allow_rule_of_this_repository_applies(tmp_path: Path) -> None:
    """This repository's own ``kairox.toml`` (what a newcomer runs first) sets no workspace
    rule that ``status`` marks as not applying."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    shutil.copy(REPOSITORY / "kairox.toml", ws / "kairox.toml")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)  # mcp-server-git wants a repository
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home), "KAIROX_HOME": str(home)}
    trust_workspace(ws, home, env=env)

    status = _json(KairoxHarness(ws, home, env=env), "status")

    assert not [w for w in status["rule_warnings"] if "allow" in w], status["rule_warnings"]
    assert not [n for n in status["config_not_applied"] if "policy" in n], status["config_not_applied"]


def test_the_trust_prompt_says_what_of_a_policy_will_not_apply_even_trusted(tmp_path: Path) -> None:
    # the prompt lists approval and sandbox as "will not apply, trusted or not": a line such as
    # `sets approval = "never"` would read as though trust granted it
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (ws / "kairox.toml").write_text(
        '[policy]\napproval = "never"\nsandbox = "danger_full_access"\n[policy.rules]\n"fs.read" = "deny"\n"x.y" = "allow"\n',
        encoding="utf-8",
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KAIROX_HOME": str(home)}
    harness = KairoxHarness(ws, home, env=env)
    [item] = [i for i in _json(harness, "status")["trust"]["pending"] if i["key"].startswith("policy@")]
    never = [n for n in item["notes"] if n.startswith("will not apply, trusted or not")]
    assert any("approval" in n for n in never) and any("sandbox" in n for n in never), item["notes"]
    assert not any("fs.read" in n or "x.y" in n for n in never), item["notes"]  # these trust grants
