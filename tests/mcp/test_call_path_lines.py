"""LineSplitter.feed's shortcut (issue 17, items 3 and 5): a chunk that starts a line (nothing
pending, the usual chunk of a server's answers) takes its first line as it takes the ones inside
the chunk, without joining; any chunking, limit and kept tail gives the lines, and the state,
that joining every first piece gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kairox_stdio._lines import Line, LineSplitter


class _Joining(LineSplitter):
    """feed as it was: a chunk's first piece always joined to what was pending."""

    def feed(self, data: bytes) -> list[Line]:
        pieces = data.split(b"\n")
        if len(pieces) == 1:
            self._add(data)
            return []
        self._add(pieces[0])
        lines = [self._take()]
        limit = self.max_line
        for piece in pieces[1:-1]:
            n = len(piece)
            if n > limit:
                lines.append(Line(piece[:limit], True, n, self._tail_of(piece)))
            elif piece[-1:] == b"\r":
                lines.append(Line(piece[:-1], False, n - 1))
            else:
                lines.append(Line(piece, False, n))
        self._add(pieces[-1])
        return lines


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
    fast, slow = LineSplitter(max_line, keep_tail=keep_tail), _Joining(max_line, keep_tail=keep_tail)
    for chunk in chunks:
        assert fast.feed(chunk) == slow.feed(chunk)
        if probe:  # the stdout pump asks after every chunk
            assert fast.overflow() == slow.overflow()
        assert _state(fast) == _state(slow)
    assert fast.flush() == slow.flush()
