"""What the registry keeps per tool: the named spec is the provider's spec with a name, not a copy.

At 100 servers of 50 tools (``benchmarks/bench_peers.py --only scale``), every
registered tool is named once; the named spec shares the provider's converted
fields (the input schema above all) instead of converting them again.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox import Domain, FunctionTool, ToolSpec
from kairox._tools import _respec
from kairox.ext import ToolRegistry

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
schemas = st.dictionaries(st.text(max_size=6), json_values, max_size=4)
specs = st.builds(
    ToolSpec,
    id=st.text(min_size=1, max_size=12),
    description=st.text(max_size=20),
    input_schema=st.none() | schemas,
    domain=st.sampled_from(list(Domain)),
    capability=st.sampled_from(["read", "write", "execute"]),
    provider=st.text(max_size=8),
    title=st.none() | st.text(max_size=8),
    output_schema=st.none() | schemas,
    annotations=schemas,
    icons=st.lists(st.dictionaries(st.sampled_from(["src", "mimeType"]), st.text(max_size=5)), max_size=2),
    meta=schemas,
    path_arguments=st.none() | st.tuples(st.text(max_size=4)),
    exported_name=st.text(max_size=8),
)


@given(
    spec=specs,
    changes=st.fixed_dictionaries(
        {}, optional={"exported_name": st.text(max_size=12), "provider": st.text(max_size=8)}
    ),
)
def test_a_respecced_spec_is_what_attrs_evolve_gives(spec: ToolSpec, changes: dict[str, Any]) -> None:
    before = repr(spec)
    respecced = _respec(spec, **changes)
    assert respecced == attrs.evolve(spec, **changes)
    assert repr(respecced) == repr(attrs.evolve(spec, **changes))
    assert type(respecced) is ToolSpec
    assert repr(spec) == before  # the original is untouched
    assert respecced.input_schema is spec.input_schema


def test_respec_refuses_a_field_with_a_converter() -> None:
    with pytest.raises(TypeError, match="input_schema"):
        _respec(ToolSpec(id="a"), input_schema="{}")


def _tool(tid: str, schema: dict[str, Any]) -> FunctionTool:
    async def run(**_: Any) -> str:
        return tid

    return FunctionTool(ToolSpec(id=tid, input_schema=schema, domain="local", capability="read"), run)


def test_the_registered_spec_shares_the_input_schema_of_the_providers_spec() -> None:
    registry = ToolRegistry()
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    tools = [_tool(f"srv.t{i}", schema) for i in range(3)]
    registry.replace_provider("mcp:srv", tools)
    for tool in tools:
        named = registry.get_spec(tool.spec.id)
        assert named.exported_name == tool.spec.id.replace(".", "_")
        assert named.input_schema is tool.spec.input_schema
        assert named == attrs.evolve(tool.spec, provider="mcp:srv", exported_name=named.exported_name)


def test_collisions_are_reported_while_they_last() -> None:
    registry = ToolRegistry()
    registry.replace_provider("a", [_tool("x.y", {})])
    assert registry.collisions == []
    registry.replace_provider("b", [_tool("x_y", {})])
    assert registry.collisions == [("x.y", "x_y")]
    registry.replace_provider("c", [_tool("x/y", {})])
    assert registry.collisions == [("x.y", "x/y", "x_y")]
    registry.remove_provider("a")
    assert registry.collisions == [("x/y", "x_y")]
    registry.remove_provider("c")
    assert registry.collisions == []
    registry.replace_provider("a", [_tool("x.y", {})])
    assert registry.collisions == [("x.y", "x_y")]
    names = [spec.exported_name for spec in registry.specs()]
    assert len(set(names)) == 2 and "x_y" in names
