"""``kairox skills list|show|match|render|enable|disable`` and ``kairox status``."""

from __future__ import annotations

import json

import pytest
from skills_helpers import write

from kairox_testing import InMemoryToolProvider, KairoxHarness

PR_REVIEW = """---
name: pr-review
description: Review a pull request against the style guide
keywords: [review, pull request]
tools: [git.diff]
model: careful
arguments:
  pr:
    type: integer
    description: The PR number
    required: true
  base:
    type: string
    default: main
---
Review PR {{ pr }} against {{ base }}.
"""


@pytest.fixture
def harness(kairox_harness: KairoxHarness) -> KairoxHarness:
    home, ws = kairox_harness.home, kairox_harness.workspace
    write(home / "skills" / "pr-review.md", PR_REVIEW.replace("the style guide", "my habits"))
    write(home / "skills" / "notes" / "SKILL.md", "---\nname: notes\ndescription: Take meeting notes\n---\nN\n")
    write(ws / ".kairox" / "skills" / "pr-review.md", PR_REVIEW)
    write(ws / ".kairox" / "skills" / "bad.md", "---\nname: bad\n---\n")
    write(ws / ".kairox" / "skills" / "odd" / "SKILL.md", "---\nname: odd-name\ndescription: Odd: very\n---\n")
    return kairox_harness


def run(h: KairoxHarness, *args: str) -> tuple[int, str, str]:
    result = h.cli(*args)
    return result.exit_code, result.stdout, result.stderr


def test_list(harness: KairoxHarness) -> None:
    code, out, err = run(harness, "skills", "list")
    assert code == 0
    assert out.splitlines() == [
        "notes      user      kairox  on  Take meeting notes",
        "odd-name   workspace kairox  on  Odd: very (2 warnings)",
        "pr-review  workspace kairox  on  Review a pull request against the style guide (shadows user)",
    ]
    ws = harness.workspace / ".kairox" / "skills"
    lines = err.splitlines()
    assert lines[0] == (
        f"error: {ws / 'bad.md'}:1 [description]: the required field is missing (one line saying when to use the skill)"
    )
    assert lines[1].startswith(f"warning: {ws / 'odd' / 'SKILL.md'}:3 [description]: frontmatter is not valid YAML (")
    assert lines[1].endswith("); read it by quoting the value on line(s) 3")
    assert lines[2] == f"warning: {ws / 'odd' / 'SKILL.md'}:2 [name]: 'odd-name' does not match its folder 'odd'"
    assert len(lines) == 3


def test_list_by_scope_and_as_json(harness: KairoxHarness) -> None:
    code, out, _ = run(harness, "skills", "list", "--scope", "user")
    assert (code, out) == (0, "notes  user      kairox  on  Take meeting notes\n")
    code, out, _ = run(harness, "skills", "list", "--json")
    data = json.loads(out)
    assert [s["name"] for s in data["skills"]] == ["notes", "odd-name", "pr-review"]
    pr = data["skills"][2]
    assert pr["shadows"] == [
        {"scope": "user", "source": "user", "origin": "kairox", "path": str(harness.home / "skills" / "pr-review.md")}
    ]
    assert (pr["model"], pr["tools"], [a["name"] for a in pr["arguments"]]) == ("careful", ["git.diff"], ["pr", "base"])
    assert [e["field"] for e in data["errors"]] == ["description"]
    assert len(data["warnings"]) == 2


def test_show(harness: KairoxHarness) -> None:
    code, out, _ = run(harness, "skills", "show", "pr-review")
    assert code == 0
    head, body = out.split("---\n", 1)
    ws = harness.workspace / ".kairox" / "skills"
    assert head.splitlines() == [
        "name:        pr-review",
        "description: Review a pull request against the style guide",
        "scope:       workspace (source workspace, file, from kairox)",
        f"path:        {ws / 'pr-review.md'}",
        "state:       enabled",
        "keywords:    review, pull request",
        "tools:       git.diff",
        "model:       careful",
        "argument:    pr (integer, required) The PR number",
        'argument:    base (string, default "main")',
        f"shadows:     user      {harness.home / 'skills' / 'pr-review.md'}",
    ]
    assert body == "Review PR {{ pr }} against {{ base }}.\n"
    code, out, err = run(harness, "skills", "show", "pr-reveiw")
    assert code == 1 and "no skill named 'pr-reveiw'; did you mean 'pr-review'?" in err


def test_match(harness: KairoxHarness) -> None:
    code, out, _ = run(harness, "skills", "match", "review my pull request")
    assert code == 0
    assert out.splitlines()[0].split()[:2] == ["9.0", "pr-review"]
    code, out, _ = run(harness, "skills", "match", "review my pull request", "--json")
    (first,) = json.loads(out)["matches"]
    assert first["reasons"][:2] == ["name words 'review'", "keyword 'review'"]
    assert run(harness, "skills", "match", "bake bread")[1] == "(no matching skills)\n"


def test_render_checks_arguments_and_tools(harness: KairoxHarness) -> None:
    code, _, err = run(harness, "skills", "render", "pr-review", "--arg", "pr=7")
    assert code == 1
    assert "skill pr-review needs tools that are not registered: git.diff" in err
    code, out, err = run(harness, "skills", "render", "pr-review", "--arg", "pr=7", "--no-check-tools")
    assert (code, out, err) == (0, "Review PR 7 against main.\n", "(model: careful)\n")
    code, _, err = run(harness, "skills", "render", "pr-review", "--no-check-tools")
    assert code == 1 and "missing required argument(s): pr (integer: The PR number)" in err
    code, _, err = run(harness, "skills", "render", "pr-review", "--arg", "pr=x", "--no-check-tools")
    assert code == 1 and "argument 'pr' expects an integer, got 'x'" in err
    code, _, err = run(harness, "skills", "render", "pr-review", "--arg", "nonsense")
    assert code == 2 and "expected KEY=VALUE" in err


def test_render_with_the_tools_registered(harness: KairoxHarness) -> None:
    provider = InMemoryToolProvider("git")

    @provider.tool("git.diff")
    def diff() -> str:
        """A diff."""
        return ""

    harness.register(provider.plugin())
    code, out, _ = run(harness, "skills", "render", "pr-review", "--arg", "pr=7", "--arg", "base=dev", "--json")
    assert code == 0
    assert json.loads(out) == {
        "name": "pr-review",
        "model": "careful",
        "tools": ["git.diff"],
        "arguments": {"pr": 7, "base": "dev"},
        "text": "Review PR 7 against dev.\n",
    }


def test_enable_and_disable_persist_per_scope(harness: KairoxHarness) -> None:
    code, out, _ = run(harness, "skills", "disable", "notes", "--scope", "user")
    assert (code, out) == (0, f"notes: disabled in the user settings ({harness.home / 'settings.json'})\n")
    assert json.loads((harness.home / "settings.json").read_text()) == {"skills": {"enabled": {"notes": False}}}
    listed = run(harness, "skills", "list")[1]
    assert "notes      user      kairox  off Take meeting notes" in listed
    assert "skills:    2" in run(harness, "status")[1]

    code, out, err = run(harness, "skills", "enable", "notes")  # workspace by default, beats the user setting
    ws_settings = harness.workspace / ".kairox" / "settings.json"
    assert (code, out, err) == (0, f"notes: enabled in the workspace settings ({ws_settings})\n", "")
    assert "notes      user      kairox  on  Take meeting notes" in run(harness, "skills", "list")[1]

    code, _, err = run(harness, "skills", "disable", "notes", "--scope", "user")
    assert err == "note: the workspace settings keep it enabled\n"
    assert run(harness, "skills", "disable", "nope")[0] == 1


def test_status_counts_effective_skills(harness: KairoxHarness) -> None:
    code, out, _ = run(harness, "status")
    assert code == 1  # bad.md was skipped: status names it and is not ok
    assert "skills:    3" in out
    assert "bad.md" in out and "description" in out
    data = json.loads(run(harness, "status", "--json")[1])
    assert data["skills"] == 3
    assert data["ok"] is False
    assert [e for e in data["skill_errors"] if "bad.md" in e]
