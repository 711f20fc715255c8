"""Claude (and Codex) hooks: SessionStart / UserPromptSubmit output reaches the turn context, `if`
conditions, `async`, `timeout`, PostToolUseFailure, and one warning per event kairox has no equivalent for.
Every hook here is a real script run as a subprocess."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from plugin_helpers import write_executable, write_plugin

import kairox_tools.hooks
from kairox import Block, ContextPiece, PolicyDenied, Runtime, ToolCall, ToolResult, ToolSpec
from kairox_manifests.errors import ManifestError
from kairox_manifests.events import BundleHookFailed, BundleHookRan
from kairox_manifests.formats import ClaudeFormat, CodexFormat
from kairox_manifests.hookscripts import ScriptHook, context_deliverer, session_context
from kairox_manifests.model import HookDecl
from kairox_testing import Approvals, EventLog, KairoxHarness

pytestmark = pytest.mark.anyio

BUNDLES = Path(__file__).resolve().parent.parent / "fixtures" / "bundles"


def copy_bundle(name: str, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(BUNDLES / name, dest)
    return dest


def texts(pieces: list[ContextPiece]) -> list[str]:
    return [p.text for p in pieces]


def shell_call(rt: Runtime, command: str, session: Any = None) -> ToolCall:
    return ToolCall(ToolSpec("shell.exec", exported_name="shell_exec"), {"command": command}, rt, session=session)


# -- the turn context ---------------------------------------------------------------------------


async def test_session_start_output_appears_in_the_turn_context(kairox_harness: KairoxHarness) -> None:
    copy_bundle("claude/explain-style", kairox_harness.home / "plugins" / "explain-style")
    async with kairox_harness.open() as rt:
        async with rt.session() as session:
            first = await session.turn_context("add a cache")
            second = await session.turn_context("now test it")
    explain = "Explain each choice in one short sentence (source: startup)."
    prompt = "Prefer small, reviewable steps."
    assert texts(first.injected) == [explain, prompt]  # SessionStart first, then UserPromptSubmit
    assert {p.source for p in first.injected} == {"plugin:explain-style"}
    assert first.injected[0].title == "SessionStart"
    # SessionStart context holds for the whole session; the compact-only hook never ran
    assert texts(second.injected) == [explain, prompt]
    assert "re-read the notes after compaction" not in first.render()
    assert explain in first.render()


async def test_session_start_of_a_directory_with_several_manifests(kairox_harness: KairoxHarness) -> None:
    copy_bundle("multi/team-kit", kairox_harness.home / "plugins" / "team-kit")
    async with kairox_harness.open() as rt:
        async with rt.session() as session:
            tc = await session.turn_context("commit this")
    assert "Team kit: commits follow the team style." in texts(tc.injected)


async def test_a_new_session_has_only_its_own_context(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    counter = tmp_path / "n"
    root = write_plugin(
        kairox_harness.home / "plugins" / "count",
        {
            ".claude-plugin/plugin.json": {"name": "count"},
            "hooks/hooks.json": {"hooks": {"SessionStart": [{"hooks": [{"command": "${CLAUDE_PLUGIN_ROOT}/s.py"}]}]}},
        },
    )
    write_executable(
        root / "s.py",
        "import pathlib, sys\nsys.stdin.read()\n"
        f"p = pathlib.Path({str(counter)!r})\nn = int(p.read_text()) + 1 if p.exists() else 1\n"
        "p.write_text(str(n))\nprint('session number %d' % n)\n",
    )
    async with kairox_harness.open() as rt:
        async with rt.session() as one:
            a = await one.turn_context("x")
        async with rt.session() as two:
            b = await two.turn_context("x")
    assert texts(a.injected) == ["session number 1"]
    assert texts(b.injected) == ["session number 2"]


# -- if -------------------------------------------------------------------------------------------


async def test_if_condition_decides_whether_the_hook_runs(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = write_executable(
        tmp_path / "guard.py",
        f"import json, pathlib, sys\np = json.load(sys.stdin)\npathlib.Path({str(marker)!r}).write_text(p['tool_input']['command'])\n"
        "print(json.dumps({'decision': 'block', 'reason': 'no commits today'}))\n",
    )
    decl = HookDecl("pre_tool_call", command=str(script), matcher="Bash", condition="Bash(git commit:*)")
    async with kairox_harness.open() as rt:
        hook = ScriptHook("guard", "g", decl, root=tmp_path, runtime=rt, default_timeout=20)
        assert await hook(call=shell_call(rt, "git status")) is None
        assert not marker.exists()  # the process never started
        assert await hook(call=shell_call(rt, "make && git commit -m wip")) == Block("no commits today")
        assert marker.read_text() == "make && git commit -m wip"


async def test_the_commit_guard_fixture(kairox_harness: KairoxHarness) -> None:
    m = ClaudeFormat().probe(BUNDLES / "claude" / "commit-guard")
    assert m is not None
    guard = m.contribution("hook/pre_tool_call.guard")
    assert guard is not None and guard.config.condition == "Bash(git commit:*)" and guard.config.timeout == 15.0
    async with kairox_harness.open() as rt:
        hook = ScriptHook(m.name, guard.name, guard.config, root=m.root, runtime=rt, default_timeout=20)
        assert hook.timeout == 15.0  # the hook's own timeout, not [plugins] hook_timeout
        assert await hook(call=shell_call(rt, "git commit --no-verify")) == Block("commits run the hooks")
        assert await hook(call=shell_call(rt, "git push --no-verify")) is None  # `if` keeps it from running


def test_if_is_checked_when_the_manifest_loads(tmp_path: Path) -> None:
    bad = {"hooks": {"PreToolUse": [{"hooks": [{"command": "x", "if": "Bash(git commit"}]}]}}
    root = write_plugin(tmp_path / "p", {".claude-plugin/plugin.json": {"name": "p"}, "hooks/hooks.json": bad})
    with pytest.raises(ManifestError) as info:
        ClaudeFormat().probe(root)
    assert info.value.path == "hooks.PreToolUse[0].hooks[0].if" and "closing" in info.value.message
    # on an event without a tool, `if` is ignored (as in Claude Code), and said so
    other = {"hooks": {"SessionStart": [{"hooks": [{"command": "echo x", "if": "Bash(git *)"}]}]}}
    root = write_plugin(tmp_path / "q", {".claude-plugin/plugin.json": {"name": "q"}, "hooks/hooks.json": other})
    m = ClaudeFormat().probe(root)
    assert m is not None
    [hook] = m.by_kind("hook")
    assert hook.config.condition is None
    assert [p.path for p in m.problems] == ["hooks.SessionStart[0].hooks[0].if"]


# -- async, PostToolUse, PostToolUseFailure -------------------------------------------------------


AFTER = (
    "import json, sys\np = json.load(sys.stdin)\n"
    "print(json.dumps({'hookSpecificOutput': {'hookEventName': p['hook_event_name'], "
    "'additionalContext': p['hook_event_name'] + ' ' + str(p['tool_input'].get('path'))}}))\n"
)


async def test_async_hook_does_not_hold_the_call_and_its_context_reaches_the_next_turn(
    kairox_harness: KairoxHarness, tmp_path: Path
) -> None:
    script = write_executable(tmp_path / "after.py", AFTER)
    decl = HookDecl("pre_tool_call", command=str(script), run_async=True, source_event="PreToolUse")
    async with kairox_harness.open() as rt:
        async with rt.session() as session:
            hook = ScriptHook("bg", "after", decl, root=tmp_path, runtime=rt, default_timeout=20)
            deliver = context_deliverer("bg")
            async with rt.events.stream(BundleHookRan) as events:
                call = ToolCall(ToolSpec("fs.write", exported_name="fs_write"), {"path": "a.txt"}, rt, session=session)
                # even an answer that would block: an async hook cannot block or rewrite
                assert await hook(call=call) is None
                with anyio.fail_after(30):  # a safety net, not a measurement
                    ran = await events.__anext__()
            assert isinstance(ran, BundleHookRan) and ran.outcome == "context"
            assert texts(deliver(session=session, prompt="next")) == ["PreToolUse a.txt"]
            assert deliver(session=session, prompt="after that") is None  # once only


async def test_post_tool_use_context_and_failure_hooks(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    script = write_executable(tmp_path / "after.py", AFTER)
    ok_hook = HookDecl("post_tool_call", command=str(script), source_event="PostToolUse")
    fail_hook = HookDecl("post_tool_call", command=str(script), source_event="PostToolUseFailure")
    async with kairox_harness.open() as rt:
        async with rt.session() as session:
            log = EventLog(rt.events)
            on_ok = ScriptHook("p", "ok", ok_hook, root=tmp_path, runtime=rt, default_timeout=20)
            on_fail = ScriptHook("p", "fail", fail_hook, root=tmp_path, runtime=rt, default_timeout=20)
            call = ToolCall(ToolSpec("fs.write", exported_name="fs_write"), {"path": "b.txt"}, rt, session=session)
            good, bad = ToolResult.from_text("ok"), ToolResult.from_text("boom", is_error=True)
            for hook in (on_ok, on_fail):
                await hook(call=call, result=good)
            assert [e.hook for e in log.of(BundleHookRan)] == ["ok"]  # the failure hook did not run
            await on_fail(call=call, result=bad)
            ctx = session_context(session, "p")
            assert ctx is not None and texts(ctx.once) == ["PostToolUse b.txt", "PostToolUseFailure b.txt"]


async def test_a_claude_timeout_kills_the_hook(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    root = write_plugin(
        tmp_path / "slow",
        {
            ".claude-plugin/plugin.json": {"name": "slow"},
            "hooks/hooks.json": {"hooks": {"UserPromptSubmit": [{"hooks": [{"command": "sleep 60", "timeout": 0.5}]}]}},
        },
    )
    m = ClaudeFormat().probe(root)
    assert m is not None
    [c] = m.by_kind("hook")
    async with kairox_harness.open() as rt:
        log = EventLog(rt.events)
        hook = ScriptHook(m.name, c.name, c.config, root=m.root, runtime=rt, default_timeout=30)
        assert await hook(session=None, prompt="x") is None
    [failed] = log.of(BundleHookFailed)
    assert "timed out after 0.5 s" in failed.error


# -- events kairox has no equivalent for ---------------------------------------------------------


def test_each_unsupported_event_is_reported_once(tmp_path: Path) -> None:
    stop = {"hooks": {"Stop": [{"hooks": [{"command": "a"}]}, {"hooks": [{"command": "b"}]}], "Notification": []}}
    root = write_plugin(
        tmp_path / "p",
        {
            ".claude-plugin/plugin.json": {"name": "p", "hooks": ["./more.json", stop]},
            "more.json": stop,
            "hooks/hooks.json": stop,
        },
    )
    m = ClaudeFormat().probe(root)
    assert m is not None
    assert sorted(p.kind for p in m.problems) == ["hook-event:Notification", "hook-event:Stop"]
    codex = write_plugin(tmp_path / "c", {".codex-plugin/plugin.json": {"name": "c", "hooks": [stop, stop]}})
    cm = CodexFormat().probe(codex)
    assert cm is not None and sorted(p.kind for p in cm.problems) == ["hook-event:Notification", "hook-event:Stop"]


def test_hook_declarations_round_trip(tmp_path: Path) -> None:
    decl = HookDecl("pre_tool_call", command="x", matcher="Bash", condition="Bash(git *)", run_async=True, timeout=3.0)
    assert HookDecl.from_dict(json.loads(json.dumps(decl.to_dict()))) == decl


# -- what a PreToolUse hook answers: a real bundle of the user's guarding the built-in fs.write ----


def user_guard(harness: KairoxHarness, command: str) -> None:
    """The user's own Claude Code plugin ``cg`` with one PreToolUse hook for every tool."""
    hooks = {"hooks": {"PreToolUse": [{"matcher": ".*", "hooks": [{"type": "command", "command": command}]}]}}
    write_plugin(
        harness.home / "plugins" / "cg", {".claude-plugin/plugin.json": {"name": "cg"}, "hooks/hooks.json": hooks}
    )


def answering(answer: dict[str, Any], then: str = "") -> str:
    return "cat >/dev/null; echo " + shlex.quote(json.dumps(answer)) + then


ASK = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "ask",
        "permissionDecisionReason": "writes need a look",
    }
}


async def test_a_permission_decision_ask_without_an_approver_refuses_the_call(kairox_harness: KairoxHarness) -> None:
    """``permissionDecision: "ask"`` (Claude Code: ask the user first) with no approver to ask
    refuses the call: the write must not run without anyone being asked."""
    user_guard(kairox_harness, answering(ASK))
    async with kairox_harness.open(plugins=[kairox_tools.hooks]) as rt:
        with pytest.raises(PolicyDenied, match=r"needs approval \(a hook asks: writes need a look\), and no approver"):
            await rt.call_tool("fs.write", {"path": "o.txt", "content": "x"})
    assert not (kairox_harness.workspace / "o.txt").exists()


async def test_a_permission_decision_ask_asks_the_approver_about_the_updated_input(
    kairox_harness: KairoxHarness,
) -> None:
    asked = {"hookSpecificOutput": {**ASK["hookSpecificOutput"], "updatedInput": {"path": "safe.txt", "content": "x"}}}
    user_guard(kairox_harness, answering(asked))
    approvals = Approvals(True)
    async with kairox_harness.open(plugins=[kairox_tools.hooks], approver=approvals) as rt:
        assert not (await rt.call_tool("fs.write", {"path": "o.txt", "content": "x"})).is_error
    assert [(r.reason, r.arguments["path"]) for r in approvals.requests] == [
        ("a hook asks: writes need a look", "safe.txt")
    ]
    assert (kairox_harness.workspace / "safe.txt").exists() and not (kairox_harness.workspace / "o.txt").exists()


BLOCK = {"decision": "block", "reason": "guard says no"}
MORE = "stdout holds more than the JSON object (Extra data: line 2 column 1"


@pytest.mark.parametrize(
    ("command", "why"),
    [
        (answering(BLOCK, then="; echo done"), MORE),  # a log line after it
        ("cat >/dev/null; echo 'Shell ready'; echo " + shlex.quote(json.dumps(BLOCK)), "got 'Shell ready\\n{"),
        (answering(BLOCK, then='; echo \'{"and": "more"}\''), MORE),
        (answering({"arguments": 3}), "`arguments` must be a JSON object"),  # an object with a bad field
    ],
    ids=["log-line-after", "profile-banner-before", "two-objects", "bad-field"],
)
async def test_a_guard_whose_stdout_is_not_only_the_json_object_blocks_the_call(
    kairox_harness: KairoxHarness, command: str, why: str
) -> None:
    """A guard whose stdout is not one valid JSON answer (more than the object, or an object
    with a bad field) blocks the call: a guard printing
    its block answer and then a log line must not pass as "nonsense on stdout" with the call
    going on. Claude Code's hooks reference: "Your hook's stdout must contain only the JSON
    object"; a shell profile's banner before it is its "JSON validation failed" parse error.
    An answer kairox cannot read may say "block": it blocks."""
    user_guard(kairox_harness, command)
    async with kairox_harness.open(plugins=[kairox_tools.hooks]) as rt:
        log = EventLog(rt.events)
        with pytest.raises(PolicyDenied) as info:
            await rt.call_tool("fs.write", {"path": "o.txt", "content": "x"})
    assert not (kairox_harness.workspace / "o.txt").exists()
    assert re.search(
        r"blocked by a hook: guard hook \S+ of plugin cg answered what kairox cannot read", info.value.reason
    )
    assert why in info.value.reason, info.value.reason
    [failed] = log.of(BundleHookFailed)
    assert failed.plugin == "cg" and why in failed.error


async def test_plain_text_from_a_guard_is_no_answer_and_the_call_goes_on(kairox_harness: KairoxHarness) -> None:
    """Claude Code shows a PreToolUse hook's plain stdout and goes on; so does kairox (the
    failure is reported), as long as nothing in it could be an answer (no ``{``)."""
    user_guard(kairox_harness, "cat >/dev/null; echo checked")
    async with kairox_harness.open(plugins=[kairox_tools.hooks]) as rt:
        log = EventLog(rt.events)
        assert not (await rt.call_tool("fs.write", {"path": "o.txt", "content": "x"})).is_error
    assert (kairox_harness.workspace / "o.txt").exists()
    assert [f.error for f in log.of(BundleHookFailed)] == ["expected a JSON object on stdout, got 'checked'"]


async def test_a_guard_whose_matcher_cannot_run_blocks_every_call(kairox_harness: KairoxHarness) -> None:
    """A user's guard bundle with a Claude Code matcher kairox cannot run, a lookahead (which
    JavaScript runs and RE2 refuses), must not fail to load and leave fs.write unguarded.
    The guard cannot say which calls it guards: it blocks them all, naming why."""
    hooks = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "(?!fs\\.read$).*",
                    "hooks": [{"type": "command", "command": answering({"decision": "block", "reason": "reads only"})}],
                }
            ]
        }
    }
    write_plugin(
        kairox_harness.home / "plugins" / "cg",
        {".claude-plugin/plugin.json": {"name": "cg"}, "hooks/hooks.json": hooks},
    )
    kairox_harness.workspace.joinpath("r.txt").write_text("read me")
    async with kairox_harness.open(plugins=[kairox_tools.hooks]) as rt:
        log = EventLog(rt.events)
        for tool, args in (("fs.write", {"path": "o.txt", "content": "x"}), ("fs.read", {"path": "r.txt"})):
            with pytest.raises(PolicyDenied) as info:
                await rt.call_tool(tool, args)
            assert re.search(
                r"blocked by a hook: guard hook \S+ of plugin cg cannot run: its matcher '\(\?!fs\\\\.read\$\)\.\*' "
                r"is not a regular expression kairox can match in linear time .*; it blocks every tool call$",
                info.value.reason,
            ), info.value.reason
    assert not (kairox_harness.workspace / "o.txt").exists()
    assert [f.plugin for f in log.of(BundleHookFailed)] == ["cg", "cg"]
