"""Where an OutputTail's lines end: at "\\n" or "\\r\\n", however the bytes arrive.

A "\\r" that ends one read may be the first half of "\\r\\n": it is held back
(one byte), so a line cut into ``max_line`` pieces is cut as it would be with
its newline in the same read. Hypothesis found the case below (a cut piece
kept the "\\r" and an empty line followed).
"""

from __future__ import annotations

import pytest

from kairox_process import OutputTail


def _fed(chunks: list[bytes], max_line: int, *, redact: bool = False) -> list[str]:
    tail = OutputTail(200, max_line, redact=redact)
    for chunk in chunks:
        tail.feed(chunk)
    return tail.lines()


@pytest.mark.parametrize("redact", [False, True])
@pytest.mark.parametrize(
    ("chunks", "max_line"),
    [
        ([b"\x00\r", b"\n"], 1),
        ([b"abcdefghij\r", b"\nnext\n"], 10),
        ([b"ab", b"\r", b"\n"], 2),
        ([b"abc\r\r", b"\n"], 3),
    ],
)
def test_a_crlf_split_between_reads_ends_the_line_as_in_one_read(
    chunks: list[bytes], max_line: int, redact: bool
) -> None:
    assert _fed(chunks, max_line, redact=redact) == _fed([b"".join(chunks)], max_line, redact=redact)


def test_one_carriage_return_ends_a_line_and_a_second_is_its_own() -> None:
    assert _fed([b"ok\r\n", b"two\r\r\n"], 40) == ["ok", "two\r"]


def test_endless_carriage_returns_stay_bounded() -> None:
    tail = OutputTail(1000, 16)
    for _ in range(1000):
        tail.feed(b"\r" * 1000)
    assert len(tail._partial) <= 17
    assert all(len(line) <= 16 for line in tail.lines())
