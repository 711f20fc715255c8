"""kairox.files.glob_match: fnmatch's answers, in time linear in the pattern."""

from __future__ import annotations

import fnmatch
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairox.files import glob_match

# the characters fnmatch reads specially, and a few it does not (a newline, a non-ASCII letter)
_PATTERN_CHARS = "ab.z*?[]!-^\\&|~\né"
_NAME_CHARS = "ab.z[]!-^\\~\né"


def fnmatch_answers(name: str, pattern: str) -> tuple[bool, bool]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # re's "possible nested set" on `[[`
        return fnmatch.fnmatchcase(name, pattern), fnmatch.fnmatch(name, pattern)


@settings(max_examples=3000)
@given(st.text(st.sampled_from(_PATTERN_CHARS), max_size=14), st.text(st.sampled_from(_NAME_CHARS), max_size=8))
def test_a_glob_matches_what_fnmatch_matches(pattern: str, name: str) -> None:
    assert (glob_match(name, pattern),) * 2 == fnmatch_answers(name, pattern)


@settings(max_examples=3000)
@given(
    st.text(st.sampled_from("abyz!-^]\\[~"), max_size=10),
    st.text(st.sampled_from("ab*?"), max_size=3),
    st.sampled_from("abyz!-^]\\[~0#"),
)
def test_a_set_holds_what_fnmatch_reads_in_it(body: str, tail: str, char: str) -> None:
    # ranges, reversed ranges (dropped with their ends), `!`, leading `]` and `-`, and their mixes
    pattern = f"[{body}]{tail}"
    name = char + tail.replace("*", "").replace("?", "a")
    assert (glob_match(name, pattern),) * 2 == fnmatch_answers(name, pattern)


@settings(max_examples=1000)
@given(
    st.lists(st.sampled_from(["*", "?", "src", "/", ".py", "**/", "[!.]", "[a-c]", "test_"]), max_size=6).map("".join),
    st.lists(st.sampled_from(["src", "/", "a", "b.py", "test_", ".", "pkg"]), max_size=6).map("".join),
)
def test_ordinary_globs_match_what_fnmatch_matches(pattern: str, name: str) -> None:
    assert (glob_match(name, pattern),) * 2 == fnmatch_answers(name, pattern)


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("*.py", "main.py", True),
        ("*.py", "main.pyc", False),
        ("mcp.*", "mcp.search", True),
        ("Mcp.*", "mcp.search", False),  # case-sensitive
        ("[!.]*", ".hidden", False),
        ("[z-a]", "a", False),  # an empty range matches nothing
        ("[z-a!x]", "y", True),  # fnmatch's quirk: what a dropped range leaves may start with `!`
        ("[", "[", True),
        ("a[b", "a[b", True),
        ("[]]", "]", True),
        ("*\n*", "a\nb", True),
    ],
)
def test_examples(pattern: str, name: str, expected: bool) -> None:
    assert glob_match(name, pattern) is expected
    assert fnmatch_answers(name, pattern) == (expected, expected)


@pytest.mark.timeout(10)
def test_a_pattern_of_unclosed_brackets_is_read_once() -> None:
    # fnmatch.translate scans to the pattern's end for each `[` with no `]` after it: 8.7 s at
    # 16,000 characters, minutes at 64 KB
    opens = "[" * 65_536
    assert glob_match(opens, opens)
    assert not glob_match("x", opens)
    assert glob_match("a" + opens[:-1], "?" + opens[:-1] + "*")
    assert glob_match("b" + opens, "[]b]" + opens)


@pytest.mark.timeout(10)
def test_sets_of_wide_ranges_cost_one_pass() -> None:
    # re's compiler fills a table entry for each code point a range spans: seconds at 1 KB
    wide = "[" + "".join(chr(0x100 + i) + "-" + chr(0xFFF0 - i) for i in range(20_000)) + "]"
    assert glob_match("\u0500", wide)
    assert not glob_match("x", wide)
