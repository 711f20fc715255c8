"""The fast frontmatter YAML reader agrees with PyYAML on everything it accepts."""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kairox_skills import _simpleyaml
from kairox_skills._simpleyaml import Unsupported


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types, recursively (``True == 1`` is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def check(doc: str) -> bool:
    """Assert agreement; ``True`` when the fast path accepted ``doc``."""
    try:
        fast = _simpleyaml.load(doc)
    except Unsupported:
        return False
    expected = yaml.safe_load(doc)  # must not raise: the fast path accepted it
    assert same(fast, expected), (doc, fast, expected)
    return True


TRICKY = [
    "true", "True", "TRUE", "yes", "No", "on", "OFF", "y", "n", "null", "Null", "~", "0", "1", "-1", "+5",
    "012", "0x1F", "0o7", "1_000", "1:20", "1.5", ".5", ".inf", "-.inf", ".nan", "1e3", "2024-01-02",
    "2024-01-02 10:00:00", "<<", "=", "a: b", "a:b", "a #b", "a#b", "#x", "- x", "-x", "-", "[a, b]",
    "[a,b,]", "[]", "[ ]", "[a, [b]]", "[a, b", "{a: b}", "'q'", '"d"', "'it''s'", '"a\\"b"', "'a' b",
    '"a" # c', "|", "|-", "|+", "| x", ">", ">-", "&a x", "*a", "!tag x", "%x", "@x", "`x`", "?x", "x:",
    "ä ö", "emoji \U0001f600", "a\tb", "a  ", "  a", "a\\b", "C# and F#", "x, y", "b]c", "b{x", "'", '"',
    "''", '""', "[a, 'b']", "[1, 2]", "[true, x]", "[~]", "[a: b]", "[?]", "[a,,b]", "[,]",
]  # fmt: skip
KEYS = ["name", "description", "tools", "on", "yes", "null", "y", "a-b", "_x", "x1", "1a", "key x", "k:", "Off"]
CHARS = "ab Z09:#'\"-[]{},|>&*!%@`?\\\té\u00a0\u2028\x85\r\ufeff~."

scalars = st.one_of(st.sampled_from(TRICKY), st.text(alphabet=CHARS, min_size=1, max_size=12))
indents = st.sampled_from(["", "", " ", "  ", "  ", "   ", "    ", "\t"])


@st.composite
def lines(draw: st.DrawFn) -> list[str]:
    indent = draw(indents)
    kind = draw(st.integers(0, 8))
    key = draw(st.sampled_from(KEYS))
    if kind == 0:
        return [f"{indent}{key}: {draw(scalars)}"]
    if kind == 1:
        return [f"{indent}{key}:"]
    if kind == 2:
        return [f"{indent}- {draw(scalars)}"]
    if kind == 3:
        return [f"{indent}# {draw(scalars)}", draw(st.sampled_from(["", "  "]))]
    if kind == 4:
        return [f"{indent}{draw(scalars)}"]
    if kind == 5:
        header = draw(st.sampled_from(["|", "|-", "|+", ">", ">-", "| x", "|2"]))
        body_indent = indent + draw(st.sampled_from(["", " ", "  ", "    "]))
        body = draw(st.lists(st.one_of(scalars, st.just("")), max_size=4))
        return [f"{indent}{key}: {header}", *(f"{body_indent}{b}" if b else draw(indents) for b in body)]
    if kind == 6:
        return [f"{indent}{key}: [{', '.join(draw(st.lists(scalars, max_size=3)))}]"]
    if kind == 7:
        return [f"{indent}-"]
    return [f"{indent}{key}:  {draw(scalars)}  "]


@st.composite
def documents(draw: st.DrawFn) -> str:
    body = [line for group in draw(st.lists(lines(), max_size=8)) for line in group]
    sep = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    end = draw(st.sampled_from(["", sep]))
    return sep.join(body) + end


@given(documents())
def test_agrees_with_pyyaml_on_generated_documents(doc: str) -> None:
    check(doc)


SAFE_CHARS = "abz AZ09:#'\"-[]{},|>&*!%@`?\\é~."
words = st.one_of(
    st.sampled_from(TRICKY),
    st.text(alphabet=SAFE_CHARS, min_size=1, max_size=10),
    st.from_regex(r"[a-z][a-z ]{0,8}[a-z]", fullmatch=True),
)
subset_keys = st.sampled_from(["name", "description", "tools", "a-b", "_x", "x1"] * 4 + KEYS)


def _quoted(draw: st.DrawFn, text: str) -> str:
    style = draw(st.integers(0, 3))
    if style == 0:
        return "'" + text.replace("'", "''") + "'"
    if style == 1:
        return '"' + text + '"'
    return text


@st.composite
def block(draw: st.DrawFn, indent: int, depth: int) -> list[str]:
    """A block mapping at ``indent``, in the subset's shapes (with tricky scalars)."""
    out: list[str] = []
    pad = " " * indent
    for _ in range(draw(st.integers(1, 4))):
        key = draw(subset_keys)
        kind = draw(st.integers(0, 6 if depth < 2 else 4))
        if draw(st.integers(0, 5)) == 0:
            out.append(draw(st.sampled_from(["", " " * draw(st.integers(0, 6)), f"{pad}# {draw(words)}"])))
        if kind in (0, 1):
            out.append(f"{pad}{key}: {_quoted(draw, draw(words))}")
        elif kind == 2:
            items = draw(st.lists(words, max_size=3))
            out.append(f"{pad}{key}: [{', '.join(items)}]")
        elif kind == 3:
            header = draw(st.sampled_from(["|", "|-", ">", ">-"]))
            inner = " " * (indent + draw(st.integers(1, 3)))
            body = draw(st.lists(st.one_of(words, st.just("")), min_size=1, max_size=4))
            out.append(f"{pad}{key}: {header}")
            out.extend(f"{inner}{b}" if b else "" for b in body)
        elif kind == 4:
            out.append(f"{pad}{key}:")
            dash = " " * (indent + draw(st.integers(0, 2)))
            out.extend(f"{dash}- {_quoted(draw, w)}" for w in draw(st.lists(words, min_size=1, max_size=3)))
        else:
            out.append(f"{pad}{key}:")
            out.extend(draw(block(indent + draw(st.integers(1, 4)), depth + 1)))
    return out


@given(block(0, 0), st.booleans())
def test_agrees_with_pyyaml_on_subset_shaped_documents(body: list[str], crlf: bool) -> None:
    sep = "\r\n" if crlf else "\n"
    check(sep.join(body) + sep)


@given(st.text(max_size=80))
def test_agrees_with_pyyaml_on_arbitrary_text(doc: str) -> None:
    check(doc)


simple_value = st.one_of(
    st.text(alphabet="abcdefghij XYZ-_.,()/0123456789", min_size=1, max_size=20).filter(
        lambda s: s.strip() == s and not s.startswith("-")
    ),
    st.booleans(),
    st.none(),
    st.integers(-1000, 1000),
)
simple_doc = st.dictionaries(
    st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True),
    st.one_of(
        simple_value,
        st.lists(simple_value, max_size=4),
        st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), simple_value, max_size=3),
        st.text(alphabet="abc xyz\n", max_size=40),
    ),
    max_size=6,
)


@given(simple_doc, st.booleans())
def test_agrees_on_what_pyyaml_dumps(data: dict[str, Any], flow: bool) -> None:
    doc = yaml.safe_dump(data, sort_keys=False, default_flow_style=None if flow else False, allow_unicode=True)
    check(doc)


FRONTMATTER = """\
name: pr-review
description: Review a pull request against the style guide
scope: workspace
keywords: [review, pull request, pr]
tools:
  - fs.read
  - search.grep
model: claude-sonnet
license: MIT
arguments:
  base:
    type: string
    default: main
  strict:
    type: boolean
    required: false
  count:
    type: integer
    default: 3
metadata:
  short-description: 'Review: quickly'
  owner: "team a"
allowed-tools: Bash(git log:*) Read
notes: |
  line one

  line three
summary: |-
  kept
  without a final break
"""


def test_typical_frontmatter_takes_the_fast_path() -> None:
    assert check(FRONTMATTER)
    assert _simpleyaml.load(FRONTMATTER)["arguments"]["strict"] == {"type": "boolean", "required": False}


@pytest.mark.parametrize(
    "doc",
    [
        "a: b\n  continued\n",  # multi-line plain scalar
        "a: >\n  folded\n\n  with a blank line\n",
        "a: >\n  x\n    more indented\n",
        "a: &x 1\nb: *x\n",
        "a: {b: c}\n",
        "a: 1.5\n",
        "a: 2024-01-01\n",
        "a:\n- b: c\n",
        "a: 'multi\n  line'\n",
        'a: "esc\\n"\n',
        "a:\tb\n",
        "? complex\n: key\n",
        "description: Use when: bad\n",
    ],
)
def test_outside_the_subset_is_unsupported(doc: str) -> None:
    with pytest.raises(Unsupported):
        _simpleyaml.load(doc)


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("", None),
        ("# only a comment\n", None),
        ("a: yes\nb: Off\nc: ~\nd: -3\n", {"a": True, "b": False, "c": None, "d": -3}),
        ("a: |\n  x\n\n  y\n\n", {"a": "x\n\ny\n"}),
        ("a: |\nb: 1\n", {"a": "", "b": 1}),
        ("a: |\n  x", {"a": "x"}),
        ("tools:\n- a\n- 'b c'\nname: n\n", {"tools": ["a", "b c"], "name": "n"}),
        ("a: [x, y, ]\n", {"a": ["x", "y"]}),
        ("a: >\n  x \n  y\nb: >-\n  z\n  w\n", {"a": "x  y\n", "b": "z w"}),
        ("a: 'it''s'\n", {"a": "it's"}),
        ("a: C# is fine\r\nb: x\r\n", {"a": "C# is fine", "b": "x"}),
        ("a:\n  b:\n    c: d\n  e: f\n", {"a": {"b": {"c": "d"}, "e": "f"}}),
    ],
)
def test_examples(doc: str, expected: Any) -> None:
    assert same(_simpleyaml.load(doc), expected)
    assert same(yaml.safe_load(doc), expected)
