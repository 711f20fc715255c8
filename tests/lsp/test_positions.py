"""Columns: characters <-> UTF-16 / UTF-8 / UTF-32 code units."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_lsp._positions import (
    column_of,
    from_server_character,
    negotiated_encoding,
    to_server_character,
)

# text without surrogates (they cannot appear in a decoded file)
lines = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=30)
encodings = st.sampled_from(["utf-8", "utf-16", "utf-32"])


def _units(text: str, encoding: str) -> int:
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    return len(text)


@given(lines, st.data(), encodings)
def test_to_server_counts_code_units(line: str, data: st.DataObject, encoding: str) -> None:
    column = data.draw(st.integers(0, len(line)))
    assert to_server_character(line, column, encoding) == _units(line[:column], encoding)  # type: ignore[arg-type]


@given(lines, st.data(), encodings)
def test_round_trip(line: str, data: st.DataObject, encoding: str) -> None:
    column = data.draw(st.integers(0, len(line)))
    units = to_server_character(line, column, encoding)  # type: ignore[arg-type]
    assert from_server_character(line, units, encoding) == column  # type: ignore[arg-type]


@given(lines, st.integers(-5, 200), encodings)
def test_from_server_is_clamped_and_never_splits_forward(line: str, character: int, encoding: str) -> None:
    column = from_server_character(line, character, encoding)  # type: ignore[arg-type]
    assert 0 <= column <= len(line)
    # the position found never lies after the server's position
    assert _units(line[:column], encoding) <= max(character, 0)


def test_astral_characters() -> None:
    line = 'PAIR = ("😀😀", Circle(3.0))'
    col = line.index("Circle")
    assert col == 14
    assert to_server_character(line, col, "utf-16") == 16
    assert to_server_character(line, col, "utf-8") == 20
    assert from_server_character(line, 16, "utf-16") == 14
    # inside a surrogate pair rounds down to the character
    assert from_server_character(line, 10, "utf-16") == 9


def test_column_of() -> None:
    text = "x = 1\ny = '😀' + z\n"
    assert column_of(text, 1, 12, "utf-16") == 12  # z: 11th char (0-based), after a surrogate pair
    assert column_of(None, 3, 4, "utf-16") == 5


@pytest.mark.parametrize(
    ("caps", "expected"),
    [(None, "utf-16"), ({}, "utf-16"), ({"positionEncoding": "utf-8"}, "utf-8"), ({"positionEncoding": "x"}, "utf-16")],
)
def test_negotiated_encoding(caps: dict[str, object] | None, expected: str) -> None:
    assert negotiated_encoding(caps) == expected
