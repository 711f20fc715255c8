"""LineSplitter: lines come out whole however the stream is chunked, and memory stays bounded."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairox_stdio._lines import Line, LineSplitter

line_bytes = st.binary(max_size=300).map(lambda b: b.replace(b"\n", b""))


def split_into_chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    chunks, last = [], 0
    for p in [*points, len(data)]:
        chunks.append(data[last:p])
        last = p
    return chunks


def run(splitter: LineSplitter, chunks: list[bytes]) -> list[Line]:
    out: list[Line] = []
    for chunk in chunks:
        out.extend(splitter.feed(chunk))
        assert splitter.pending <= splitter.max_line
    rest = splitter.flush()
    if rest is not None:
        out.append(rest)
    return out


def expected(lines: list[bytes], max_line: int) -> list[Line]:
    out = []
    for raw in lines:
        if len(raw) > max_line:
            out.append(Line(raw[:max_line], True, len(raw)))
        elif raw.endswith(b"\r"):
            out.append(Line(raw[:-1], False, len(raw) - 1))
        else:
            out.append(Line(raw, False, len(raw)))
    return out


@given(
    lines=st.lists(line_bytes, max_size=20),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=30),
    max_line=st.integers(min_value=1, max_value=400),
    terminated=st.booleans(),
)
def test_any_chunking_gives_the_same_lines(
    lines: list[bytes], cuts: list[int], max_line: int, terminated: bool
) -> None:
    data = b"\n".join(lines) + (b"\n" if terminated and lines else b"")
    got = run(LineSplitter(max_line), split_into_chunks(data, cuts))
    want = expected(lines, max_line)
    if not terminated and lines and lines[-1] == b"":
        want = want[:-1]  # an empty unterminated tail is no line
    assert got == want


@given(cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=30))
def test_crlf_lines(cuts: list[int]) -> None:
    data = b'{"a":1}\r\n{"b":2}\r\n'
    got = run(LineSplitter(100), split_into_chunks(data, cuts))
    assert [line.data for line in got] == [b'{"a":1}', b'{"b":2}']


def test_long_line_in_many_chunks_is_kept_whole_when_under_the_limit() -> None:
    splitter = LineSplitter(10_000_000)
    piece = b"x" * 65_536
    out: list[Line] = []
    for _ in range(100):  # 6.5 MB line in 64 KB chunks
        out.extend(splitter.feed(piece))
    out.extend(splitter.feed(b"\nnext\n"))
    assert [(len(line.data), line.truncated) for line in out] == [(6_553_600, False), (4, False)]


def test_over_long_line_is_cut_and_the_next_line_is_intact() -> None:
    splitter = LineSplitter(1000)
    out = splitter.feed(b"y" * 5000)
    assert out == [] and splitter.pending == 1000
    out = splitter.feed(b"y" * 5000 + b"\nok\n")
    assert out == [Line(b"y" * 1000, True, 10_000), Line(b"ok", False, 2)]


def test_max_line_must_be_positive() -> None:
    with pytest.raises(ValueError):
        LineSplitter(0)


# -- the first line of a chunk that starts a line --------------------------------------------
# LineSplitter.feed takes it as it takes the ones inside the chunk, without joining. The
# reference is the same splitter fed the chunk's first piece on its own first, so that piece
# is pending when the rest ends it and the line is joined: any chunking, limit and kept tail
# gives the lines, and the state, that joining gives.


_CHUNK = st.lists(st.sampled_from([b"\n", b"\r", b"x", b"yz", b"\r\n", b"{}", b"0123456789"]), max_size=8).map(b"".join)


def _state(s: LineSplitter) -> tuple[object, ...]:
    return (s.pending, s._seen, s._tail, s._reported, b"".join(s._parts))


@settings(max_examples=400, deadline=None)
@given(
    chunks=st.lists(_CHUNK, max_size=12),
    max_line=st.integers(min_value=1, max_value=12),
    keep_tail=st.integers(min_value=0, max_value=6),
    probe=st.booleans(),
)
def test_any_chunks_give_what_joining_every_first_piece_gives(
    chunks: list[bytes], max_line: int, keep_tail: int, probe: bool
) -> None:
    fast, slow = LineSplitter(max_line, keep_tail=keep_tail), LineSplitter(max_line, keep_tail=keep_tail)
    for chunk in chunks:
        head, newline, _rest = chunk.partition(b"\n")
        joined = slow.feed(head) + slow.feed(chunk[len(head) :]) if newline and head else slow.feed(chunk)
        assert fast.feed(chunk) == joined
        if probe:  # the stdout pump asks after every chunk
            assert fast.overflow() == slow.overflow()
        assert _state(fast) == _state(slow)
    assert fast.flush() == slow.flush()
