"""What servers send is kept: tool title, icons, ``_meta``, annotations, output schema;
content annotations and ``_meta``; resource-link title, size and icons; a result's ``_meta``;
a tool that must run as a task is not offered.

The SDK server tests/fixtures/mcp_servers/rich_tools.py over stdio and streamable HTTP,
server-everything, and property tests of the conversions (they read server messages).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_helpers import open_runtime
from test_callbacks import TRANSPORTS, sdk_entry, yes

from kairox import Capability, ResourceContent, ResourceLink, TextContent, ToolResult
from kairox.errors import ToolNotFound
from kairox_mcp import McpServerConfig, build_spec, convert_result, manager_of
from kairox_mcp.adapter import withheld_reason
from kairox_mcp.client import _url_elicitations

ICON = {"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]}


@pytest.mark.anyio
@pytest.mark.integration
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tool_and_content_fields_are_kept(tmp_path: Path, transport: str) -> None:
    with sdk_entry("rich_tools", transport, trust_annotations=False) as entry:
        async with open_runtime(tmp_path, {"rich": entry}) as rt:
            spec = rt.tools.get_spec("rich.weather")
            result = await rt.call_tool("rich.annotated", approver=yes)
            weather = await rt.call_tool("rich.weather", {"city": "Oslo"}, approver=yes)
            with pytest.raises(ToolNotFound, match="research is not offered: it must run as a task"):
                await rt.call_tool("rich.research", {"topic": "x"}, approver=yes)
            assert "rich.research" not in rt.tools
            detail = manager_of(rt).server("rich").detail
    assert spec.title == "Current weather"
    assert spec.icons == (ICON,)
    assert spec.meta == {"example.com/origin": "fixture", "ui": {"resourceUri": "ui://weather/view.html"}}
    assert spec.annotations == {"readOnlyHint": True, "title": "Weather (annotation)"}
    assert spec.capability is Capability.EXECUTE  # still untrusted: the hint decides nothing
    assert spec.output_schema is not None and spec.output_schema["properties"]["celsius"]["type"] == "number"
    assert weather.structured == {"city": "Oslo", "celsius": 21.5}
    text, link, embedded = result.content
    assert isinstance(text, TextContent) and isinstance(link, ResourceLink) and isinstance(embedded, ResourceContent)
    assert text.annotations == {"audience": ["user"], "priority": 0.9}
    assert text.meta == {"example.com/block": 1}
    assert (link.title, link.size, link.icons) == ("The report", 12345, (ICON,))
    assert link.annotations == {"audience": ["assistant"], "priority": 0.1}
    assert embedded.annotations == {"priority": 0.5} and embedded.meta == {"example.com/embedded": True}
    assert result.meta == {"example.com/trace": "t-1"}
    data = result.to_dict()
    assert data["_meta"] == {"example.com/trace": "t-1"}
    assert data["content"][0] == {
        "text": "for the user",
        "type": "text",
        "annotations": {"audience": ["user"], "priority": 0.9},
        "_meta": {"example.com/block": 1},
    }
    assert data["content"][1]["size"] == 12345 and data["content"][1]["title"] == "The report"
    json.dumps(data)
    assert "1 tools not offered (research: must run as tasks)" in detail


@pytest.mark.anyio
@pytest.mark.integration
def test_mcp_tools_shows_what_is_not_offered_and_why(tmp_path: Path) -> None:
    from kairox_testing import KairoxHarness

    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "ws").mkdir()
    with sdk_entry("rich_tools") as entry:
        (home / "kairox.toml").write_text(
            f"[mcp_servers.rich]\ncommand = {json.dumps(entry['command'])}\nargs = {json.dumps(entry['args'])}\n"
            # tasks are a 2025-11-25 matter: at 2026-07-28 the SDK server runs the tool as a plain call
            'protocol = "2025-11-25"\n'
        )
        harness = KairoxHarness(tmp_path / "ws", home, env={"KAIROX_HOME": str(home), "PATH": "/usr/bin:/bin"})
        shown = harness.cli("mcp", "tools", "rich", load_entrypoints=True)
        as_json = harness.cli("--json", "mcp", "tools", "rich", load_entrypoints=True)
    assert shown.exit_code == 0, shown.stderr
    assert "- rich.research  not offered: it must run as a task" in shown.stdout
    assert json.loads(as_json.stdout)["not_offered"] == [
        {"id": "rich.research", "reason": withheld_reason(types.Tool.model_validate(RESEARCH))}
    ]


RESEARCH = {"name": "research", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}


@pytest.mark.anyio
@pytest.mark.integration
async def test_server_everything_annotations_and_resource_links(tmp_path: Path, everything_js: Path) -> None:
    entry = {"command": "node", "args": [str(everything_js), "stdio"]}
    async with open_runtime(tmp_path, {"everything": entry}) as rt:
        annotated = await rt.call_tool(
            "everything.get-annotated-message", {"messageType": "error", "includeImage": True}, approver=yes
        )
        links = await rt.call_tool("everything.get-resource-links", {"count": 2}, approver=yes)
        spec = rt.tools.get_spec("everything.echo")
    assert annotated.content[0].annotations == {"audience": ["user", "assistant"], "priority": 1.0}
    assert annotated.content[1].annotations is not None  # the image's
    assert all(isinstance(b, ResourceLink) for b in links.content[1:])
    assert spec.title is not None or spec.annotations  # server-everything describes its tools


# -- property tests of the conversions -----------------------------------------------------------

JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
META = st.dictionaries(st.text(min_size=1, max_size=8), JSON_VALUE, max_size=3)
ICONS = st.lists(
    st.fixed_dictionaries(
        {"src": st.sampled_from(["https://a.example/i.png", "data:image/png;base64,AA=="])},
        optional={
            "mimeType": st.sampled_from(["image/png", "image/svg+xml"]),
            "sizes": st.lists(st.sampled_from(["16x16", "any"]), max_size=2),
        },
    ),
    max_size=2,
)
ANNOTATIONS = st.fixed_dictionaries(
    {}, optional={"audience": st.lists(st.sampled_from(["user", "assistant"]), max_size=2), "priority": st.floats(0, 1)}
)


@given(
    title=st.none() | st.text(max_size=10),
    icons=st.none() | ICONS,
    meta=st.none() | META,
    annotations=st.none()
    | st.fixed_dictionaries({}, optional={"readOnlyHint": st.booleans(), "title": st.text(max_size=5)}),
    output=st.none() | st.just({"type": "object", "properties": {"x": {"type": "integer"}}}),
    support=st.none() | st.sampled_from(["forbidden", "optional", "required"]),
)
@settings(max_examples=200, deadline=None)
def test_a_tool_keeps_what_its_server_sent(
    title: str | None, icons: Any, meta: Any, annotations: Any, output: Any, support: str | None
) -> None:
    raw: dict[str, Any] = {"name": "t", "inputSchema": {"type": "object"}}
    for key, value in (
        ("title", title),
        ("icons", icons),
        ("_meta", meta),
        ("annotations", annotations),
        ("outputSchema", output),
    ):
        if value is not None:
            raw[key] = value
    if support is not None:
        raw["execution"] = {"taskSupport": support}
    tool = types.Tool.model_validate(raw)
    spec = build_spec("s", McpServerConfig(command="x"), tool)
    assert spec.title == (title or (annotations or {}).get("title"))
    assert [i["src"] for i in spec.icons] == [i["src"] for i in icons or []]
    assert spec.meta == (meta or {})
    assert spec.annotations == (annotations or {})
    assert spec.output_schema == output
    assert spec.capability is Capability.EXECUTE  # annotations untrusted by default
    assert (withheld_reason(tool) is not None) is (support == "required")


BLOCK = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("text"), "text": st.text(max_size=10)}, optional={"annotations": ANNOTATIONS, "_meta": META}
    ),
    st.fixed_dictionaries(
        {"type": st.just("resource_link"), "uri": st.just("file:///x"), "name": st.text(max_size=5)},
        optional={
            "title": st.text(max_size=5),
            "size": st.integers(0, 10**12),
            "icons": ICONS,
            "annotations": ANNOTATIONS,
            "_meta": META,
        },
    ),
    st.fixed_dictionaries(
        {"type": st.just("resource"), "resource": st.just({"uri": "memo://1", "text": "m"})},
        optional={"annotations": ANNOTATIONS, "_meta": META},
    ),
    st.fixed_dictionaries(
        {"type": st.just("image"), "data": st.just("AA=="), "mimeType": st.just("image/png")},
        optional={"annotations": ANNOTATIONS},
    ),
)


@given(blocks=st.lists(BLOCK, max_size=4), meta=st.none() | META)
@settings(max_examples=200, deadline=None)
def test_content_blocks_keep_annotations_meta_and_link_fields(blocks: list[dict[str, Any]], meta: Any) -> None:
    raw: dict[str, Any] = {"content": blocks}
    if meta is not None:
        raw["_meta"] = meta
    result = convert_result(types.CallToolResult.model_validate(raw))
    wire = types.CallToolResult.model_validate(raw).model_dump(mode="json", by_alias=True, exclude_none=True)
    data = result.to_dict()
    json.dumps(data)
    assert data.get("_meta") == (meta or None)
    for sent, kept, block in zip(wire["content"], data["content"], result.content, strict=True):
        assert kept.get("annotations") == sent.get("annotations")
        assert kept.get("_meta") == sent.get("_meta")
        if sent["type"] == "resource_link":
            assert isinstance(block, ResourceLink)
            assert (block.title, block.size) == (sent.get("title"), sent.get("size"))
            assert [i["src"] for i in block.icons or ()] == [i["src"] for i in sent.get("icons", [])]
    assert ToolResult.limited(result) is result  # small: nothing cut


@given(JSON_VALUE)
@settings(max_examples=300, deadline=None)
def test_a_url_elicitation_errors_data_is_read_safely(data: Any) -> None:
    for url, message in _url_elicitations(data):
        assert isinstance(url, str) and isinstance(message, str)


def test_url_elicitations_of_a_well_formed_error() -> None:
    data = {"elicitations": [{"url": "https://x/a", "message": "go", "elicitationId": "1"}, {"url": 3}, "junk"]}
    assert _url_elicitations(data) == [("https://x/a", "go")]
