"""The built-in tools as a plugin: registration, declared specs, the [tools] section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tools_helpers import open_tools_runtime

from kairox import ToolContext
from kairox._host import build_plugin_host
from kairox._policy import Allow, Ask
from kairox._runtime import Runtime
from kairox.ext import BrokenSection
from kairox_tools import BUILTIN_TOOLS, TOOL_IDS, ToolEnv, ToolsConfig

pytestmark = pytest.mark.anyio

EXPECTED = {
    "fs.read": ("local", "read", ()),
    "fs.write": ("local", "write", ("path",)),
    "fs.list": ("local", "read", ()),
    "shell.exec": ("system", "execute", ("cwd",)),
    "search.grep": ("local", "read", ()),
}


async def test_the_provider_registers_the_five_tools_with_their_declarations(rt: Runtime) -> None:
    specs = {s.id: s for s in rt.tools.specs() if s.provider == "builtin-tools"}
    assert set(specs) == set(TOOL_IDS) == set(EXPECTED)
    for tid, (domain, capability, path_args) in EXPECTED.items():
        spec = specs[tid]
        assert (spec.domain.value, spec.capability.value, spec.path_arguments) == (domain, capability, path_args)
        assert spec.exported_name == tid.replace(".", "_")
        assert len(spec.description) > 60


@pytest.mark.parametrize("tool_id", sorted(EXPECTED))
async def test_input_schemas_are_usable_by_a_model(rt: Runtime, tool_id: str) -> None:
    schema = rt.tools.get_spec(tool_id).input_schema
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    props = schema["properties"]
    assert set(schema.get("required", ())) <= set(props)
    for name, prop in props.items():
        assert prop.get("type") in ("string", "integer", "number", "boolean", "object", "array"), name
        if "enum" in prop:
            assert prop.get("default", prop["enum"][0]) in prop["enum"]
    for name in rt.tools.get_spec(tool_id).path_arguments or ():
        assert props[name]["type"] == "string"
    model_tool = rt.tools.get_spec(tool_id).to_model_tool()
    assert model_tool["name"] == tool_id.replace(".", "_")


async def test_the_entry_point_is_installed(ws: Path, home: Path) -> None:
    host = build_plugin_host(env={"KAIROX_LOAD_PLUGINS": "tools"})
    names = [p.name for p in host.plugins()]
    assert names == ["tools"]
    assert not host.failures
    info = host.plugins()[0]
    assert info.distribution == "kairox-tools"
    assert set(info.hooks) == {"kairox_register_tool_providers", "kairox_register_config_sections"}


async def test_disabled_tools_are_not_registered(ws: Path, home: Path) -> None:
    async with open_tools_runtime(ws, home, [("t", {"tools": {"disabled": ["shell.exec"]}})]) as rt:
        assert not rt.config.errors
        ids = {s.id for s in rt.tools.specs()}
        assert "shell.exec" not in ids and "fs.write" in ids


async def test_tools_section_values_reach_the_tools(ws: Path, home: Path) -> None:
    # the user's config (a workspace's [tools], which names the shell, applies only once trusted)
    (ws / "f.txt").write_text("1\n2\n3\n")
    async with open_tools_runtime(ws, home, [("user", {"tools": {"read_lines": 2, "max_output_chars": 500}})]) as rt:
        assert rt.config.section("tools") == ToolsConfig(read_lines=2, max_output_chars=500)
        r = await rt.call_tool("fs.read", {"path": "f.txt", "line_numbers": False})
        assert r.text.splitlines()[:2] == ["1", "2"] and "offset=3" in r.text


@pytest.mark.parametrize(
    ("table", "path", "words"),
    [
        ({"shell_timeout": 0}, "tools.shell_timeout", "must be greater than 0"),
        ({"disabled": ["fs.delete"]}, "tools.disabled", "unknown tool 'fs.delete'"),
        ({"max_output_char": 10}, "tools.max_output_char", "did you mean 'max_output_chars'"),
        ({"grep_engine": "grep"}, "tools.grep_engine", "'auto', 'ripgrep', 'python'"),
        ({"read_lines": "many"}, "tools.read_lines", "expected an integer"),
    ],
)
async def test_bad_tools_config_is_reported_and_the_tools_are_off(
    ws: Path, home: Path, table: dict[str, Any], path: str, words: str
) -> None:
    async with open_tools_runtime(ws, home, [("doc", table and {"tools": table})]) as rt:
        errors = [e for e in rt.config.errors if e.path.startswith("tools")]
        assert len(errors) == 1, rt.config.errors
        assert errors[0].path == path and words in errors[0].message
        with pytest.raises(BrokenSection):
            rt.config.section("tools")  # not its defaults: a limit the user set must not vanish
        assert "fs.read" not in rt.tools
        assert any(words in line for line in rt.broken_parts()), rt.broken_parts()


async def test_stop_removes_the_tools(ws: Path, home: Path) -> None:
    async with open_tools_runtime(ws, home) as rt:
        assert "fs.read" in rt.tools
    assert "fs.read" not in rt.tools


async def test_decisions_of_the_builtin_tools_under_the_default_policy(rt: Runtime, ws: Path) -> None:
    decide = rt.policy.decide
    assert isinstance(decide(rt.tools.get_spec("fs.read"), {"path": "/etc/passwd"}), Allow)
    assert isinstance(decide(rt.tools.get_spec("search.grep"), {"pattern": "x", "path": "/"}), Allow)
    assert isinstance(decide(rt.tools.get_spec("fs.list"), {"path": "/"}), Allow)
    assert isinstance(decide(rt.tools.get_spec("fs.write"), {"path": "a.txt", "content": ""}), Allow)
    assert isinstance(decide(rt.tools.get_spec("fs.write"), {"path": "/etc/x", "content": ""}), Ask)
    assert isinstance(decide(rt.tools.get_spec("shell.exec"), {"command": "ls"}), Ask)


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("fs.read", {"path": "bad\x00name"}, "cannot use the path 'bad\\x00name'"),
        ("fs.write", {"path": "bad\x00name", "content": "x"}, "cannot use the path 'bad\\x00name'"),
        ("fs.list", {"path": "bad\x00name"}, "cannot use the path 'bad\\x00name'"),
        ("search.grep", {"pattern": "x", "path": "bad\x00name"}, "cannot use the path 'bad\\x00name'"),
        ("shell.exec", {"command": "true", "cwd": "bad\x00name"}, "cannot use the directory 'bad\\x00name'"),
    ],
)
async def test_a_path_the_os_cannot_resolve_is_an_error_result_of_every_tool(
    tool_env: ToolEnv, tool: str, arguments: dict[str, Any], message: str
) -> None:
    (cls,) = [c for c in BUILTIN_TOOLS if c.SPEC.id == tool]
    result = await cls(tool_env).call(arguments, ToolContext())
    assert result.is_error and result.text.startswith(message), result.text
