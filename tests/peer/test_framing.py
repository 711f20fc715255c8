"""Content-Length framing: round trips, chunking, tolerated headers and broken streams."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_peer._framing import MAX_HEADER, BadMessage, FrameDecoder, FramingError, encode_message

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
messages = st.dictionaries(st.text(max_size=10), json_values, max_size=6)


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at ``cuts`` (modulo its length): empty pieces included."""
    points = [0, *sorted({c % (len(data) + 1) for c in cuts}), len(data)]
    return [data[start:end] for start, end in itertools.pairwise(points)]


@given(st.lists(messages, max_size=5), st.lists(st.integers(0, 10_000), max_size=12))
def test_round_trip_in_any_chunking(msgs: list[dict[str, object]], cuts: list[int]) -> None:
    data = b"".join(encode_message(m) for m in msgs)
    decoder = FrameDecoder()
    got: list[object] = []
    for chunk in _chunks(data, cuts):
        got.extend(decoder.feed(chunk))
    assert got == msgs
    assert decoder.pending == 0


@given(messages)
def test_length_counts_utf8_bytes(msg: dict[str, object]) -> None:
    frame = encode_message(msg)
    header, _, body = frame.partition(b"\r\n\r\n")
    assert int(header.split(b":")[1]) == len(body)
    assert json.loads(body.decode("utf-8")) == msg


def test_non_ascii_body_length_is_in_bytes() -> None:
    frame = encode_message({"text": "😀é"})
    assert frame.startswith(b"Content-Length: 17\r\n\r\n")
    assert FrameDecoder().feed(frame) == [{"text": "😀é"}]


@given(messages, st.sampled_from(["content-length", "CONTENT-LENGTH", "Content-Length"]), st.booleans())
def test_extra_headers_and_header_case_are_tolerated(msg: dict[str, object], name: str, type_first: bool) -> None:
    body = json.dumps(msg).encode()
    headers = [f"{name}: {len(body)}", "Content-Type: application/vscode-jsonrpc; charset=utf-8"]
    if type_first:
        headers.reverse()
    frame = ("\r\n".join(headers) + "\r\n\r\n").encode() + body
    assert FrameDecoder().feed(frame + frame) == [msg, msg]


def test_bad_json_body_is_reported_and_the_stream_goes_on() -> None:
    bad = b"Content-Length: 5\r\n\r\n{oops"
    decoder = FrameDecoder()
    out = decoder.feed(bad + encode_message({"id": 1}))
    assert isinstance(out[0], BadMessage)
    assert out[1] == {"id": 1}


def test_invalid_utf8_body_is_a_bad_message() -> None:
    out = FrameDecoder().feed(b"Content-Length: 2\r\n\r\n\xff\xfe")
    assert len(out) == 1 and isinstance(out[0], BadMessage)


@pytest.mark.parametrize(
    "header",
    [b"Content-Type: x\r\n\r\n", b"Content-Length: -1\r\n\r\n", b"Content-Length: abc\r\n\r\n", b"garbage\r\n\r\n"],
)
def test_broken_headers_raise(header: bytes) -> None:
    with pytest.raises(FramingError):
        FrameDecoder().feed(header)


def test_endless_header_raises() -> None:
    with pytest.raises(FramingError):
        FrameDecoder().feed(b"X-Long: " + b"a" * (MAX_HEADER + 10))


def test_blank_lines_between_frames_are_skipped() -> None:
    frame = encode_message({"a": 1})
    assert FrameDecoder().feed(b"\r\n" + frame + b"\r\n\r\n" + frame) == [{"a": 1}, {"a": 1}]


@given(st.binary(max_size=300))
def test_arbitrary_bytes_only_ever_raise_framing_error(data: bytes) -> None:
    decoder = FrameDecoder()
    try:
        out = decoder.feed(data)
    except FramingError:
        return
    for item in out:
        assert isinstance(item, BadMessage) or item is None or isinstance(item, (dict, list, str, int, float, bool))
