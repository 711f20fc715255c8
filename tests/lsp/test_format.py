"""Server answers are outside input: every shape is rendered or skipped, never a crash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kairox_lsp._format import Location, Renderer, hover_text, locations_of
from kairox_lsp._tools import _flatten_symbols, _name_start

from .helpers import json_values

lsp_values = json_values(
    [
        "uri",
        "range",
        "start",
        "line",
        "character",
        "targetUri",
        "targetSelectionRange",
        "contents",
        "name",
        "kind",
        "value",
        "language",
        "children",
        "selectionRange",
        "location",
        "containerName",
    ],
    max_int=50,
    max_text=8,
    max_size=5,
    max_leaves=25,
)

positions = st.fixed_dictionaries({"line": st.integers(0, 20), "character": st.integers(0, 40)})
ranges = st.fixed_dictionaries({"start": positions, "end": positions})
uris = st.sampled_from(["file:///ws/a.py", "file:///ws/b%20c.py", "untitled:1"])


@given(lsp_values)
def test_locations_of_any_answer(answer: Any) -> None:
    for loc in locations_of(answer):
        assert isinstance(loc, Location)
        assert isinstance(loc.uri, str) and loc.line >= 0 and loc.character >= 0


@given(
    st.lists(
        st.one_of(
            st.fixed_dictionaries({"uri": uris, "range": ranges}),
            st.fixed_dictionaries({"targetUri": uris, "targetRange": ranges, "targetSelectionRange": ranges}),
        ),
        max_size=5,
    )
)
def test_locations_and_links_are_all_kept(items: list[dict[str, Any]]) -> None:
    locs = locations_of(items)
    assert len(locs) == len(items)
    for item, loc in zip(items, locs, strict=True):
        start = (item.get("range") or item["targetSelectionRange"])["start"]
        assert (loc.line, loc.character) == (start["line"], start["character"])


@given(lsp_values)
def test_hover_text_of_any_answer(answer: Any) -> None:
    assert isinstance(hover_text(answer), str)


def test_hover_shapes() -> None:
    assert hover_text({"contents": {"kind": "markdown", "value": " **x** "}}) == "**x**"
    assert hover_text({"contents": {"language": "python", "value": "def f()"}}) == "```python\ndef f()\n```"
    assert hover_text({"contents": ["a", {"language": "py", "value": "b"}, ""]}) == "a\n\n```py\nb\n```"
    assert hover_text(None) == ""


@given(lsp_values)
def test_symbols_of_any_answer(answer: Any) -> None:
    for depth, qualified, sym in _flatten_symbols(answer):
        assert depth >= 0 and isinstance(qualified, str) and isinstance(sym, dict)
        _name_start(sym, ["x = 1", "def f(): pass"], "utf-16")


@given(st.lists(st.text(max_size=10), max_size=5), uris, st.integers(0, 30), st.integers(0, 60))
def test_renderer_never_fails(lines: list[str], uri: str, line: int, character: int) -> None:
    renderer = Renderer(Path("/ws"), "utf-16", open_lines=lambda p: lines)
    shown, n, column, source = renderer.position(Location(uri, line, character))
    assert n == line + 1 and column >= 1
    assert isinstance(shown, str) and isinstance(source, str)
