"""What a plugin's CLI command shows when its tool call is denied or fails, and config
problems on every command that opens a runtime: a blocked call in a plugin command
ends in one line and exit 1, not a traceback, and a broken config section is named by
every command, not only ``kairox status``."""

from __future__ import annotations

from typing import Any

import click
import pytest

from kairox import Block
from kairox.errors import ToolError
from kairox_cli import run_with_runtime
from kairox_testing import InMemoryToolProvider, KairoxHarness, make_plugin


@pytest.fixture
def harness(kairox_harness: KairoxHarness) -> KairoxHarness:
    provider = InMemoryToolProvider("mem")

    @provider.tool("mem.greet", domain="local", capability="read")
    def greet(name: str) -> str:
        return f"hello {name}"

    @provider.tool("mem.crash", domain="local", capability="read")
    def crash() -> str:
        raise ToolError("the backend is down")

    def guard(call: Any) -> Block | None:
        if call.arguments.get("name") == "voldemort":
            return Block("that name is not to be spoken")
        return None

    def commands(cli: click.Group) -> None:
        @cli.command()
        @click.argument("tool")
        @click.argument("name", required=False)
        @click.pass_context
        def call(ctx: click.Context, tool: str, name: str | None) -> None:
            async def go(rt: Any) -> str:
                return (await rt.call_tool(tool, {"name": name} if name else {})).text

            click.echo(run_with_runtime(ctx, go))

    kairox_harness.register(provider.plugin())
    kairox_harness.register(make_plugin("guard", kairox_pre_tool_call=guard, kairox_register_commands=commands))
    return kairox_harness


def test_a_plugin_command_works(harness: KairoxHarness) -> None:
    result = harness.cli("call", "mem.greet", "ann")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "hello ann\n", "")


def test_a_call_blocked_by_a_hook_is_one_line_and_exit_1(harness: KairoxHarness) -> None:
    result = harness.cli("call", "mem.greet", "voldemort")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "kairox: denied: mem.greet: blocked by a hook: that name is not to be spoken\n"


def test_a_failing_tool_is_one_line_and_exit_1(harness: KairoxHarness) -> None:
    result = harness.cli("call", "mem.crash")
    assert result.exit_code == 1
    assert result.stderr.startswith("kairox: failed: ") and "the backend is down" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_tool_is_one_line_and_exit_1(harness: KairoxHarness) -> None:
    result = harness.cli("call", "mem.nope")
    assert result.exit_code == 1
    assert result.stderr.startswith("kairox: ") and "mem.nope" in result.stderr
    assert "Traceback" not in result.stderr


def test_config_problems_are_shown_by_every_command_that_opens_a_runtime(harness: KairoxHarness) -> None:
    config = harness.write_config('[policy]\napproval = "sometimes"\n')
    expected = f"kairox: config problem: {config}: policy.approval: expected one of"
    listed = harness.cli("tools", "list")
    assert listed.exit_code == 0 and listed.stderr.startswith(expected), listed.stderr
    # a policy that does not validate refuses every call, naming the field (never its defaults)
    called = harness.cli("call", "mem.greet", "ann")
    assert called.exit_code == 1 and called.stderr.startswith(expected), called.stderr
    assert "the policy does not validate" in called.stderr
    # the commands that report config problems themselves say it once, in their own words
    status = harness.cli("status")
    assert status.exit_code == 1
    assert "config problem" not in status.stderr and f"! {config}: policy.approval" in status.stdout
    shown = harness.cli("config", "show")
    assert "config problem" not in shown.stderr and shown.stderr.startswith(f"! {config}: policy.approval")
