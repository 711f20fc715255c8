"""Manifest hook scripts: real subprocesses (Python, node, sh, executables), answers, failures, timeouts."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_helpers import write_executable

from kairox import Block, ContextPiece, Runtime, ToolCall, ToolResult, ToolSpec
from kairox_manifests._matcher import compile_matcher
from kairox_manifests.events import BundleHookFailed, BundleHookRan
from kairox_manifests.hookscripts import HookAnswer, ScriptHook, claude_aliases, parse_answer
from kairox_manifests.model import HookDecl
from kairox_testing import EventLog, KairoxHarness

pytestmark = pytest.mark.anyio

NODE = shutil.which("node")


def make_hook(rt: Runtime, root: Path, decl: HookDecl, name: str = "h") -> ScriptHook:
    return ScriptHook("demo", name, decl, root=root, runtime=rt, default_timeout=20)


def tool_call(rt: Runtime, tool_id: str = "fs.write", **arguments: Any) -> ToolCall:
    return ToolCall(ToolSpec(tool_id, exported_name=tool_id.replace(".", "_")), dict(arguments), rt)


async def test_python_hook_adds_context_to_the_turn(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    script = write_executable(
        tmp_path / "ctx.py",
        "import json, sys\np = json.load(sys.stdin)\nprint(json.dumps({'context': 'words: %d' % len(p['prompt'].split())}))\n",
    )
    async with kairox_harness.open() as rt:
        log = EventLog(rt.events)
        hook = make_hook(rt, tmp_path, HookDecl("pre_turn", script=script))
        async with rt.session() as session:
            value = await hook(session=session, prompt="three little words")
    assert value == ContextPiece("words: 3", source="plugin:demo", title="h")
    [ran] = log.of(BundleHookRan)
    assert (ran.plugin, ran.hook, ran.event, ran.outcome) == ("demo", "h", "pre_turn", "context")


@pytest.mark.skipif(NODE is None, reason="node is not installed")
async def test_node_hook_blocks_a_tool_call(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    script = tmp_path / "guard.mjs"
    script.write_text(
        'import { readFileSync } from "node:fs";\n'
        "const p = JSON.parse(readFileSync(0, 'utf8'));\n"
        "if (p.tool_input.path.startsWith('/etc')) console.log(JSON.stringify({decision: 'block', reason: 'no /etc'}));\n"
    )
    async with kairox_harness.open() as rt:
        hook = make_hook(rt, tmp_path, HookDecl("pre_tool_call", script=script))
        assert await hook(call=tool_call(rt, path="/etc/passwd")) == Block("no /etc")
        assert await hook(call=tool_call(rt, path="notes.txt")) is None


async def test_shell_hook_plain_text_is_context(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    script = tmp_path / "ctx.sh"
    script.write_text("cat >/dev/null\necho 'from sh'\n")  # not executable: sh runs it by its type
    async with kairox_harness.open() as rt:
        hook = make_hook(rt, tmp_path, HookDecl("pre_turn", script=script))
        value = await hook(session=None, prompt="x")
    assert isinstance(value, ContextPiece) and value.text == "from sh"


async def test_executable_without_a_known_type_runs_itself(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    script = write_executable(tmp_path / "hook", '#!/bin/sh\ncat >/dev/null\necho \'{"context": "exec"}\'\n')
    async with kairox_harness.open() as rt:
        hook = make_hook(rt, tmp_path, HookDecl("pre_turn", script=script))
        value = await hook(session=None, prompt="x")
    assert isinstance(value, ContextPiece) and value.text == "exec"


async def test_non_executable_unknown_type_is_a_failure_event(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    script = tmp_path / "hook.txt"
    script.write_text("nothing")
    async with kairox_harness.open() as rt:
        log = EventLog(rt.events)
        hook = make_hook(rt, tmp_path, HookDecl("pre_turn", script=script))
        assert await hook(session=None, prompt="x") is None
    [failed] = log.of(BundleHookFailed)
    assert "not executable" in failed.error


async def test_exit_code_2_blocks_with_stderr_as_reason(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    script = tmp_path / "deny.py"
    script.write_text("import sys\nsys.stdin.read()\nsys.stderr.write('refused by policy\\n')\nsys.exit(2)\n")
    async with kairox_harness.open() as rt:
        hook = make_hook(rt, tmp_path, HookDecl("pre_tool_call", script=script))
        assert await hook(call=tool_call(rt)) == Block("refused by policy")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("import sys\nsys.stderr.write('boom\\n')\nsys.exit(1)\n", "exited with code 1"),
        ("print('not json')\n", "expected a JSON object"),
        ("print('[1, 2]')\n", "expected a JSON object"),
    ],
)
async def test_failures_are_events_and_the_call_goes_on(
    kairox_harness: KairoxHarness, tmp_path: Path, body: str, fragment: str
) -> None:
    script = tmp_path / "bad.py"
    script.write_text(body)
    async with kairox_harness.open() as rt:
        log = EventLog(rt.events)
        hook = make_hook(rt, tmp_path, HookDecl("pre_tool_call", script=script))
        assert await hook(call=tool_call(rt)) is None
    [failed] = log.of(BundleHookFailed)
    assert fragment in failed.error
    if "boom" in body:
        assert "boom" in failed.stderr


async def test_timeout_kills_the_hook_and_its_children(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = tmp_path / "slow.sh"
    script.write_text(f"sleep 60 &\necho $! > {pid_file}\nwait\n")
    async with kairox_harness.open() as rt:
        log = EventLog(rt.events)
        hook = make_hook(rt, tmp_path, HookDecl("pre_turn", script=script, timeout=0.5))
        started = time.monotonic()
        assert await hook(session=None, prompt="x") is None
        elapsed = time.monotonic() - started
    assert elapsed < 10
    [failed] = log.of(BundleHookFailed)
    assert "timed out after 0.5 s" in failed.error
    child = int(pid_file.read_text())
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE


async def test_matcher_selects_tools_by_id_exported_name_or_claude_alias(
    kairox_harness: KairoxHarness, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    script = tmp_path / "mark.sh"
    script.write_text(f"cat >/dev/null\necho x >> {marker}\n")
    async with kairox_harness.open() as rt:
        bash_only = make_hook(rt, tmp_path, HookDecl("pre_tool_call", script=script, matcher="Bash"))
        await bash_only(call=tool_call(rt, "fs.read"))
        assert not marker.exists()
        await bash_only(call=tool_call(rt, "shell.exec"))
        assert marker.read_text().count("x") == 1
        by_id = make_hook(rt, tmp_path, HookDecl("pre_tool_call", script=script, matcher=r"weather\..*"))
        await by_id(call=tool_call(rt, "weather.forecast"))
        await by_id(call=tool_call(rt, "xweather.forecast"))  # fullmatch, not search
        assert marker.read_text().count("x") == 2


async def test_payload_and_environment(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    out = tmp_path / "payload.json"
    script = tmp_path / "dump.py"
    script.write_text(
        "import json, os, sys\n"
        "p = json.load(sys.stdin)\n"
        "p['env'] = {k: os.environ.get(k) for k in ('KAIROX_PLUGIN_ROOT', 'CLAUDE_PLUGIN_ROOT', 'KAIROX_WORKSPACE',"
        " 'CLAUDE_PROJECT_DIR', 'KAIROX_HOOK_EVENT')}\n"
        "p['cwd_seen'] = os.getcwd()\n"
        f"open({str(out)!r}, 'w').write(json.dumps(p))\n"
    )
    async with kairox_harness.open() as rt:
        hook = make_hook(rt, tmp_path, HookDecl("post_tool_call", script=script, source_event="PostToolUse"))
        async with rt.session() as session:
            call = tool_call(rt, "shell.exec", command="ls")
            call.session = session
            await hook(call=call, result=ToolResult.from_text("a\nb"))
            sid = session.id
        workspace = str(rt.workspace)
    p = json.loads(out.read_text())
    assert p["event"] == "post_tool_call" and p["hook_event_name"] == "PostToolUse"
    assert p["session_id"] == sid and p["cwd"] == workspace == p["cwd_seen"]
    assert (p["tool"], p["tool_name"], p["tool_input"]) == ("shell.exec", "Bash", {"command": "ls"})
    assert p["tool_response"] == {"text": "a\nb", "is_error": False, "structured": None}
    assert p["plugin"] == "demo" and p["plugin_root"] == str(tmp_path)
    assert p["env"] == {
        "KAIROX_PLUGIN_ROOT": str(tmp_path),
        "CLAUDE_PLUGIN_ROOT": str(tmp_path),
        "KAIROX_WORKSPACE": workspace,
        "CLAUDE_PROJECT_DIR": workspace,
        "KAIROX_HOOK_EVENT": "post_tool_call",
    }


async def test_claude_shell_command_and_updated_input(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"path": "safe.txt"}}})
    command = f"cat >/dev/null; echo '{answer}'"
    async with kairox_harness.open() as rt:
        hook = make_hook(rt, tmp_path, HookDecl("pre_tool_call", command=command))
        assert await hook(call=tool_call(rt, path="x")) == {"path": "safe.txt"}


# -- parse_answer -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stdout", "text_is_context", "expected"),
    [
        ("", False, HookAnswer()),
        ('{"context": "c"}', False, HookAnswer(context="c")),
        ('{"additionalContext": "c"}', False, HookAnswer(context="c")),
        ('{"hookSpecificOutput": {"additionalContext": "c"}}', False, HookAnswer(context="c")),
        ('{"decision": "block", "reason": "r"}', False, HookAnswer(block="r")),
        ('{"decision": "block"}', False, HookAnswer(block="blocked by a plugin hook")),
        (
            '{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "r"}}',
            False,
            HookAnswer(block="r"),
        ),
        ('{"hookSpecificOutput": {"permissionDecision": "allow"}}', False, HookAnswer()),
        ('{"continue": false, "stopReason": "s"}', False, HookAnswer(block="s")),
        ('{"arguments": {"a": 1}}', False, HookAnswer(arguments={"a": 1})),
        (
            '{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "r"}}',
            False,
            HookAnswer(ask="r"),
        ),
        ('{"hookSpecificOutput": {"permissionDecision": "ask"}}', False, HookAnswer(ask="a plugin hook asks")),
        ("plain words", True, HookAnswer(context="plain words")),
        ('"a json string"', True, HookAnswer(context="a json string")),
    ],
)
def test_parse_answer(stdout: str, text_is_context: bool, expected: HookAnswer) -> None:
    assert parse_answer(stdout, text_is_context=text_is_context) == expected


@given(st.text(), st.booleans())
def test_parse_answer_never_raises_anything_but_value_error(stdout: str, text_is_context: bool) -> None:
    try:
        answer = parse_answer(stdout, text_is_context=text_is_context)
    except ValueError:
        return
    assert isinstance(answer, HookAnswer)
    assert answer.arguments is None or isinstance(answer.arguments, dict)


def test_claude_aliases() -> None:
    assert claude_aliases("shell.exec") == ("Bash",)
    assert "Edit" in claude_aliases("fs.write")
    assert claude_aliases("code-review.time.get_current_time") == ("mcp__code-review_time__get_current_time",)
    assert claude_aliases("plain") == ()


# -- a bundle's matcher runs in linear time (RE2), and answers as Python's re does ---------------


@pytest.mark.timeout(10)
async def test_a_catastrophic_matcher_costs_one_pass_over_the_name(
    kairox_harness: KairoxHarness, tmp_path: Path
) -> None:
    # Python's re tries every split of the name among the alternatives: ~25 s at 40 a's, an hour at 48
    script = tmp_path / "mark.sh"
    script.write_text("cat >/dev/null\n")
    async with kairox_harness.open() as rt:
        hook = make_hook(rt, tmp_path, HookDecl("pre_tool_call", script=script, matcher="(a|aa)+b"))
        assert not hook.matches(tool_call(rt, "a" * 48))
        assert hook.matches(tool_call(rt, "a" * 47 + "b"))
        polynomial = make_hook(rt, tmp_path, HookDecl("pre_tool_call", script=script, matcher=r"\w*" * 8 + "x"))
        assert not polynomial.matches(tool_call(rt, "a" * 64))


_ATOM = st.sampled_from(["a", "b", "_", ".", r"\.", "[ab]", "[^a]", "mcp__", "(a|b)", "(?:ab|a)"])
_PIECE = st.tuples(_ATOM, st.sampled_from(["", "*", "+", "?", "{1,2}"])).map("".join)
_BRANCH = st.lists(_PIECE, min_size=1, max_size=4).map("".join)
_MATCHER = st.lists(_BRANCH, min_size=1, max_size=3).map("|".join)


@settings(max_examples=500)
@given(matcher=_MATCHER, name=st.text("ab_.m", max_size=10))
def test_a_matcher_answers_as_python_re_did(matcher: str, name: str) -> None:
    assert (compile_matcher(matcher).fullmatch(name) is not None) == (re.fullmatch(matcher, name) is not None)
