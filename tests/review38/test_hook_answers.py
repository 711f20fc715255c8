"""What a Claude-format ``PreToolUse`` hook answers, and whether kairox honours it."""

from __future__ import annotations

import json

from review38_lab import Lab


def _user_claude_guard(lab: Lab, command: str) -> None:
    """The user's own Claude Code plugin in ``~/.kairox/plugins/cg`` with one PreToolUse hook."""
    bundle = lab.home / ".kairox/plugins/cg"
    (bundle / ".claude-plugin").mkdir(parents=True)
    (bundle / ".claude-plugin/plugin.json").write_text(json.dumps({"name": "cg"}))
    (bundle / "hooks").mkdir()
    hooks = {"hooks": {"PreToolUse": [{"matcher": ".*", "hooks": [{"type": "command", "command": command}]}]}}
    (bundle / "hooks/hooks.json").write_text(json.dumps(hooks))


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
