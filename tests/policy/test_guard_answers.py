"""What a guard (``kairox_pre_tool_call``) answers, and what the call pipeline does with it.

A guard says yes with ``None`` (or a dict of new arguments), no with ``kairox.Block``, and
"ask the user first" with ``kairox.Ask``. Any other answer is a guard that did not say yes:
the call is blocked, naming what it answered. Each test writes a real file with the
built-in ``fs.write`` (which the policy allows inside the workspace) and checks whether it
was written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio.lowlevel
import pytest
from shared_helpers import open_with_builtin_tools as opened

import kairox
from kairox import Ask, Block, PolicyDenied, ToolCall
from kairox_testing import Approvals, make_plugin

pytestmark = pytest.mark.anyio

WRITE = {"path": "a.txt", "content": "written"}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path.resolve()


# -- an answer that is no answer blocks -------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        (False, "False"),
        ("deny: secrets", "'deny: secrets'"),
        (PermissionError("no"), "PermissionError('no')"),
        (0, "0"),
        ([], "[]"),
        (kairox.Allow(), "Allow(reason='', kind='allow')"),
    ],
    ids=["false", "string", "exception", "zero", "empty-list", "allow"],
)
async def test_a_guard_answering_anything_else_blocks_the_call_naming_the_answer(
    ws: Path, answer: Any, shown: str
) -> None:
    """A guard's answer that is neither None, a dict, a Block nor an Ask is no "go on": it
    blocks the call, naming the answer. The attack: a guard returning ``False`` (or a string
    meant as a reason), read as "go on", lets the write happen."""

    def odd(call: ToolCall) -> Any:
        return answer

    async def async_odd(call: ToolCall) -> Any:
        await anyio.lowlevel.checkpoint()
        return answer

    for guard in (odd, async_odd):
        async with opened(ws, make_plugin("odd", kairox_pre_tool_call=guard)) as rt:
            with pytest.raises(PolicyDenied) as info:
                await rt.call_tool("fs.write", WRITE)
        assert not (ws / "a.txt").exists()
        assert info.value.reason == (
            f"blocked by a hook: the guard of odd answered {shown}, which is no answer (a guard returns "
            "None, a dict of arguments, kairox.Block or kairox.Ask)"
        )


async def test_a_run_time_hook_answering_nonsense_blocks_too(ws: Path) -> None:
    async with opened(ws) as rt:
        rt.hooks.add("pre_tool_call", lambda call: "ok", source="script")
        with pytest.raises(PolicyDenied, match=r"the guard of script answered 'ok', which is no answer"):
            await rt.call_tool("fs.write", WRITE)
    assert not (ws / "a.txt").exists()


async def test_a_nonsense_answer_does_not_hide_a_block_or_a_rewrite(ws: Path) -> None:
    def rewrite(call: ToolCall) -> dict[str, Any]:
        return {**call.arguments, "content": "rewritten"}

    def no(call: ToolCall) -> Block:
        return Block("no writes")

    async with opened(ws, make_plugin("rewrite", kairox_pre_tool_call=rewrite)) as rt:
        assert not (await rt.call_tool("fs.write", WRITE)).is_error
    assert (ws / "a.txt").read_text() == "rewritten"
    # pluggy's order: the plugin registered last runs first, so "no" answers before "odd"
    plugins = [make_plugin("odd", kairox_pre_tool_call=lambda call: False), make_plugin("no", kairox_pre_tool_call=no)]
    async with opened(ws, *plugins) as rt:
        with pytest.raises(PolicyDenied, match=r"^fs.write: blocked by a hook: no writes$"):
            await rt.call_tool("fs.write", {"path": "b.txt", "content": "x"})
    assert not (ws / "b.txt").exists()


# -- Ask: the user is asked first --------------------------------------------------------------------


def asks(call: ToolCall) -> Ask:
    return Ask("writes need a look")


async def test_ask_without_an_approver_refuses_the_call_the_policy_allowed(ws: Path) -> None:
    async with opened(ws, make_plugin("asker", kairox_pre_tool_call=asks)) as rt:
        with pytest.raises(PolicyDenied) as info:
            await rt.call_tool("fs.write", WRITE)
    assert not (ws / "a.txt").exists()
    assert info.value.reason == (
        "needs approval (a hook asks: writes need a look), and no approver is available (non-interactive)"
    )


async def test_ask_puts_the_call_to_the_approver_on_every_call(ws: Path) -> None:
    approvals = Approvals(kairox.ApprovalAnswer.ALLOW_SESSION)
    async with opened(ws, make_plugin("asker", kairox_pre_tool_call=asks), approver=approvals) as rt:
        assert not (await rt.call_tool("fs.write", WRITE)).is_error
        # "allow for the session" is the policy's answer: the hook asks again
        assert not (await rt.call_tool("fs.write", {"path": "b.txt", "content": "again"})).is_error
        approvals.answer = kairox.ApprovalAnswer.DENY
        with pytest.raises(PolicyDenied, match=r"the user declined \(a hook asks: writes need a look\)"):
            await rt.call_tool("fs.write", {"path": "c.txt", "content": "no"})
    assert (ws / "a.txt").read_text() == "written" and (ws / "b.txt").exists() and not (ws / "c.txt").exists()
    assert [(r.tool.id, r.reason, r.arguments["path"]) for r in approvals.requests] == [
        ("fs.write", "a hook asks: writes need a look", p) for p in ("a.txt", "b.txt", "c.txt")
    ]


async def test_allowing_a_hook_s_ask_for_the_session_does_not_skip_the_policy_s_ask(ws: Path) -> None:
    """The attack: a guard asks about a harmless write, the user answers "allow for the
    session", and a later write outside the workspace (which the policy asks about) must still
    be put to the user, not ride on the hook's answer."""
    outside = ws.parent / "outside.txt"
    approvals = Approvals(kairox.ApprovalAnswer.ALLOW_SESSION)

    def asks_inside(call: ToolCall) -> Ask | None:
        return Ask("a look first") if call.arguments["path"] == "a.txt" else None

    async with opened(ws, make_plugin("asker", kairox_pre_tool_call=asks_inside), approver=approvals) as rt:
        assert not (await rt.call_tool("fs.write", WRITE)).is_error
        approvals.answer = kairox.ApprovalAnswer.DENY
        with pytest.raises(PolicyDenied, match="the user declined"):
            await rt.call_tool("fs.write", {"path": str(outside), "content": "escaped"})
    assert not outside.exists()
    assert [r.reason.startswith("a hook asks") for r in approvals.requests] == [True, False]


async def test_a_block_wins_over_an_ask(ws: Path) -> None:
    approvals = Approvals(True)
    plugins = [
        make_plugin("blocker", kairox_pre_tool_call=lambda call: Block("never")),
        make_plugin("asker", kairox_pre_tool_call=asks),
    ]
    async with opened(ws, *plugins, approver=approvals) as rt:
        with pytest.raises(PolicyDenied, match=r"^fs.write: blocked by a hook: never$"):
            await rt.call_tool("fs.write", WRITE)
    assert approvals.requests == [] and not (ws / "a.txt").exists()
