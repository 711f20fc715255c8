"""LineSplitter.feed's shortcut (issue 17, items 3 and 5): a chunk that starts a line (nothing
pending, the usual chunk of a server's answers) takes its first line as it takes the ones inside
the chunk, without joining. The reference is the same splitter fed the chunk's first piece on
its own first, so that piece is pending when the rest ends it and the line is joined: any
chunking, limit and kept tail gives the lines, and the state, that joining gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kairox_stdio._lines import LineSplitter

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
