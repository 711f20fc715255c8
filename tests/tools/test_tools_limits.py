"""Argument checking (outside input: what a model sends) and the output limits, with hypothesis."""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kairox_tools._grep as grep
from kairox_tools import BUILTIN_TOOLS
from kairox_tools._args import ArgumentError, check_arguments
from kairox_tools._output import HeadTail, cut_line, head_tail, image_type, looks_binary, safe_text

SCHEMAS = [cls.SPEC.input_schema for cls in BUILTIN_TOOLS]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


@given(st.sampled_from(SCHEMAS), json_values)
def test_any_json_is_either_accepted_or_refused_with_a_message(schema: dict[str, Any], value: Any) -> None:
    try:
        out = check_arguments(schema, value)
    except ArgumentError as exc:
        assert str(exc)
        return
    assert set(out) <= set(schema["properties"])
    assert set(schema.get("required", ())) <= set(out)


@given(
    st.sampled_from(SCHEMAS),
    st.dictionaries(st.sampled_from(["path", "content", "pattern", "command", "offset", "mode", "x"]), json_values),
)
def test_accepted_arguments_fit_the_schema(schema: dict[str, Any], value: dict[str, Any]) -> None:
    try:
        out = check_arguments(schema, value)
    except ArgumentError:
        return
    json.dumps(out)  # still plain JSON
    for key, item in out.items():
        prop = schema["properties"][key]
        kind = prop["type"]
        python: dict[str, type | tuple[type, ...]] = {
            "string": str,
            "integer": int,
            "number": (int, float),
            "boolean": bool,
            "object": dict,
            "array": list,
        }
        assert isinstance(item, python[kind]), (key, item)
        if kind in ("integer", "number"):
            assert not isinstance(item, bool)
        if "enum" in prop:
            assert item in prop["enum"]
        if "minimum" in prop:
            assert item >= prop["minimum"]


def test_argument_messages() -> None:
    schema = BUILTIN_TOOLS[0].SPEC.input_schema  # fs.read
    assert check_arguments(schema, {"path": "a"}) == {"path": "a", "offset": 1, "line_numbers": True}
    assert check_arguments(schema, {"path": "a", "limit": 5.0, "offset": None}) == {
        "path": "a",
        "limit": 5,
        "offset": 1,
        "line_numbers": True,
    }
    cases = [
        ({}, "missing required argument 'path'"),
        ({"path": 3}, "path: expected a string, got 3"),
        ({"path": "a", "limit": True}, "limit: expected an integer, got true"),
        ({"path": "a", "limit": 1.5}, "limit: expected an integer, got 1.5"),
        ({"path": "a", "limit": 0}, "limit: must be at least 1, got 0"),
        ({"path": "a", "lmit": 3}, "unknown argument 'lmit'; did you mean 'limit'?"),
        ({"path": "a", "xyz": 3}, "unknown argument 'xyz'; expected: path, offset, limit, line_numbers"),
        ([], "arguments: expected an object, got an array"),
    ]
    for value, message in cases:
        with pytest.raises(ArgumentError) as info:
            check_arguments(schema, value)
        assert str(info.value) == message
    shell = next(cls for cls in BUILTIN_TOOLS if cls.SPEC.id == "shell.exec").SPEC.input_schema
    with pytest.raises(ArgumentError, match=r"env\.A: expected a string, got 1"):
        check_arguments(shell, {"command": "x", "env": {"A": 1}})
    with pytest.raises(ArgumentError, match="expected a finite number"):
        check_arguments(shell, {"command": "x", "timeout": float("inf")})


@given(st.binary(max_size=3000), st.integers(2, 600), st.lists(st.integers(1, 700), max_size=10))
def test_head_tail_keeps_the_ends_and_counts_what_it_drops(data: bytes, limit: int, splits: list[int]) -> None:
    buf = HeadTail(limit)
    rest = data
    for size in splits:
        buf.feed(rest[:size])
        rest = rest[size:]
    buf.feed(rest)
    assert buf.total == len(data)
    kept = len(buf.head) + len(buf.tail)
    assert kept <= limit
    assert bytes(buf.head) == data[: len(buf.head)]
    assert bytes(buf.tail) == data[len(data) - len(buf.tail) :] if buf.tail else True
    if len(data) <= limit:
        assert not buf.truncated and bytes(buf.head) + bytes(buf.tail) == data
        assert buf.text() == data.decode("utf-8", errors="replace")
    else:
        assert buf.truncated and kept == limit
        assert f"[... {len(data) - limit} bytes omitted ...]" in buf.text()


@given(st.text(max_size=400), st.integers(1, 300))
def test_head_tail_text(text: str, limit: int) -> None:
    out, cut = head_tail(text, limit)
    if len(text) <= limit:
        assert (out, cut) == (text, False)
    else:
        head = limit // 2
        assert cut and out.startswith(text[:head]) and out.endswith(text[len(text) - (limit - head) :])
        assert f"[... {len(text) - limit} characters omitted ...]" in out


@given(st.text(max_size=300), st.integers(1, 200))
def test_cut_line(line: str, limit: int) -> None:
    out = cut_line(line, limit)
    assert (
        out == line
        if len(line) <= limit
        else out == f"{line[:limit]} [... line cut: {len(line) - limit} more characters]"
    )


@given(st.text(st.characters(blacklist_categories=("Cc", "Cs")) | st.sampled_from("\t\n\r"), max_size=3000))
def test_text_is_never_binary(text: str) -> None:
    assert not looks_binary(text.encode("utf-8")[:8192])


def test_binary_and_images() -> None:
    assert looks_binary(b"abc\x00def")
    assert looks_binary(bytes(range(1, 32)) * 20)
    assert not looks_binary("héllo wörld\n".encode("latin-1"))  # legacy text stays text
    assert not looks_binary("é".encode()[:1])  # a character cut at the sample's end
    assert image_type(b"\x89PNG\r\n\x1a\nrest") == "image/png"
    assert image_type(b"\xff\xd8\xff\xe0") == "image/jpeg"
    assert image_type(b"GIF89a") == "image/gif"
    assert image_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert image_type(b"plain text") is None


@given(st.binary(max_size=40))
def test_file_names_that_are_not_utf8_become_valid_text(raw: bytes) -> None:
    name = os.fsdecode(raw)  # what os.scandir gives for such a name
    clean = safe_text(name)
    clean.encode("utf-8")  # never raises
    if raw.decode("utf-8", errors="ignore").encode() == raw:
        assert clean == name


@given(st.lists(st.binary(max_size=30), max_size=8))
def test_ripgrep_output_is_split_into_lines_whatever_the_chunks(chunks: list[bytes]) -> None:
    async def collect() -> list[bytes]:
        async def stream() -> Any:
            for chunk in chunks:
                yield chunk

        return [line async for line in grep._lines(stream())]

    data = b"".join(chunks)
    expected = data.split(b"\n")
    if expected and expected[-1] == b"":
        expected.pop()
    assert anyio.run(collect) == expected


def test_ripgrep_output_lines_over_the_limit_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep, "MAX_JSON_LINE", 10)

    async def collect() -> list[bytes]:
        async def stream() -> Any:
            for chunk in (b"short\n", b"x" * 8, b"y" * 8, b"z\nafter\n"):
                yield chunk

        return [line async for line in grep._lines(stream())]

    assert anyio.run(collect) == [b"short", b"after"]
