"""A source file as a peer sees it: LSP line splitting (DAP's lines follow it) and decoding."""

from __future__ import annotations

from pathlib import Path

from hypothesis import assume, given
from hypothesis import strategies as st

from kairox_peer import line_at, read_text, split_lines

lines = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=30)


@given(st.lists(lines, min_size=1, max_size=6), st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=6, max_size=6))
def test_split_lines_follows_lsp(parts: list[str], breaks: list[str]) -> None:
    used = breaks[: len(parts) - 1]
    text = parts[0] + "".join(b + p for b, p in zip(used, parts[1:], strict=True))
    # a lone "\r" directly followed by "\n" is one "\r\n" break, not two
    assume(text.count("\r\n") == used.count("\r\n"))
    assert split_lines(text) == parts


def test_split_lines_keeps_form_feed_and_unicode_separators() -> None:
    assert split_lines("a\x0cb\u2028c\nd") == ["a\x0cb\u2028c", "d"]


def test_line_at() -> None:
    text = "x = 1\ny = '😀' + z\n"
    assert line_at(text, 1) == "y = '😀' + z"
    assert line_at(text, 2) == ""
    assert line_at(text, 5) is None
    assert line_at(text, -1) is None


def test_read_text_replaces_undecodable_bytes(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_bytes("é = 1\n".encode() + b"\xff\n")
    assert read_text(path) == "é = 1\n\ufffd\n"
