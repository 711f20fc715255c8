"""Hooks around a call and a session: the defined order, failures, blocks, and re-decisions,
with the real built-in tools and real files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from shared_helpers import open_with_builtin_tools as opened

import kairox
from kairox._events import (
    Event,
    HookFailed,
    SessionEnded,
    SessionStarted,
    ToolCallFinished,
    ToolCallStarted,
)
from kairox._hooks import Block, ToolCall
from kairox._runtime import ApprovalAnswer, ApprovalRequest, Runtime
from kairox._session import Session
from kairox._tools import ToolResult
from kairox.errors import PolicyDenied
from kairox.hookspecs import hookimpl
from kairox_testing import Approvals, make_plugin

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "escape").symlink_to(tmp_path)  # a way out of the workspace
    return path.resolve()


class Recorder:
    """Collects hook calls and events in one list, in the order they happen."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def event(self, event: Event) -> None:
        if isinstance(event, (SessionStarted, SessionEnded, ToolCallStarted, ToolCallFinished, HookFailed)):
            detail = getattr(event, "reason", None) or getattr(event, "outcome", None) or ""
            self.log.append(f"event:{event.kind}{':' + detail if detail else ''}")

    def plugin(self, name: str, *, tryfirst: bool = False, trylast: bool = False) -> object:
        log = self.log

        class Plugin:
            __name__ = name

            @hookimpl(tryfirst=tryfirst, trylast=trylast)
            def kairox_session_start(self, session: Session) -> None:
                log.append(f"{name}:session_start")

            @hookimpl(tryfirst=tryfirst, trylast=trylast)
            def kairox_pre_turn(self, session: Session, prompt: str) -> str:
                log.append(f"{name}:pre_turn")
                return f"{name} context"

            @hookimpl(tryfirst=tryfirst, trylast=trylast)
            def kairox_pre_tool_call(self, call: ToolCall) -> dict[str, Any]:
                log.append(f"{name}:pre_tool_call")
                return {**call.arguments, "content": call.arguments["content"] + f"+{name}"}

            @hookimpl(tryfirst=tryfirst, trylast=trylast)
            def kairox_post_tool_call(self, call: ToolCall, result: ToolResult) -> None:
                log.append(f"{name}:post_tool_call:{call.arguments['content']}")

            @hookimpl(tryfirst=tryfirst, trylast=trylast)
            def kairox_session_end(self, session: Session, reason: str) -> None:
                log.append(f"{name}:session_end:{reason}")

        return Plugin()


async def test_the_defined_order_of_one_session(ws: Path) -> None:
    rec = Recorder()
    plugins = [rec.plugin("first", tryfirst=True), rec.plugin("a"), rec.plugin("b"), rec.plugin("last", trylast=True)]
    approvals = Approvals(ApprovalAnswer.ALLOW_ONCE)
    async with opened(ws, *plugins) as rt:
        rt.events.subscribe(rec.event)
        rt.hooks.add("pre_tool_call", lambda call: rec.log.append("script:pre_tool_call"), source="script")
        rt.hooks.add("post_tool_call", lambda call, result: rec.log.append("script:post_tool_call"), source="script")

        def approve(request: ApprovalRequest) -> bool:
            rec.log.append(f"approver:{request.tool.id}")
            return bool(approvals(request))

        async with rt.session(approver=approve) as s:
            context = await s.turn_context("hello")
            assert [p.text for p in context.injected] == ["first context", "b context", "a context", "last context"]
            result = await s.call_tool("fs.write", {"path": "out.txt", "content": "x"})
            assert not result.is_error
            rec.log.append("body-done")
    content = "x+first+b+a+last"
    assert (ws / "out.txt").read_text() == content
    assert rec.log == [
        "first:session_start",
        "b:session_start",
        "a:session_start",
        "last:session_start",
        "event:SessionStarted",
        "first:pre_turn",
        "b:pre_turn",
        "a:pre_turn",
        "last:pre_turn",
        "event:ToolCallStarted",
        # fs.write inside the workspace is allowed: the approver is not asked; the hooks'
        # rewrites stay inside, so the policy decides again and still allows
        "first:pre_tool_call",
        "b:pre_tool_call",
        "a:pre_tool_call",
        "last:pre_tool_call",
        "script:pre_tool_call",
        f"first:post_tool_call:{content}",
        f"b:post_tool_call:{content}",
        f"a:post_tool_call:{content}",
        f"last:post_tool_call:{content}",
        "script:post_tool_call",
        "event:ToolCallFinished:ok",
        "body-done",
        "first:session_end:closed",
        "b:session_end:closed",
        "a:session_end:closed",
        "last:session_end:closed",
        "event:SessionEnded:closed",
    ]
    assert approvals.requests == []


async def test_a_rewrite_that_leaves_the_workspace_is_decided_again(ws: Path) -> None:
    def redirect(call: ToolCall) -> dict[str, Any]:
        return {**call.arguments, "path": "escape/stolen.txt"}  # through a symlink out of the workspace

    stolen = ws.parent / "stolen.txt"
    async with opened(ws, make_plugin("redirect", kairox_pre_tool_call=redirect)) as rt:
        with pytest.raises(PolicyDenied) as info:
            await rt.call_tool("fs.write", {"path": "fine.txt", "content": "x"})
        assert "writes outside the writable roots" in info.value.reason
        assert not stolen.exists() and not (ws / "fine.txt").exists()
        approvals = Approvals(ApprovalAnswer.DENY)
        with pytest.raises(PolicyDenied, match="declined"):
            await rt.call_tool("fs.write", {"path": "fine.txt", "content": "x"}, approver=approvals)
        [request] = approvals.requests
        assert request.arguments == {"path": "escape/stolen.txt", "content": "x"}  # the approver sees the rewrite
        assert not stolen.exists()


async def test_an_in_place_rewrite_is_decided_again_too(ws: Path) -> None:
    def mutate(call: ToolCall) -> None:
        call.arguments["path"] = "/etc/kairox-in-place"

    async with opened(ws, make_plugin("mutate", kairox_pre_tool_call=mutate)) as rt:
        with pytest.raises(PolicyDenied, match="outside the writable roots"):
            await rt.call_tool("fs.write", {"path": "fine.txt", "content": "x"})
    assert not await anyio.Path("/etc/kairox-in-place").exists()


async def test_hooks_never_see_a_call_the_policy_refused(ws: Path) -> None:
    seen: list[str] = []
    plugin = make_plugin(
        "watch",
        kairox_pre_tool_call=lambda call: seen.append("pre"),
        kairox_post_tool_call=lambda call, result: seen.append("post"),
    )
    async with opened(ws, plugin) as rt:
        with pytest.raises(PolicyDenied):
            await rt.call_tool("shell.exec", {"command": "true"})  # asks; nobody to ask
        with pytest.raises(PolicyDenied):
            await rt.call_tool("fs.write", {"path": "/etc/x", "content": ""})
    assert seen == []


async def test_a_raising_guard_blocks_the_call_naming_itself(ws: Path) -> None:
    """Fail closed: a guard that raises is a guard that did not say yes."""

    def boom(call: ToolCall) -> None:
        raise RuntimeError("hook bug")

    async def async_boom(call: ToolCall) -> None:
        await anyio.lowlevel.checkpoint()
        raise ValueError("async hook bug")

    for guard in (boom, async_boom):
        async with opened(ws, make_plugin("buggy", kairox_pre_tool_call=guard)) as rt:
            failures: list[HookFailed] = []
            rt.events.subscribe(failures.append, HookFailed)
            with pytest.raises(
                PolicyDenied, match=r"blocked by a hook: the guard of buggy failed \((Runtime|Value)Error"
            ):
                await rt.call_tool("fs.write", {"path": "a.txt", "content": "orig"})
        assert not (ws / "a.txt").exists()
        assert [(f.hook, f.plugin) for f in failures] == [("kairox_pre_tool_call", "buggy")]


async def test_a_guard_that_does_not_answer_in_time_blocks_the_call(ws: Path) -> None:
    async def stuck(call: ToolCall) -> None:
        await anyio.sleep(3600)

    async with opened(ws, make_plugin("stuck", kairox_pre_tool_call=stuck)) as rt:
        rt.hook_timeout = 0.2
        with pytest.raises(
            PolicyDenied, match=r"the guard of stuck failed \(TimeoutError: did not answer within 0.2 s\)"
        ):
            await rt.call_tool("fs.write", {"path": "a.txt", "content": "x"})
    assert not (ws / "a.txt").exists()


async def test_an_advisory_hook_that_raises_is_reported_and_the_call_goes_on(ws: Path) -> None:
    @kairox.advisory
    def boom(call: ToolCall) -> None:
        raise RuntimeError("hook bug")

    async def async_boom(call: ToolCall, result: ToolResult) -> None:
        await anyio.lowlevel.checkpoint()
        raise ValueError("post bug")

    def rewrite(call: ToolCall) -> dict[str, Any]:
        return {**call.arguments, "content": "rewritten"}

    plugins = [
        make_plugin("rewrite", kairox_pre_tool_call=rewrite),
        make_plugin("buggy", kairox_pre_tool_call=boom, kairox_post_tool_call=async_boom),
    ]
    async with opened(ws, *plugins) as rt:
        failures: list[HookFailed] = []
        rt.events.subscribe(failures.append, HookFailed)
        result = await rt.call_tool("fs.write", {"path": "a.txt", "content": "orig"})
        remove = rt.hooks.add("pre_tool_call", boom, source="script", advisory=True)
        await rt.call_tool("fs.write", {"path": "b.txt", "content": "orig"})
        remove()
        rt.hooks.add("pre_tool_call", _raise, source="strict")  # not advisory: it blocks
        with pytest.raises(PolicyDenied, match="the guard of strict failed"):
            await rt.call_tool("fs.write", {"path": "c.txt", "content": "orig"})
    assert not result.is_error
    assert (ws / "a.txt").read_text() == "rewritten"  # the hook after the failing one still ran
    assert (ws / "b.txt").exists() and not (ws / "c.txt").exists()
    assert [(f.hook, f.plugin, f.error) for f in failures[:2]] == [
        ("kairox_pre_tool_call", "buggy", "RuntimeError: hook bug"),
        ("kairox_post_tool_call", "buggy", "ValueError: post bug"),
    ]


def _raise(call: ToolCall) -> None:
    raise RuntimeError("run-time hook bug")


async def test_block_refuses_on_purpose_even_after_a_failing_advisory_hook(ws: Path) -> None:
    @kairox.advisory
    def boom(call: ToolCall) -> None:
        raise RuntimeError("unrelated bug")

    def guard(call: ToolCall) -> Block | None:
        return Block("no writes to secrets") if "secret" in call.arguments["path"] else None

    posts: list[str] = []
    plugins = [
        make_plugin("guard", kairox_pre_tool_call=guard),
        make_plugin("buggy", kairox_pre_tool_call=boom),
        make_plugin("audit", kairox_post_tool_call=lambda call, result: posts.append(call.arguments["path"])),
    ]
    async with opened(ws, *plugins) as rt:
        finished: list[ToolCallFinished] = []
        rt.events.subscribe(finished.append, ToolCallFinished)
        with pytest.raises(PolicyDenied, match="blocked by a hook: no writes to secrets"):
            await rt.call_tool("fs.write", {"path": "secret.txt", "content": "x"})
        await rt.call_tool("fs.write", {"path": "public.txt", "content": "x"})
    assert not (ws / "secret.txt").exists() and (ws / "public.txt").exists()
    assert posts == ["public.txt"]
    assert [(f.outcome, f.detail) for f in finished] == [
        ("denied", "blocked by a hook: no writes to secrets"),
        ("ok", ""),
    ]


async def test_session_hooks_run_once_when_they_raise_and_when_the_session_fails(ws: Path) -> None:
    calls: list[str] = []

    def start(session: Session) -> None:
        calls.append("start")
        raise RuntimeError("start bug")

    def end(session: Session, reason: str) -> None:
        calls.append(f"end:{reason}")
        raise RuntimeError("end bug")

    async with opened(ws, make_plugin("s", kairox_session_start=start, kairox_session_end=end)) as rt:
        failures: list[HookFailed] = []
        rt.events.subscribe(failures.append, HookFailed)
        async with rt.session() as s:
            assert not s.closed  # a failing start hook does not stop the session
        with pytest.raises(KeyError):
            async with rt.session():
                raise KeyError("boom")
        with anyio.move_on_after(0.05):
            async with rt.session():
                await anyio.sleep(5)
    assert calls == ["start", "end:closed", "start", "end:error", "start", "end:cancelled"]
    assert [f.hook for f in failures] == ["kairox_session_start", "kairox_session_end"] * 3


async def _approver_never_called(request: ApprovalRequest) -> bool:
    raise AssertionError(f"the approver was asked about {request.tool.id}: {request.reason}")


async def test_a_deny_never_reaches_the_approver(ws: Path) -> None:
    (ws / "kairox.toml").write_text('[policy.rules]\n"fs.write" = "deny"\n', encoding="utf-8")
    async with opened(ws, approver=_approver_never_called) as rt:
        with pytest.raises(PolicyDenied, match="denied by a rule"):
            await rt.call_tool("fs.write", {"path": "a.txt", "content": ""})
        # allowed calls do not ask either
        assert not (await rt.call_tool("fs.read", {"path": "kairox.toml"})).is_error


async def test_allow_for_session_covers_the_tool_for_that_session_only(ws: Path) -> None:
    outside = ws.parent
    approvals = Approvals(ApprovalAnswer.ALLOW_SESSION)
    async with opened(ws) as rt:
        async with rt.session(approver=approvals) as s:
            await s.call_tool("fs.write", {"path": str(outside / "1.txt"), "content": ""})
            await s.call_tool("fs.write", {"path": str(outside / "2.txt"), "content": ""})
        assert [r.reason for r in approvals.requests] == ["writes outside the writable roots"]
        assert approvals.requests[0].session_id == s.id
        with pytest.raises(PolicyDenied, match="no approver"):
            await rt.call_tool("fs.write", {"path": str(outside / "3.txt"), "content": ""})
    assert (outside / "1.txt").exists() and (outside / "2.txt").exists() and not (outside / "3.txt").exists()


async def test_a_nested_in_place_rewrite_is_decided_again(ws: Path) -> None:
    """A tool that declares no path arguments is searched at any depth; a hook that
    changes a nested path in place must not slip past the second decision."""
    from kairox._tools import FunctionTool, ToolSpec

    written: list[str] = []

    def apply_edits(edits: list[dict[str, str]]) -> str:
        written.extend(e["path"] for e in edits)
        return "ok"

    edit = FunctionTool(ToolSpec("mem.edit", domain="local", capability="write"), apply_edits)

    class Provider:
        name = "mem"

        async def start(self, runtime: Runtime) -> None:
            runtime.tools.replace_provider(self.name, [edit])

        async def stop(self) -> None:
            pass

        def status(self) -> list[Any]:
            return []

    def mutate(call: ToolCall) -> None:
        call.arguments["edits"][0]["path"] = "/etc/kairox-nested"

    provider = make_plugin("mem", kairox_register_tool_providers=lambda registrar: registrar.add(Provider()))
    async with opened(ws, provider, make_plugin("mutate", kairox_pre_tool_call=mutate)) as rt:
        with pytest.raises(PolicyDenied, match="outside the writable roots"):
            await rt.call_tool("mem.edit", {"edits": [{"path": "inside.txt"}]})
    assert written == []
