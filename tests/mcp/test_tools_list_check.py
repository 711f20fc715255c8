"""A ``tools/list`` result whose tools are all valid is checked in one pass, with the same outcome.

``Exchange._check_tools`` leaves out each tool that fails the name rule, the
negotiated revision's wire shape or the SDK's model. At 100 servers of 50
tools, checking each tool on its own was a third of the open's allocations;
each slice of up to ``CHECK_SLICE`` tools is now checked at once first, and only a
slice that fails goes tool by tool. The property: for any list of tools (valid or not), under
any revision, the result and the tools reported are those of the tool-by-tool
path.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kairox_mcp import _streams
from kairox_mcp._streams import Exchange
from kairox_mcp.transport import Diagnostics

names = st.sampled_from(["echo", "read_file", "a.b-c", "", "bad name", "x" * 200, "nul\x00", "ok_1"])
schemas = st.sampled_from(
    [
        {"type": "object"},
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        {"type": "string"},
        {"type": "object", "properties": []},
        "object",
        None,
    ]
)
extras = st.fixed_dictionaries(
    {},
    optional={
        "description": st.sampled_from(["reads a file", 7, None]),
        "title": st.sampled_from(["Read", 3]),
        "annotations": st.sampled_from([{"readOnlyHint": True}, {"readOnlyHint": "yes"}, []]),
        "outputSchema": st.sampled_from([{"type": "object"}, {"type": "array"}, 5]),
        "_meta": st.sampled_from([{"k": 1}, "meta"]),
        "icons": st.sampled_from([[{"src": "https://example.com/i.png"}], [{"nosrc": 1}]]),
    },
)


@st.composite
def raw_tools(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 12)) == 0:
        return draw(st.sampled_from(["not a tool", 5, None, []]))
    tool: dict[str, Any] = {"name": draw(names), **draw(extras)}
    schema = draw(schemas)
    if schema is not None:
        tool["inputSchema"] = schema
    return tool


results = st.builds(
    lambda tools, more: {"tools": tools, **more},
    st.lists(raw_tools(), max_size=6),
    st.fixed_dictionaries(
        {},
        optional={
            "nextCursor": st.sampled_from(["c1", 5]),
            "ttlMs": st.sampled_from([1000, -1]),
            "cacheScope": st.sampled_from(["session", "nonsense"]),
        },
    ),
)
versions = st.sampled_from([None, "2025-11-25", "2025-06-18", "2024-11-05", "2026-07-28"])


def _checked(result: dict[str, Any], version: str | None, *, one_pass: bool) -> tuple[Any, dict[str, str]]:
    exchange = Exchange("srv", Diagnostics())
    exchange.protocol_version = version
    if not one_pass:
        exchange._all_valid = lambda result, tools: False  # type: ignore[method-assign]
    out = exchange._check_tools(copy.deepcopy(result))
    return out, dict(exchange.rejected_tools)


@settings(max_examples=300, deadline=None)
@given(result=results, version=versions, size=st.sampled_from([1, 2, 3, _streams.CHECK_SLICE]))
def test_the_one_pass_check_keeps_and_reports_what_the_tool_by_tool_check_does(
    result: dict[str, Any], version: str | None, size: int
) -> None:
    checked = _streams.CHECK_SLICE
    _streams.CHECK_SLICE = size  # slices of any size, so a list of six is cut in several
    try:
        assert _checked(result, version, one_pass=True) == _checked(result, version, one_pass=False)
    finally:
        _streams.CHECK_SLICE = checked


def test_a_valid_result_is_passed_on_as_it_is_and_a_bad_tool_still_goes() -> None:
    good = {"tools": [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(50)]}
    exchange = Exchange("srv", Diagnostics())
    exchange.protocol_version = "2025-11-25"
    assert exchange._check_tools(good) is good
    bad = {"tools": [*good["tools"], {"name": "bad", "inputSchema": {"type": "string"}}]}
    out = exchange._check_tools(bad)
    assert [t["name"] for t in out["tools"]] == [f"t{i}" for i in range(50)]
    assert list(exchange.rejected_tools) == ['"bad"']
