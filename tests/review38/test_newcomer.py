"""What a newcomer sees on this repository's own workspace."""

from __future__ import annotations

import json
import shutil
import subprocess

from review38_lab import WORKTREE, Lab


def test_the_repository_allow_rule_applies_or_is_marked_not_applied(lab: Lab) -> None:
    """[low] The repository's ``kairox.toml`` has ``[policy.rules] "git.git_status" = "allow"``.
    Once trusted, the rule does nothing (``git.*`` is ``execute``: a workspace allow rule
    never applies to an execute tool), yet ``config show`` prints it with no mark and
    ``status --json`` has nothing in ``config_not_applied`` (docs/trust.md: "kairox config
    show marks each workspace value that was not applied, and why")."""
    shutil.copy(WORKTREE / "kairox.toml", lab.ws / "kairox.toml")
    subprocess.run(["git", "init", "-q", str(lab.ws)], check=True)  # mcp-server-git wants a repository
    assert lab.run("trust").returncode == 0

    listed = [line.split() for line in lab.run("tools", "list").stdout.splitlines()]
    decision = next(row[-1] for row in listed if row and row[0] == "git.git_status")
    status = json.loads(lab.run("status", "--json").stdout)
    not_applied = " ".join(status["config_not_applied"])

    assert decision == "allow" or "git.git_status" in not_applied, (decision, status["config_not_applied"])
