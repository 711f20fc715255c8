"""convert_result, an MCP ``CallToolResult`` as a kairox ``ToolResult``: a result with no
structured content and no ``_meta`` has its plain text blocks made directly; whatever the SDK
hands over, the answer is the one the general conversion (every block through convert_content)
gives."""

from __future__ import annotations

from typing import Any

import mcp.types as types
from hypothesis import given, settings
from hypothesis import strategies as st

from kairox import TextContent, ToolResult
from kairox_mcp.adapter import _convert_result, convert_result

_TEXT = st.text(max_size=12)
_META: st.SearchStrategy[dict[str, int] | None] = st.one_of(
    st.none(), st.just({}), st.dictionaries(st.sampled_from(["a", "b"]), st.integers(), max_size=2)
)
_ANNOTATIONS = st.one_of(
    st.none(),
    st.builds(types.Annotations, priority=st.one_of(st.none(), st.floats(0, 1)), audience=st.just(["user"])),
)


def _text_block(text: str, annotations: Any, meta: Any) -> types.TextContent:
    return types.TextContent(type="text", text=text, annotations=annotations, _meta=meta)


_BLOCKS = st.one_of(
    st.builds(_text_block, _TEXT, _ANNOTATIONS, _META),
    st.builds(lambda d: types.ImageContent(type="image", data=d, mime_type="image/png"), st.sampled_from(["", "aGk="])),
    st.builds(
        lambda t: types.EmbeddedResource(
            type="resource", resource=types.TextResourceContents(uri="file:///a.txt", text=t)
        ),
        _TEXT,
    ),
    st.builds(lambda n: types.ResourceLink(type="resource_link", uri="file:///b", name=n), _TEXT),
)


class _Duck:
    """Not the SDK's model: what the adapter reads of it, by attribute, some of it missing."""

    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


_DUCK_BLOCKS = st.one_of(
    st.builds(lambda t: _Duck(type="text", text=t), _TEXT),  # no annotations, no meta attribute
    st.builds(lambda t, m: _Duck(type="text", text=t, annotations=None, meta=m), _TEXT, _META),
)


def _general(result: Any) -> ToolResult:
    return _convert_result(result, getattr(result, "structured_content", None), getattr(result, "meta", None))


@settings(max_examples=300, deadline=None)
@given(
    blocks=st.lists(_BLOCKS, max_size=4),
    structured=st.one_of(st.none(), st.just({"k": 1})),
    meta=_META,
    is_error=st.booleans(),
)
def test_the_shortcut_converts_as_the_general_path(
    blocks: list[Any], structured: dict[str, Any] | None, meta: dict[str, Any] | None, is_error: bool
) -> None:
    result = types.CallToolResult(content=blocks, structured_content=structured, is_error=is_error, _meta=meta)
    assert convert_result(result) == _general(result)


@settings(max_examples=100, deadline=None)
@given(blocks=st.lists(st.one_of(_DUCK_BLOCKS, _BLOCKS), max_size=4), is_error=st.sampled_from([False, True, None, 0]))
def test_the_shortcut_reads_any_result_as_the_general_path(blocks: list[Any], is_error: Any) -> None:
    result = _Duck(content=blocks, is_error=is_error)  # no structured_content, no meta attribute
    assert convert_result(result) == _general(result)
    assert convert_result(_Duck()) == _general(_Duck()) == ToolResult()


def test_a_plain_text_answer_is_text_blocks_and_nothing_else() -> None:
    result = types.CallToolResult(content=[types.TextContent(type="text", text="hi")], is_error=True)
    converted = convert_result(result)
    assert converted == ToolResult(content=(TextContent("hi"),), is_error=True)
    assert converted.meta == {} and converted.structured is None
