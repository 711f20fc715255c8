"""docs/cli.md documents the key names of every core --json output; the real output must match them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kairox import ContextPiece, FunctionTool, ServerState, ServerStatus, ToolSpec
from kairox.ext import SkillError
from kairox_testing import InMemoryToolProvider, KairoxHarness, make_plugin

CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"

#: keys whose values are free-form data (a config value, a tool's structured result, a JSON schema)
FREE_FORM = {"value", "structured", "input_schema"}

COMMANDS = {
    "status": (("status", "--json"), 1),
    "plugins": (("plugins", "--json"), 0),
    "config show": (("config", "show", "--json"), 0),
    "tools list": (("tools", "list", "--json"), 0),
    "tools call": (("tools", "call", "doc.echo", "--args", '{"text": "hello"}', "--json"), 0),
    "tools call (failed)": (("tools", "call", "doc.run", "--json"), 1),
    "context": (("context", "fix the test", "--json"), 0),
    "agents list": (("agents", "list", "--json"), 0),
}


def documented() -> dict[str, Any]:
    text = CLI_DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- json: (.+?) -->\s*```json\n(.*?)```", text, re.S)
    return {name: json.loads(body) for name, body in blocks}


def mismatches(doc: Any, actual: Any, path: str = "$") -> list[str]:
    if isinstance(doc, dict):
        if not isinstance(actual, dict):
            return [f"{path}: documented an object, got {type(actual).__name__}"]
        placeholders = [k for k in doc if k.startswith("<")]
        if placeholders:
            return [
                p for key, value in actual.items() for p in mismatches(doc[placeholders[0]], value, f"{path}.{key}")
            ]
        problems = []
        if set(doc) != set(actual):
            problems.append(f"{path}: documented keys {sorted(doc)}, actual keys {sorted(actual)}")
        for key in doc.keys() & actual.keys():
            if key not in FREE_FORM:
                problems += mismatches(doc[key], actual[key], f"{path}.{key}")
        return problems
    if isinstance(doc, list):
        if not isinstance(actual, list):
            return [f"{path}: documented a list, got {type(actual).__name__}"]
        if not doc:
            return []
        problems = []
        for i, item in enumerate(actual):  # each element must have the shape of one documented element
            attempts = [mismatches(example, item, f"{path}[{i}]") for example in doc]
            if all(attempts):
                fewest: list[str] = min(attempts, key=len)
                problems += fewest
        return problems
    return []


@pytest.fixture
def harness(kairox_harness: KairoxHarness) -> KairoxHarness:
    provider = InMemoryToolProvider(
        "doc",
        [
            FunctionTool(ToolSpec("doc.echo", "echo", domain="local", capability="read"), lambda text: text),
            FunctionTool(ToolSpec("doc.run", "runs", domain="local", capability="execute"), lambda: "ran"),
            FunctionTool(ToolSpec("doc.write", "writes", domain="local", capability="write"), lambda path: path),
        ],
        servers=[ServerStatus("git", "mcp", ServerState.READY, tools=2, source="kairox.toml")],
    )
    broken = InMemoryToolProvider("down", start_error=OSError("unreachable"))

    def fail(registrar: Any) -> None:
        raise RuntimeError("cannot register")

    kairox_harness.register(provider.plugin(), name="doc-plugin")
    kairox_harness.register(broken.plugin(), name="down-plugin")
    kairox_harness.register(make_plugin("failing", kairox_register_manifest_formats=fail))  # fails in a runtime
    kairox_harness.register(make_plugin("unknown-hook", kairox_no_such_hook=lambda: None))  # fails at load
    kairox_harness.register(make_plugin("context", kairox_pre_turn=lambda prompt: ContextPiece(f"about {prompt}")))
    import kairox_agents.hooks

    kairox_harness.register(kairox_agents.hooks)  # `kairox agents list` is kairox-agents' command

    class BadSkills:
        name = "bad-skills"

        def scan(self, runtime: Any) -> list[Any]:
            return [SkillError("description: required field is missing", file="bad.md", line=2, field="description")]

    kairox_harness.register(
        make_plugin("bad-skills", kairox_register_skill_sources=lambda registrar, runtime: registrar.add(BadSkills()))
    )
    # a workspace value that does not apply (it would loosen the policy), and a server held until trusted
    kairox_harness.write_config(
        '[policy]\napproval = "on_request"\nsandbox = "danger_full_access"\n[serve]\nbogus = 1\n'
        '[policy.rules]\n"gti.*" = "deny"\n'  # a rule naming no tool: a warning
    )
    mcp_json = {"mcpServers": {"search": {"command": "npx", "args": ["-y", "search-mcp"], "env": {"SEARCH_TOKEN": ""}}}}
    (kairox_harness.workspace / ".mcp.json").write_text(json.dumps(mcp_json))
    (kairox_harness.workspace / "AGENTS.md").write_text("Run the tests before committing.\n")
    agents = kairox_harness.workspace / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews\ntools: Read, Grep\nmodel: sonnet\n---\nReview.\n"
    )
    (agents / "draft.md").write_text("---\nname: draft\n---\nno description\n")
    return kairox_harness


def test_every_core_json_output_is_documented() -> None:
    assert set(documented()) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_output_matches_the_documented_keys(harness: KairoxHarness, name: str) -> None:
    args, code = COMMANDS[name]
    result = harness.cli(*args)
    assert result.exit_code == code, (result.stdout, result.stderr)
    actual = json.loads(result.stdout)
    assert mismatches(documented()[name], actual) == []
    # the lists the documentation shows elements of are not empty here, so their elements were checked
    for key, value in documented()[name].items():
        # not_loaded: the harness loads no entry points (tests/kernel/test_distributions.py checks its shape);
        # not_offered: its providers withhold nothing (tests/mcp/test_callbacks*.py show a real one)
        empty_here = ("skills", "matched_skills", "not_loaded", "not_offered")
        if isinstance(value, list) and value and key not in empty_here:
            assert actual[key], f"{name}: {key} is empty in this run"


def test_the_comparison_notices_a_renamed_key() -> None:
    assert mismatches({"a": [{"b": 1}]}, {"a": [{"c": 1}]}) == ["$.a[0]: documented keys ['b'], actual keys ['c']"]
    assert mismatches({"<k>": {"x": 1}}, {"one": {"x": 2}, "two": {"y": 2}}) != []
    assert mismatches([{"a": 1}, {"a": 1, "b": 2}], [{"a": 0}, {"a": 0, "b": 0}]) == []
    assert mismatches([{"a": 1}], [{"a": 0}, {"a": 0, "b": 0}]) == [
        "$[1]: documented keys ['a'], actual keys ['a', 'b']"
    ]
