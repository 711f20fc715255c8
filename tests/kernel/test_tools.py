"""The tool registry (dynamic add/remove, each change one event), specs, results, FunctionTool."""

from __future__ import annotations

import base64

import anyio
import pytest

from kairox import (
    AudioContent,
    Capability,
    Domain,
    FunctionTool,
    ImageContent,
    RegistrationError,
    ResourceContent,
    ResourceLink,
    TextContent,
    Tool,
    ToolContext,
    ToolNotFound,
    ToolResult,
    ToolsChanged,
    ToolSpec,
)
from kairox._tools import as_result
from kairox.declare import schema_from_signature
from kairox.ext import EventBus, ToolNameCollision, ToolRegistry
from kairox_testing import EventLog, InMemoryToolProvider


def tool(tool_id: str, text: str = "") -> FunctionTool:
    return FunctionTool(ToolSpec(tool_id, capability="read"), lambda: text or tool_id)


@pytest.fixture
def registry() -> tuple[ToolRegistry, EventLog]:
    bus = EventBus()
    return ToolRegistry(bus), EventLog(bus)


def test_add_and_remove_are_events(registry) -> None:
    reg, log = registry
    spec = reg.add(tool("fs.read"), provider="tools")
    assert spec.exported_name == "fs_read" and spec.provider == "tools"
    reg.add(tool("fs.write"), provider="tools")
    reg.remove("fs.read")
    assert [(e.provider, e.added, e.removed) for e in log.of(ToolsChanged)] == [
        ("tools", ("fs.read",), ()),
        ("tools", ("fs.write",), ()),
        ("tools", (), ("fs.read",)),
    ]
    assert [s.id for s in reg.specs()] == ["fs.write"]
    with pytest.raises(ToolNotFound):
        reg.remove("fs.read")


def test_duplicate_id_is_refused_and_names_both_providers(registry) -> None:
    reg, log = registry
    reg.add(tool("git.status"), provider="mcp:git")
    with pytest.raises(RegistrationError, match=r'tool "git\.status" is registered twice: by mcp:git and by other'):
        reg.add(tool("git.status"), provider="other")
    assert len(log.of(ToolsChanged)) == 1


def test_replace_provider_is_atomic_and_one_event(registry) -> None:
    reg, log = registry
    reg.replace_provider("mcp:git", [tool("git.status"), tool("git.log")])
    reg.add(tool("fs.read"), provider="tools")
    log.clear()
    reg.replace_provider("mcp:git", [tool("git.status", "v2"), tool("git.diff")])
    [event] = log.of(ToolsChanged)
    assert event.provider == "mcp:git"
    assert set(event.added) == {"git.diff", "git.status"}  # a replaced tool counts as added
    assert event.removed == ("git.log",)
    assert [s.id for s in reg.by_provider("mcp:git")] == ["git.diff", "git.status"]
    assert [s.id for s in reg.by_provider("tools")] == ["fs.read"]

    log.clear()
    with pytest.raises(RegistrationError):  # clash with another provider: nothing changes
        reg.replace_provider("mcp:git", [tool("git.blame"), tool("fs.read")])
    assert [s.id for s in reg.by_provider("mcp:git")] == ["git.diff", "git.status"]
    assert log.events == []

    reg.remove_provider("mcp:git")
    [event] = log.of(ToolsChanged)
    assert set(event.removed) == {"git.diff", "git.status"}
    assert [s.id for s in reg.specs()] == ["fs.read"]
    log.clear()
    reg.remove_provider("nothing-here")
    assert log.events == []  # no change, no event


def test_collisions_are_reported_once(registry) -> None:
    reg, log = registry
    reg.add(tool("a.b"), provider="p")
    reg.add(tool("a_b"), provider="q")
    [collision] = log.of(ToolNameCollision)
    assert collision.exported_name == "a_b"
    assert collision.canonical_ids == ("a.b", "a_b")
    assert reg.collisions == [("a.b", "a_b")]
    assert reg.resolve("a_b").spec.id == "a.b"  # the name stays with the tool that held it first
    hashed = reg.get_spec("a.b").exported_name
    assert hashed == "a_b"
    newcomer = next(s for s in reg.specs() if s.id == "a_b").exported_name
    assert newcomer.startswith("a_b_") and reg.resolve(newcomer).spec.id == "a_b"
    reg.add(tool("zzz"), provider="p")
    assert len(log.of(ToolNameCollision)) == 1  # not reported again
    reg.remove("a.b")
    assert reg.resolve(newcomer).spec.id == "a_b"  # a held name never changes, even when its rival leaves
    assert reg.resolve("a_b").spec.id == "a_b"  # the canonical id still reaches it
    assert reg.collisions == []


def test_tools_arriving_together_are_named_from_their_set(registry) -> None:
    reg, _ = registry
    with reg.batch():
        reg.add(tool("a.b"), provider="p")
        reg.add(tool("a_b"), provider="q")
    assert reg.resolve("a_b").spec.id == "a_b"  # the id that equals the name keeps it
    assert reg.get_spec("a.b").exported_name.startswith("a_b_")
    assert reg.collisions == [("a.b", "a_b")]


def test_resolve_and_lookups(registry) -> None:
    reg, _ = registry
    reg.add(tool("fs.read"), provider="tools")
    resolved = reg.resolve("fs_read")
    assert isinstance(resolved, Tool)
    assert resolved.spec.exported_name == "fs_read" and resolved.spec.provider == "tools"
    assert reg.get_spec("fs.read") == resolved.spec
    assert "fs.read" in reg and "fs_read" in reg and "fs.write" not in reg
    assert len(reg) == 1 and [s.id for s in reg] == ["fs.read"]
    with pytest.raises(ToolNotFound, match=r"no tool named 'fs\.raed'; did you mean 'fs\.read'\?"):
        reg.resolve("fs.raed")
    with pytest.raises(ToolNotFound, match=r"no tool named 'zzzzzz'$"):
        reg.resolve("zzzzzz")


def test_spec_defaults_and_conversion() -> None:
    spec = ToolSpec("x.y", domain="network", capability="write")
    assert spec.domain is Domain.NETWORK and spec.capability is Capability.WRITE
    assert spec.input_schema == {"type": "object", "properties": {}}
    assert spec.to_model_tool() == {"name": "x.y", "description": "", "input_schema": spec.input_schema}
    with pytest.raises(ValueError):
        ToolSpec("x", domain="moon")


def test_result_text_rendering() -> None:
    png = base64.b64encode(b"\x89PNG" + b"0" * 96).decode()
    result = ToolResult(
        content=[
            TextContent("hello"),
            ImageContent(png, "image/png"),
            AudioContent(base64.b64encode(b"abc").decode(), "audio/wav"),
            ResourceContent("file:///a.txt", text="inside"),
            ResourceContent("file:///b.bin", mime_type="application/octet-stream", blob="AAAA"),
            ResourceLink("file:///c.txt", name="c"),
        ]
    )
    assert isinstance(result.content, tuple)
    assert result.text.splitlines() == [
        "hello",
        "[image image/png, 100 bytes]",
        "[audio audio/wav, 3 bytes]",
        "inside",
        "[resource file:///b.bin application/octet-stream]",
        "[resource link file:///c.txt]",
    ]
    assert result.content[1].raw().startswith(b"\x89PNG")
    data = result.to_dict()
    assert data["is_error"] is False and data["structured"] is None
    assert data["content"][0] == {"text": "hello", "type": "text"}
    assert data["content"][1]["type"] == "image" and data["content"][1]["mime_type"] == "image/png"
    assert ToolResult(structured={"a": 1}).text == '{"a": 1}'


@pytest.mark.parametrize(
    ("value", "text", "structured"),
    [
        ("plain", "plain", None),
        (None, "", None),
        ({"a": 1}, '{"a": 1}', {"a": 1}),
        ([1, 2], "[1, 2]", {"result": [1, 2]}),
        (3, "3", {"result": 3}),
    ],
)
def test_as_result(value, text, structured) -> None:
    result = as_result(value)
    assert result.text == text and result.structured == structured
    assert as_result(result) is result


@pytest.mark.anyio
async def test_function_tool_sync_async_and_context() -> None:
    def add(a: int, b: int = 1) -> int:
        return a + b

    async def hello(name: str, context: ToolContext) -> str:
        await anyio.lowlevel.checkpoint()
        return f"hello {name} ({context.call_id})"

    ctx = ToolContext(call_id="c7")
    assert (await FunctionTool(ToolSpec("m.add"), add).call({"a": 2}, ctx)).structured == {"result": 3}
    assert (await FunctionTool(ToolSpec("m.hello"), hello).call({"name": "x"}, ctx)).text == "hello x (c7)"
    assert schema_from_signature(add) == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 1}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert schema_from_signature(hello)["properties"] == {"name": {"type": "string"}}


@pytest.mark.anyio
async def test_tools_change_while_the_runtime_runs(kairox_runtime, kairox_tool_provider: InMemoryToolProvider) -> None:
    log = EventLog(kairox_runtime.events)

    @kairox_tool_provider.tool("live.one", capability="read")
    def one() -> str:
        return "1"

    assert (await kairox_runtime.call_tool("live_one")).text == "1"
    kairox_tool_provider.remove("live.one")
    with pytest.raises(ToolNotFound):
        await kairox_runtime.call_tool("live_one")
    assert [(e.added, e.removed) for e in log.of(ToolsChanged)] == [(("live.one",), ()), ((), ("live.one",))]
