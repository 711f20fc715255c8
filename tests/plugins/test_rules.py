"""Claude permission rules as a hook's `if`: the parser and the matcher, by example and by property.

The matcher runs in time linear in the text (a command or path from a tool call, a rule
from a bundle): the rule's globs are matched by a scan, not by a regular expression that
backtracks. The regular expressions they replaced are kept in ``tests/old_patterns.py`` as the oracle the scan
must agree with on ordinary rules and texts; on the adversarial ones (a rule with a few
stars against a long text that does not match) they took seconds to hours.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from old_patterns import old_command_matches, old_glob, old_path_matches

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


# -- linear time, and the same answers as the regular expressions it replaced ------------------


@settings(max_examples=500)
@given(spec=st.text("ab *:", max_size=10), command=st.text("ab \n\t", max_size=14))
def test_command_matching_agrees_with_the_regex_it_replaced(spec: str, command: str) -> None:
    assert command_matches(spec, command) == old_command_matches(spec, command)


@settings(max_examples=500)
@given(pattern=st.text("ab*.", max_size=8), names=st.lists(st.text("ab.*\n", max_size=10), min_size=1, max_size=3))
def test_tool_and_argument_globs_agree_with_the_regex_they_replaced(pattern: str, names: list[str]) -> None:
    if not pattern:
        return
    rule = Rule(pattern, "b*a*")
    assert rule.matches_tool(names) == any(old_glob(pattern).fullmatch(n) for n in names if n)
    for name in names:
        assert Rule("Other", pattern).matches(("Other",), {"query": name}) == bool(old_glob(pattern).fullmatch(name))


@settings(max_examples=1000)
@given(spec=st.text("ab/*?.~", max_size=12), value=st.text("ab/.", max_size=14))
def test_path_matching_agrees_with_the_regex_it_replaced(spec: str, value: str) -> None:
    # a path written with a leading '//' is the next test's: the old code let it slip past
    assume(not os.path.normpath(value or ".").startswith("//"))
    got = path_matches(spec, value, cwd="/w", project="/w", home="/h")
    assert got == old_path_matches(spec, value, cwd="/w", home="/h")


@pytest.mark.parametrize("value", ["//etc/passwd", "//etc//passwd", "///etc/passwd", "//etc/../etc/passwd"])
def test_a_path_with_a_doubled_leading_slash_meets_the_rules_for_the_same_file(value: str) -> None:
    # Linux reads '//etc/passwd' as '/etc/passwd'; pathlib kept '//' as a root of its own, and a
    # deny rule for '//etc/**' did not match the path a tool was then asked to read
    assert path_matches("//etc/**", value, cwd="/w", project="/w", home="/h")
    assert path_matches("passwd", value, cwd="/", project="/w", home="/h")


@pytest.mark.timeout(10)
def test_a_command_rule_with_stars_is_linear_in_a_long_command() -> None:
    # the old `a.*a.*a.*b` took ~7 s at 4 KB and grows as n**3: 64 KB is hours for it
    command = "a" * 64_000
    assert not command_matches("a*a*a*b", command)
    assert not command_matches("*a*a*a*a*a*a*b *", command)
    assert command_matches("*a*a*a*a*a*a *", command + " b")
    assert not parse_rule("Other(*a*a*a*b)").matches(("Other",), {"query": command})
    assert not parse_rule("*a*a*a*b").matches_tool([command])


@pytest.mark.timeout(10)
def test_a_path_rule_with_stars_is_linear_in_a_long_path() -> None:
    # every prefix ending at a '/' was matched again by a regex that backtracks (**/ and *):
    # a deep path of 256 KB against a rule with a few stars took hours
    deep = "/w/" + "a/" * 128_000 + "a"
    assert not path_matches("**/a*a*a*b", deep, cwd="/w", project="/w", home="/h")
    assert not path_matches("/**a**a**a**b", deep, cwd="/w", project="/w", home="/h")
    assert path_matches("/**/a/**/a", deep, cwd="/w", project="/w", home="/h")
    flat = "/w/" + "a" * 256_000
    assert not path_matches("*a*a*a*b", flat, cwd="/w", project="/w", home="/h")
    # a rule of the longest kind: 4,000 characters of stars and '/' (runs of stars fold)
    assert path_matches("/" + "**/*" * 1000 + "a", deep, cwd="/w", project="/w", home="/h")
