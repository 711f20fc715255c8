"""``kairox serve --stdio`` as a real process, driven by the mcp SDK's own client.

Both protocol eras: ``mode="legacy"`` (the initialize handshake: Ask is a server-to-client
``elicitation/create``) and ``mode="auto"`` (2026-07-28: Ask is an ``InputRequiredResult``
the client answers by retrying).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from serve_helpers import INIT, KAIROX, make_workspace, refused, stdio_params, stop

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]

MODES = ["legacy", "auto"]


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


class Answers:
    """An elicitation callback that answers ``decision`` and records what it was asked."""

    def __init__(self, decision: str | None, action: str = "accept") -> None:
        self.decision = decision
        self.action = action
        self.asked: list[str] = []
        #: the choices each form offered
        self.choices: list[list[str]] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params.message)
        options = params.requested_schema["properties"]["decision"]["oneOf"]
        self.choices.append([o["const"] for o in options])
        if self.action != "accept":
            return types.ElicitResult(action=self.action)  # type: ignore[arg-type]
        return types.ElicitResult(action="accept", content={"decision": self.decision})


@pytest.mark.parametrize("mode", MODES)
async def test_tools_prompts_resources(tmp_path: Path, mode: str) -> None:
    ws = make_workspace(tmp_path)
    async with Client(stdio_params(ws), mode=mode) as client:  # type: ignore[arg-type]
        assert client.server_info is not None and client.server_info.name == "kairox"
        tools = {t.name: t for t in (await client.list_tools()).tools}
        # built-in and backend tools, under their exported names
        assert {"fs_read", "fs_write", "shell_exec", "wb_echo", "wb_cwd"} <= set(tools)
        read, write = tools["fs_read"].annotations, tools["fs_write"].annotations
        assert read is not None and read.read_only_hint is True and read.destructive_hint is False
        assert write is not None and write.read_only_hint is False and write.destructive_hint is True
        # the backend declares nothing: kairox treats it as system/execute, and says so
        echo = tools["wb_echo"].annotations
        assert echo is not None and echo.read_only_hint is False and echo.destructive_hint is True
        assert tools["wb_echo"].meta == {
            "io.kairox/tool": {"id": "wb.echo", "domain": "system", "capability": "execute"}
        }

        # Allow: a built-in tool and a proxied backend tool run
        result = await client.call_tool("fs_read", {"path": "hello.txt"})
        assert not result.is_error and "hello from the workspace" in text_of(result)
        result = await client.call_tool("wb_echo", {"message": "through the gateway"})
        assert not result.is_error and text_of(result) == "through the gateway"
        # Deny: an error result with the policy's reason
        result = await client.call_tool("wb_env", {})
        assert result.is_error and text_of(result).startswith("denied:")
        assert "wb.env" in text_of(result)
        # Ask, and this client declared no elicitation: refused, saying how to allow it
        result = await client.call_tool("wb_cwd", {})
        assert result.is_error
        assert "needs approval" in text_of(result) and '"wb.cwd" = "allow"' in text_of(result)
        assert "[policy.rules]" in text_of(result) and "elicitation" in text_of(result)
        # the user's config this gateway reads ($KAIROX_HOME's), not a guessed ~/.kairox
        assert f"[policy.rules] in {ws.home / 'kairox.toml'} (your own config" in text_of(result)

        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert prompts["greet"].description == "Greet someone by name"
        assert [(a.name, a.required) for a in prompts["greet"].arguments or []] == [("who", True)]
        got = await client.get_prompt("greet", {"who": "Ada"})
        message = got.messages[0]
        assert message.role == "user" and isinstance(message.content, types.TextContent)
        assert message.content.text.strip() == "Say hello to Ada, warmly."

        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert {"skill://greet/SKILL.md", "skill://greet/references/notes.md"} <= uris
        notes = await client.read_resource("skill://greet/references/notes.md")
        assert isinstance(notes.contents[0], types.TextResourceContents)
        assert notes.contents[0].text == "# Notes\nbe kind\n"


@pytest.mark.parametrize("mode", MODES)
async def test_errors_of_requests(tmp_path: Path, mode: str) -> None:
    from mcp.shared.exceptions import MCPError

    ws = make_workspace(tmp_path)
    async with Client(stdio_params(ws), mode=mode) as client:  # type: ignore[arg-type]
        with pytest.raises(MCPError, match="Unknown tool"):
            await client.call_tool("no_such_tool", {})
        with pytest.raises(MCPError, match="missing required argument"):
            await client.get_prompt("greet", {})
        for uri in ("skill://greet/../kairox.toml", "skill://greet/%2E%2E/kairox.toml", "file:///etc/passwd"):
            with pytest.raises(MCPError, match="Resource not found"):
                await client.read_resource(uri)


@pytest.mark.parametrize("mode", MODES)
async def test_ask_answered_by_elicitation(tmp_path: Path, mode: str) -> None:
    ws = make_workspace(tmp_path)
    once = Answers("once")
    refusals = [Answers("deny"), Answers(None, action="decline"), Answers(None, action="cancel")]
    current: list[Answers] = [once]

    async def answer(context: Any, params: Any) -> types.ElicitResult:
        return await current[0](context, params)

    # one connection: a "deny", a declined and a cancelled form each refuse one call, and
    # none is remembered (the next call asks again)
    async with Client(stdio_params(ws), mode=mode, elicitation_callback=answer) as client:  # type: ignore[arg-type]
        for _ in range(2):  # "once" approves one call: the next asks again
            result = await client.call_tool("wb_cwd", {})
            assert not result.is_error, text_of(result)
            assert Path(text_of(result)).name  # the backend's working directory
        assert len(once.asked) == 2
        assert "wb.cwd" in once.asked[0] and "asks for approval" in once.asked[0]

        for refusal in refusals:
            current[0] = refusal
            result = await client.call_tool("wb_cwd", {})
            assert result.is_error and "declined" in text_of(result), text_of(result)
            assert len(refusal.asked) == 1


async def test_an_answer_to_an_approval_nobody_asked_is_not_taken(tmp_path: Path) -> None:
    """A 2026-07-28 client that declared no elicitation cannot approve an Ask by sending the
    approval's answer (its key is the tool and arguments, digested) with its first request."""
    import hashlib
    import json

    import mcp_types

    ws = make_workspace(tmp_path)
    key = "kairox-approval-" + hashlib.sha256(json.dumps(["wb.cwd", {}]).encode()).hexdigest()[:24]
    answer = mcp_types.ElicitResult(action="accept", content={"decision": "once"})
    async with Client(stdio_params(ws), mode="auto") as client:
        result = await client.session.call_tool("wb_cwd", {}, input_responses={key: answer}, allow_input_required=True)
    assert isinstance(result, mcp_types.CallToolResult) and result.is_error, result
    assert "did not declare the elicitation capability" in text_of(result)


@pytest.mark.parametrize("mode", MODES)
async def test_allow_for_the_session_lasts_the_connection(tmp_path: Path, mode: str) -> None:
    ws = make_workspace(tmp_path)
    session = Answers("session")
    async with Client(stdio_params(ws), mode=mode, elicitation_callback=session) as client:  # type: ignore[arg-type]
        for _ in range(3):
            result = await client.call_tool("wb_cwd", {})
            assert not result.is_error, text_of(result)
        assert len(session.asked) == 1  # asked once, remembered for this connection
        assert session.choices == [["once", "session", "deny"]]
    # a new connection (a new client process) is a new session: asked again
    again = Answers("once")
    async with Client(stdio_params(ws), mode=mode, elicitation_callback=again) as client:  # type: ignore[arg-type]
        assert not (await client.call_tool("wb_cwd", {})).is_error
    assert len(again.asked) == 1


def test_untrusted_workspace_is_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, trusted=False)
    err, proc = refused(ws, "--stdio")
    assert "is not trusted" in err and "kairox trust" in err and "serves only a trusted workspace" in err
    assert proc.stdout == b""


def test_refusal_names_the_trust_store_it_read(tmp_path: Path) -> None:
    """An MCP host (the Inspector, the SDKs) starts the gateway with a few variables of its
    own choosing, not KAIROX_HOME: a workspace trusted under one home is refused by a gateway
    that reads another, and the refusal must say which one it read, and why."""
    ws = make_workspace(tmp_path)  # trusted under ws.home, as $KAIROX_HOME
    other = tmp_path / "host-home"
    other.mkdir()
    env = {k: v for k, v in ws.env(HOME=str(other)).items() if k != "KAIROX_HOME"}
    proc = subprocess.run(
        [*KAIROX, "-w", str(ws.root), "serve", "--stdio"], input=b"", capture_output=True, env=env, timeout=60
    )
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert "is not trusted" in err
    assert str(other / ".kairox" / "trust.json") in err and "KAIROX_HOME is not set" in err
    # with KAIROX_HOME set to a home that does not trust it: that home's store, named
    proc = subprocess.run(
        [*KAIROX, "-w", str(ws.root), "serve", "--stdio"],
        input=b"",
        capture_output=True,
        env=ws.env(KAIROX_HOME=str(other)),
        timeout=60,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert f"{other / 'trust.json'} (KAIROX_HOME={other})" in err


def test_a_terminal_on_stdin_is_told_what_the_gateway_waits_for(tmp_path: Path) -> None:
    """`kairox serve` typed at a terminal (the README lists it) waits for JSON-RPC in silence
    otherwise; an MCP host's pipe gets no such line (stdout carries only JSON-RPC anyway)."""
    import os
    import pty
    import select
    import signal

    ws = make_workspace(tmp_path)
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [*KAIROX, "-w", str(ws.root), "serve"],
        stdin=follower,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=ws.env(),
        start_new_session=True,
    )
    os.close(follower)
    try:
        assert proc.stderr is not None
        line = b""
        while not line.endswith(b"\n") and select.select([proc.stderr], [], [], 60)[0]:
            chunk = os.read(proc.stderr.fileno(), 1)
            if not chunk:
                break
            line += chunk
        assert line.startswith(b"kairox serve: serving MCP (JSON-RPC) on stdin/stdout, for an MCP host"), line
        assert b"docs/serve.md" in line
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        if proc.stderr is not None:
            proc.stderr.close()
        os.close(leader)
    # from a pipe (as a host starts it): no such line
    piped = subprocess.run(
        [*KAIROX, "-w", str(ws.root), "serve"], input=b"", capture_output=True, env=ws.env(), timeout=60
    )
    assert b"serving MCP" not in piped.stderr


def test_a_broken_serve_section_is_refused_not_served_open(tmp_path: Path) -> None:
    """One bad value in a deny list must not leave the gateway serving every tool."""
    ws = make_workspace(tmp_path, serve='[serve]\ntools = ["wb_*"]\ndeny_tools = ["wb_cwd*", ""]\n')
    err, proc = refused(ws, "--stdio")
    assert "[serve] has errors, and kairox serve does not start" in err
    assert "serve.deny_tools" in err and "kairox.toml" in err
    assert proc.stdout == b""


def test_changed_workspace_is_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    toml = ws.root / "kairox.toml"
    toml.write_text(toml.read_text() + '\n[mcp_servers.new]\ncommand = "true"\n', encoding="utf-8")
    proc = subprocess.run(
        [*KAIROX, "-w", str(ws.root), "serve"], input=b"", capture_output=True, env=ws.env(), timeout=60
    )
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "changed since you trusted it" in err and "new" in err and "kairox trust" in err


@pytest.mark.parametrize("wire", ["pipes", "files"])  # files: the SDK's own stdio loop (not pollable)
def test_stdout_carries_only_json_rpc_even_while_the_runtime_opens(tmp_path: Path, wire: str) -> None:
    """A plugin that prints at import and in register() (direct, in the gateway's own process)
    runs while the runtime opens, before any message: its text goes to stderr, never the wire."""
    from kairox_testing import trust_workspace

    ws = make_workspace(tmp_path, trusted=False)
    plugin = ws.root / ".kairox" / "plugins" / "noisy"
    plugin.mkdir(parents=True)
    (plugin / "plugin.json").write_text('{"id": "noisy", "main": "main.py", "sandbox": "direct"}')
    (plugin / "main.py").write_text(
        "import sys\nprint('IMPORT-TIME PRINT')\n"
        "def register(ctx):\n"
        "    print('REGISTER PRINT')\n"
        "    sys.stdout.write('RAW WRITE\\n'); sys.stdout.flush()\n"
        "    import os; os.write(1, b'FD WRITE\\n')\n"
        "    @ctx.register_tool('hi', description='hi', domain='local', capability='read')\n"
        "    def hi(args):\n"
        "        print('CALL PRINT')\n"
        "        return 'hi'\n"
    )
    trust_workspace(ws.root, ws.home, env=ws.env())
    messages = [
        INIT,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "noisy_hi", "arguments": {}}},
    ]
    if wire == "files":
        (tmp_path / "in.jsonl").write_text("".join(json.dumps(m) + "\n" for m in messages))
        with open(tmp_path / "in.jsonl", "rb") as stdin, open(tmp_path / "out.jsonl", "wb") as stdout:
            done = subprocess.run(
                [*KAIROX, "-w", str(ws.root), "serve", "--stdio"],
                stdin=stdin,
                stdout=stdout,
                stderr=subprocess.PIPE,
                env=ws.env(),
                timeout=60,
            )
        lines = (tmp_path / "out.jsonl").read_bytes().splitlines()
        answers = [json.loads(line) for line in lines]  # every line JSON-RPC
        # (stdin's end comes at once from a file: the call may be cut short, never mixed in)
        assert [a["id"] for a in answers][:1] == [1], lines
        for text in ("IMPORT-TIME PRINT", "REGISTER PRINT", "RAW WRITE", "FD WRITE"):
            assert text in done.stderr.decode(), done.stderr
        return
    proc = subprocess.Popen(
        [*KAIROX, "-w", str(ws.root), "serve", "--stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ws.env(),
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        answers = []
        for message in messages:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
            if "id" in message:
                answers.append(json.loads(proc.stdout.readline()))  # a line that is not JSON fails here
        proc.stdin.close()
        rest = proc.stdout.read()
        proc.wait(timeout=60)
    finally:
        stop(proc)
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[1]["result"]["content"][0]["text"] == "hi", answers[1]
    assert rest.strip() == b""
    err = proc.stderr.read().decode() if proc.stderr else ""
    for text in ("IMPORT-TIME PRINT", "REGISTER PRINT", "RAW WRITE", "FD WRITE", "CALL PRINT"):
        assert text in err, err
