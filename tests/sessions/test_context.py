"""Turn context: instructions from hooks, pre_turn context, tool budget, session scope (the
instruction files kairox-agents reads: tests/agents/test_instructions.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import kairox
import kairox.ext
from kairox import ContextPiece, FunctionTool, ImageContent, TextContent, ToolResult, ToolSpec, hookimpl
from kairox_testing import make_plugin


def _open(ws: Path, home: Path, *plugins: object) -> Any:
    return kairox.Runtime.open(ws, home=home, plugins=list(plugins), load_entrypoints=False, env={})


class ContextPlugin:
    def __init__(self) -> None:
        self.prompts: list[str] = []

    @hookimpl
    def kairox_pre_turn(self, session: kairox.Session, prompt: str) -> list[object]:
        self.prompts.append(prompt)
        return ["plain text", ContextPiece("titled", title="status")]


class AsyncContextPlugin:
    @hookimpl
    async def kairox_pre_turn(self, session: kairox.Session, prompt: str) -> ContextPiece:
        await anyio.lowlevel.checkpoint()
        return ContextPiece(f"async for {prompt}", source="custom-source")


class BrokenContextPlugin:
    @hookimpl
    def kairox_pre_turn(self, session: kairox.Session, prompt: str) -> str:
        raise RuntimeError("boom")


@pytest.mark.anyio
async def test_pre_turn_context_is_labelled_and_a_failing_hook_is_reported(ws: Path, home: Path) -> None:
    plugin = ContextPlugin()
    events: list[kairox.Event] = []
    async with _open(ws, home, plugin, AsyncContextPlugin(), BrokenContextPlugin()) as rt:
        rt.events.subscribe(events.append, kairox.HookFailed)
        async with rt.session() as s:
            tc = await s.turn_context("fix the bug")
    assert plugin.prompts == ["fix the bug"]
    by_text = {p.text: p for p in tc.injected}
    assert by_text["plain text"].source == "ContextPlugin"
    assert by_text["titled"].source == "ContextPlugin" and by_text["titled"].title == "status"
    assert by_text["async for fix the bug"].source == "custom-source"
    assert len(tc.injected) == 3
    assert any("BrokenContextPlugin" in p and "boom" in p for p in tc.problems)
    assert [e.plugin for e in events if isinstance(e, kairox.HookFailed)] == ["BrokenContextPlugin"]
    assert "<!-- context from ContextPlugin status -->\ntitled" in tc.render()


def _registering(*providers: object) -> object:
    """An inline plugin that registers ``providers``."""

    def kairox_register_tool_providers(registrar: kairox.ext.Registrar[Any]) -> None:
        for provider in providers:
            registrar.add(provider)

    return make_plugin("providers", kairox_register_tool_providers=kairox_register_tool_providers)


class NoServersProvider:
    """A tool provider without servers: nothing to stop, no status."""

    async def stop(self) -> None:
        return None

    def status(self) -> list[kairox.ServerStatus]:
        return []


class InstructionsPlugin:
    """Gives ``answer`` from ``kairox_instructions`` and records the directory of each turn."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.cwds: list[Path] = []

    @hookimpl
    def kairox_instructions(self, session: kairox.Session, cwd: Path) -> Any:
        self.cwds.append(cwd)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


class RulesProvider(NoServersProvider):
    """A provider whose server gives instructions (as an MCP server's ``instructions``)."""

    name = "rules"

    async def start(self, runtime: kairox.Runtime) -> None:
        return None

    def instructions(self) -> list[tuple[str, str]]:
        return [("MCP server rules", "from the server")]


@pytest.mark.anyio
async def test_instructions_hooks_come_first_and_a_returned_exception_is_a_problem(ws: Path, home: Path) -> None:
    given = [
        kairox.ext.Instruction("from the plugin", "/rules.md", "workspace"),
        OSError("/secret.md: refused"),
        kairox.ext.Instruction("second", "/more.md", "directory"),
    ]
    plugin, odd = InstructionsPlugin(given), InstructionsPlugin("not an instruction")
    async with _open(ws, home, plugin, odd, _registering(RulesProvider())) as rt, rt.session() as s:
        tc = await s.turn_context("hi")
        assert [(i.text, i.scope) for i in tc.instructions] == [
            ("from the plugin", "workspace"),
            ("second", "directory"),
            ("from the server", "provider"),
        ]
        assert "/secret.md: refused" in tc.problems
        assert any("answered str, not an Instruction" in p for p in tc.problems)
        await s.turn_context("hi", cwd=ws / "pkg")
    assert plugin.cwds == [ws, ws / "pkg"]  # the workspace root unless the host names a directory


@pytest.mark.anyio
async def test_a_failing_instructions_hook_fails_the_turn(ws: Path, home: Path) -> None:
    """Instructions carry the user's rules: a turn without them does not go on."""
    events: list[kairox.Event] = []
    async with _open(ws, home, InstructionsPlugin(kairox.ConfigError("max_bytes: expected int"))) as rt:
        rt.events.subscribe(events.append, kairox.HookFailed)
        async with rt.session() as s:
            with pytest.raises(kairox.ConfigError, match="max_bytes: expected int"):
                await s.turn_context("hi")
    assert [e.plugin for e in events] == ["InstructionsPlugin"]


class ManyTools(NoServersProvider):
    name = "many"

    async def start(self, runtime: kairox.Runtime) -> None:
        for i in range(30):
            spec = ToolSpec(
                id=f"many.tool{i:02d}",
                description=f"tool number {i} " + "padding " * 20 + ("weather" if i == 17 else ""),
                domain="local",
                capability="read",
            )
            runtime.tools.add(FunctionTool(spec, lambda: "ok"), provider=self.name)


@pytest.mark.anyio
async def test_tool_budget_keeps_tools_search_and_the_rest_are_findable(ws: Path, home: Path) -> None:
    async with _open(ws, home, _registering(ManyTools())) as rt, rt.session() as s:
        full = await s.turn_context("x")
        assert len(full.tools) == 32 and full.omitted_tools == 0  # 30 + tools.search + skills.search
        small = await s.turn_context("x", tool_budget=400)
        names = [t["name"] for t in small.tools]
        assert names[:2] == ["tools_search", "skills_search"]
        assert 2 < len(names) < 32
        assert small.omitted_tools == 32 - len(names)
        budget_used = sum(len(json.dumps(t)) // 4 for t in small.tools)
        assert budget_used <= 400
        found = await s.call_tool("tools.search", {"query": "weather"})
        assert found.structured is not None
        assert [t["id"] for t in found.structured["tools"]] == ["many.tool17"]
        assert found.structured["tools"][0]["input_schema"]["type"] == "object"


class SessionHooks:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    @hookimpl
    def kairox_session_start(self, session: kairox.Session) -> None:
        self.calls.append(("start", session.id))

    @hookimpl
    def kairox_session_end(self, session: kairox.Session, reason: str) -> None:
        self.calls.append(("end", reason))


@pytest.mark.anyio
async def test_session_hooks_fire_once_on_cancel_and_error(ws: Path, home: Path) -> None:
    hooks = SessionHooks()
    async with _open(ws, home, hooks) as rt:
        with anyio.move_on_after(0.05):
            async with rt.session():
                await anyio.sleep(10)
        with pytest.raises(ValueError):
            async with rt.session():
                raise ValueError("x")
        async with rt.session() as s:
            s.approved.add("x")
            s.state["k"] = 1
        assert s.closed
    assert [c[0] for c in hooks.calls] == ["start", "end", "start", "end", "start", "end"]
    assert [c[1] for c in hooks.calls if c[0] == "end"] == ["cancelled", "error", "closed"]


def test_tool_result_limits_keep_small_results_and_cut_big_ones() -> None:
    small = ToolResult(content=(TextContent("hi"), ImageContent("aGk=", "image/png")))
    assert small.limited() is small
    big = ToolResult(content=(TextContent("y" * 50), ImageContent("A" * 400, "image/png")))
    cut = big.limited(max_text=10, max_binary=100)
    first, second = cut.content
    assert isinstance(first, TextContent) and first.text.startswith("y" * 10) and "40 more characters" in first.text
    assert isinstance(second, TextContent) and "image image/png of 300 bytes omitted" in second.text
    assert "[image image/png, 2 bytes]" in small.text


class HangingProvider(NoServersProvider):
    name = "hangs"

    async def start(self, runtime: kairox.Runtime) -> None:
        await anyio.sleep_forever()


class HangingPlugin:
    @hookimpl
    def kairox_register_tool_providers(self, registrar: kairox.ext.Registrar[Any], runtime: kairox.Runtime) -> None:
        runtime.provider_start_timeout = 0.2
        registrar.add(HangingProvider())
        registrar.add(ManyTools())


@pytest.mark.anyio
async def test_a_provider_that_never_finishes_starting_fails_alone(ws: Path, home: Path) -> None:
    with anyio.fail_after(10):
        async with _open(ws, home, HangingPlugin()) as rt:
            states = {p.name: p for p in rt.status().providers}
            assert states["hangs"].state == "failed"
            assert "did not finish starting within 0.2 s" in states["hangs"].error
            assert states["many"].state == "ready"
            assert not rt.status().ok
            assert (await rt.call_tool("many.tool01", {})).text == "ok"
