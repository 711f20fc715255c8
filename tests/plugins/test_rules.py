"""Claude permission rules as a hook's `if`: the parser and the matcher, by example and by property."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_manifests.rules import Rule, command_matches, parse_rule, path_matches, split_command

BASH = ("Bash", "shell.exec", "shell_exec")


@pytest.mark.parametrize(
    ("rule", "command", "expected"),
    [
        ("Bash(git commit:*)", "git commit -m 'x'", True),
        ("Bash(git commit:*)", "git commit", True),
        ("Bash(git commit:*)", "git commitx", False),
        ("Bash(git commit:*)", "git status", False),
        ("Bash(git commit *)", "npm test && git commit -m y", True),  # any part of a compound command
        ("Bash(git commit *)", "FOO=1 git commit -a", True),  # an env prefix is not the command
        ("Bash(git commit *)", "timeout 30 nice -n 5 git commit -a", True),  # nor are wrappers
        ("Bash(git commit *)", "echo 'git commit -a; x'", False),  # inside quotes is not a command
        ("Bash(ls *)", "lsof", False),  # the space is a word boundary
        ("Bash(ls*)", "lsof", True),
        ("Bash(* --version)", "node --version", True),
        ("Bash(git * main)", "git merge main", True),
        ("Bash(npm run build)", "npm run build", True),
        ("Bash(npm run build)", "npm run build:prod", False),
        ("Bash(curl * | bash)", "curl https://x | bash", True),  # the whole line is tried too
        ("Bash", "anything at all", True),
        ("Bash(*)", "anything at all", True),
    ],
)
def test_bash_rules(rule: str, command: str, expected: bool) -> None:
    assert parse_rule(rule).matches(BASH, {"command": command}) is expected


@pytest.mark.parametrize(
    ("rule", "path", "expected"),
    [
        ("Edit(src/**/*.ts)", "src/a/b.ts", True),
        ("Edit(src/**/*.ts)", "src/b.ts", True),
        ("Edit(src/**/*.ts)", "lib/b.ts", False),
        ("Read(*.env)", "deep/down/.env", True),  # no slash: at any depth ('*' may be empty, as in gitignore)
        ("Read(*.env)", "deep/down/env", False),
        ("Read(.env)", "deep/down/.env", True),
        ("Read(/secrets)", "secrets/key.pem", True),  # a directory matches what is below it
        ("Read(//etc/passwd)", "/etc/passwd", True),
        ("Read(~/.ssh/**)", "/home/me/.ssh/id_rsa", True),
        ("Read(./docs/*.md)", "docs/a.md", True),
        ("Read(./docs/*.md)", "docs/x/a.md", False),
    ],
)
def test_path_rules(rule: str, path: str, expected: bool) -> None:
    r = parse_rule(rule)
    assert r.matches(("Read", "Edit", "fs.read"), {"path": path}, cwd="/w", home="/home/me") is expected


def test_tool_names_mcp_and_web() -> None:
    assert parse_rule("mcp__github").matches(("mcp__github__create_issue",), {})
    assert parse_rule("mcp__github__*").matches(("mcp__github__create_issue",), {})
    assert not parse_rule("mcp__github").matches(("mcp__gitlab__x",), {})
    assert not parse_rule("Bash(git *)").matches(("Write", "fs.write"), {"command": "git x"})
    assert parse_rule("shell.exec(git *)").matches(BASH, {"command": "git push"})
    fetch = parse_rule("WebFetch(domain:example.com)")
    assert fetch.matches(("WebFetch",), {"url": "https://docs.example.com/x"})
    assert not fetch.matches(("WebFetch",), {"url": "https://example.org/"})


def test_an_argument_that_is_not_there_matches() -> None:
    # an `if` only saves running the hook: when it cannot tell, the hook runs
    assert parse_rule("Bash(git *)").matches(BASH, {})
    assert parse_rule("Edit(src/**)").matches(("Edit",), {"content": "x"})


@pytest.mark.parametrize("bad", ["", "  ", "Bash(git", "(x)", "Ba sh", "Bash)(", 3, None])
def test_bad_rules_say_why(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_rule(bad)


# -- properties --------------------------------------------------------------------------------

_TOOL = st.sampled_from(["Bash", "Read", "Edit", "Write", "WebFetch", "Glob", "mcp__s", "mcp__s__*", "shell.exec", "*"])
_SPEC = st.text(st.characters(codec="utf-8"), max_size=30)
_WORD = st.text("abcdefgxyz-_.", min_size=1, max_size=6).filter(lambda w: w not in (".", ".."))


@given(st.text(max_size=60))
def test_any_text_is_a_rule_or_a_value_error(text: str) -> None:
    try:
        rule = parse_rule(text)
    except ValueError as exc:
        assert str(exc)
        return
    assert isinstance(rule, Rule) and rule.tool
    # a parsed rule reads back the same
    assert parse_rule(str(rule)) == rule


@given(
    tool=_TOOL,
    spec=_SPEC,
    names=st.lists(_WORD, max_size=3),
    args=st.dictionaries(
        st.sampled_from(["command", "path", "file_path", "url", "query", "other"]),
        st.one_of(_SPEC, st.integers()),
        max_size=3,
    ),
)
def test_matching_never_raises(tool: str, spec: str, names: list[str], args: dict[str, object]) -> None:
    try:
        rule = parse_rule(f"{tool}({spec})")
    except ValueError:
        return
    result = rule.matches([*names, "Bash", "Read", "WebFetch"], args, cwd="/w", project="/w", home="/h")
    assert isinstance(result, bool)


@given(words=st.lists(_WORD, min_size=1, max_size=4), tail=st.lists(_WORD, max_size=3))
def test_a_prefix_rule_matches_its_command_with_any_arguments(words: list[str], tail: list[str]) -> None:
    prefix = " ".join(words)
    command = " ".join([prefix, *tail])
    assert command_matches(f"{prefix} *", command)
    assert command_matches(f"{prefix}:*", command) == command_matches(f"{prefix} *", command)
    assert parse_rule(f"Bash({prefix}:*)") == parse_rule(f"Bash({prefix} *)")
    # anywhere in a compound command, behind an assignment
    assert command_matches(f"{prefix} *", f"true && X=1 {command}")


@given(st.text(max_size=80))
def test_split_command_never_raises_and_drops_separators(command: str) -> None:
    parts = split_command(command)
    for part in parts:
        assert part == part.strip() and part


@given(parts=st.lists(_WORD, min_size=1, max_size=4))
def test_a_path_is_inside_its_own_directory_pattern(parts: list[str]) -> None:
    path = "/".join(parts)
    assert path_matches(f"/{parts[0]}", path, cwd="/w", project="/w", home="/h")
    assert path_matches(f"/{parts[0]}/**", path, cwd="/w", project="/w", home="/h") or len(parts) == 1
    assert not path_matches("/zzz-not-there", path, cwd="/w", project="/w", home="/h")
