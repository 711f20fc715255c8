"""What a Claude-format ``PreToolUse`` hook answers, and whether kairox honours it."""

from __future__ import annotations

import json
import shlex

from review38_lab import Lab


def _user_claude_guard(lab: Lab, command: str) -> None:
    """The user's own Claude Code plugin in ``~/.kairox/plugins/cg`` with one PreToolUse hook."""
    bundle = lab.home / ".kairox/plugins/cg"
    (bundle / ".claude-plugin").mkdir(parents=True)
    (bundle / ".claude-plugin/plugin.json").write_text(json.dumps({"name": "cg"}))
    (bundle / "hooks").mkdir()
    hooks = {"hooks": {"PreToolUse": [{"matcher": ".*", "hooks": [{"type": "command", "command": command}]}]}}
    (bundle / "hooks/hooks.json").write_text(json.dumps(hooks))


def test_a_permission_decision_ask_is_not_an_allow(lab: Lab) -> None:
    """[medium] ``permissionDecision: "ask"`` (Claude Code: ask the user first) is ignored:
    the write runs without anyone being asked (no approver here, so it should be refused)."""
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": "writes need a look",
        }
    }
    _user_claude_guard(lab, "echo " + shlex.quote(json.dumps(answer)))

    result = lab.run("tools", "call", "fs.write", "--args", json.dumps({"path": "o.txt", "content": "x"}))

    assert not (lab.ws / "o.txt").exists(), result.stdout + result.stderr


def test_a_block_answer_followed_by_a_log_line_blocks(lab: Lab) -> None:
    """[low] A guard that prints its block answer and then a line of log (``done``) is
    "nonsense on stdout": the call goes on as if the guard had said nothing."""
    _user_claude_guard(lab, 'echo \'{"decision": "block", "reason": "guard says no"}\'; echo done')

    result = lab.run("tools", "call", "fs.write", "--args", json.dumps({"path": "o.txt", "content": "x"}))

    assert not (lab.ws / "o.txt").exists(), result.stdout + result.stderr


def test_a_guard_bundle_that_fails_to_load_is_not_silently_absent(lab: Lab) -> None:
    """[medium] The user's guard bundle has a Claude Code matcher with a lookahead
    (``(?!fs\\.read$).*``: JavaScript runs it, RE2 refuses it). The bundle fails to load
    (``status`` says so), and ``tools call fs.write`` writes, exit 0, saying nothing."""
    bundle = lab.home / ".kairox/plugins/cg"
    (bundle / ".claude-plugin").mkdir(parents=True)
    (bundle / ".claude-plugin/plugin.json").write_text(json.dumps({"name": "cg"}))
    (bundle / "hooks").mkdir()
    block = 'echo \'{"decision": "block", "reason": "only reads allowed"}\''
    entry = {"matcher": "(?!fs\\.read$).*", "hooks": [{"type": "command", "command": block}]}
    (bundle / "hooks/hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [entry]}}))

    result = lab.run("tools", "call", "fs.write", "--args", json.dumps({"path": "o.txt", "content": "x"}))

    assert not (lab.ws / "o.txt").exists() or "cg" in result.stderr, (result.returncode, result.stderr)
