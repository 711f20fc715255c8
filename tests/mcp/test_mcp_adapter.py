"""MCP tools as kairox tools: ids, schemas, domain/capability, content conversion."""

from __future__ import annotations

import base64
from typing import Any

import mcp.types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox._tool_registry import ToolRegistry
from kairox._tools import AudioContent, ImageContent, ResourceContent, ResourceLink, TextContent
from kairox._types import Capability, Domain
from kairox_mcp.adapter import build_spec, classify, convert_content, convert_result, normalize_schema
from kairox_mcp.config import McpServerConfig

PLAIN = McpServerConfig(command="srv")


def tool(name: str = "t", **kwargs: Any) -> types.Tool:
    return types.Tool(name=name, input_schema=kwargs.pop("input_schema", {"type": "object"}), **kwargs)


def test_canonical_id_uses_the_prefix_or_the_server_name() -> None:
    assert build_spec("git", PLAIN, tool("git_status")).id == "git.git_status"
    cfg = McpServerConfig(command="srv", tool_prefix="gh")
    spec = build_spec("github", cfg, tool("create_issue", description="Create an issue"))
    assert spec.id == "gh.create_issue" and spec.description == "Create an issue"
    assert spec.provider == "mcp:github"


class _Adapter:
    def __init__(self, spec: Any) -> None:
        self.spec = spec

    async def call(self, arguments: dict[str, Any], context: Any) -> Any:  # pragma: no cover - never called
        raise AssertionError


def test_exported_names_are_sanitised_by_the_registry() -> None:
    registry = ToolRegistry()
    specs = [build_spec("ev", PLAIN, tool(n)) for n in ("get-tiny-image", "a.b/c", "x" * 80)]
    registry.replace_provider("mcp:ev", [_Adapter(s) for s in specs])
    names = {s.id: s.exported_name for s in registry.specs()}
    assert names["ev.get-tiny-image"] == "ev_get-tiny-image"
    assert names["ev.a.b/c"] == "ev_a_b_c"
    assert len(names["ev." + "x" * 80]) == 64
    assert registry.resolve("ev_get-tiny-image").spec.id == "ev.get-tiny-image"


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (None, (Domain.SYSTEM, Capability.EXECUTE)),
        (types.ToolAnnotations(read_only_hint=True), (Domain.SYSTEM, Capability.READ)),
        (types.ToolAnnotations(destructive_hint=True), (Domain.SYSTEM, Capability.WRITE)),
        (types.ToolAnnotations(read_only_hint=True, open_world_hint=True), (Domain.NETWORK, Capability.READ)),
        (types.ToolAnnotations(read_only_hint=False, destructive_hint=False), (Domain.SYSTEM, Capability.EXECUTE)),
        (types.ToolAnnotations(open_world_hint=False), (Domain.SYSTEM, Capability.EXECUTE)),
    ],
)
def test_domain_and_capability_from_annotations_of_a_trusted_server(
    annotations: Any, expected: tuple[Domain, Capability]
) -> None:
    trusting = McpServerConfig(command="s", trust_annotations=True)
    spec = build_spec("s", trusting, tool(annotations=annotations))
    assert (spec.domain, spec.capability) == expected
    if annotations is not None:
        assert spec.annotations == annotations.model_dump(by_alias=True, exclude_none=True)
    # without trust_annotations the hints are kept (shown) but decide nothing
    untrusted = build_spec("s", PLAIN, tool(annotations=annotations))
    assert (untrusted.domain, untrusted.capability) == (Domain.SYSTEM, Capability.EXECUTE)
    assert untrusted.annotations == spec.annotations


def test_config_overrides_annotations_per_axis() -> None:
    ann = {"readOnlyHint": True, "openWorldHint": True}
    local = McpServerConfig(command="s", domain=Domain.LOCAL, trust_annotations=True)
    assert classify(local, ann) == (Domain.LOCAL, Capability.READ, ())
    both = McpServerConfig(command="s", domain=Domain.LOCAL, capability=Capability.WRITE, trust_annotations=True)
    assert classify(both, ann) == (Domain.LOCAL, Capability.WRITE, ())
    assert classify(McpServerConfig(command="s", capability=Capability.EXECUTE, trust_annotations=True), ann) == (
        Domain.NETWORK,
        Capability.EXECUTE,
        (),
    )
    # untrusted hints say nothing: what the config leaves out is the default's
    assert classify(McpServerConfig(command="s", domain=Domain.LOCAL), ann) == (
        Domain.LOCAL,
        Capability.EXECUTE,
        ("capability",),
    )
    assert classify(McpServerConfig(command="s"), ann) == (Domain.SYSTEM, Capability.EXECUTE, ("domain", "capability"))
    trusted_but_silent = McpServerConfig(command="s", trust_annotations=True)
    assert classify(trusted_but_silent, {"title": "Clock"}) == (
        Domain.SYSTEM,
        Capability.EXECUTE,
        ("domain", "capability"),
    )


def test_schema_normalisation_examples() -> None:
    assert normalize_schema(None) == {"type": "object", "properties": {}}
    assert normalize_schema({"properties": {"a": {"type": "string"}}, "required": ["a", 3]}) == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
    }
    assert normalize_schema({"type": ["object", "null"], "properties": []}) == {"type": "object", "properties": {}}
    assert normalize_schema({"type": "string"}) == {"type": "object", "properties": {}}
    kept = normalize_schema({"type": "object", "additionalProperties": False, "$defs": {"x": {}}})
    assert kept["additionalProperties"] is False and "$defs" in kept


json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
schemas = st.one_of(
    json_values,
    st.dictionaries(
        st.sampled_from(["type", "properties", "required", "additionalProperties", "description"]),
        st.one_of(json_values, st.sampled_from(["object", "string", ["object", "null"]])),
        max_size=5,
    ),
)


@given(schemas)
def test_normalised_schema_is_always_a_top_level_object_and_idempotent(schema: Any) -> None:
    out = normalize_schema(schema)
    assert out["type"] == "object"
    assert isinstance(out["properties"], dict)
    assert all(isinstance(r, str) for r in out.get("required", []))
    assert normalize_schema(out) == out


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()


def test_every_content_block_keeps_its_kind() -> None:
    blocks = [
        types.TextContent(type="text", text="hello"),
        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        types.AudioContent(type="audio", data=PNG, mime_type="audio/wav"),
        types.ResourceLink(type="resource_link", uri="file:///a.txt", name="a.txt", mime_type="text/plain"),
        types.EmbeddedResource(
            type="resource", resource=types.TextResourceContents(uri="demo://t", mime_type="text/plain", text="body")
        ),
        types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(uri="demo://b", blob=PNG)),
    ]
    out = [convert_content(b) for b in blocks]
    assert out == [
        TextContent("hello"),
        ImageContent(data=PNG, mime_type="image/png"),
        AudioContent(data=PNG, mime_type="audio/wav"),
        ResourceLink(uri="file:///a.txt", name="a.txt", mime_type="text/plain"),
        ResourceContent(uri="demo://t", mime_type="text/plain", text="body"),
        ResourceContent(uri="demo://b", blob=PNG),
    ]


def test_result_keeps_structured_content_and_the_error_flag() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text='{"t": 3}')], structured_content={"t": 3}, is_error=False
    )
    converted = convert_result(result)
    assert converted.structured == {"t": 3} and not converted.is_error and converted.text == '{"t": 3}'
    failed = convert_result(types.CallToolResult(content=[types.TextContent(type="text", text="boom")], is_error=True))
    assert failed.is_error and failed.text == "boom" and failed.structured is None
