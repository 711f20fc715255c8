"""Hostile server messages fail fast and alone.

The attacks, from SDK-free servers in tests/fixtures/mcp_servers: a result over the
64 MiB frame limit (``hostile_results.py huge``, with its id first, last, or missing),
a result nested deeper than the JSON parser allows (``deep``), and a ``tools/list``
that mixes good tools with invalid schemas and names (``bad_tools.py``). The call a
bad answer was for fails at once with the reason (``tool_timeout`` is 60 s: waiting
for it would be the bug), the server stays ready and its other calls work; a bad tool
is left out with a warning naming the server and the tool, the others load.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import peers
import pytest
from hypothesis import given
from hypothesis import strategies as st
from peers import fixture_server

from kairox import Runtime
from kairox._types import ServerState
from kairox.errors import ToolError
from kairox_mcp import manager_of
from kairox_mcp._sniff import TAIL, WINDOW, Sniffed, sniff_response

pytestmark = pytest.mark.anyio

#: the call fails as soon as the line passes the limit ("more than 64 MiB"), or when it ends
#: if its id is in its last bytes ("70.0 MiB")
LIMIT_MESSAGE = "MiB exceeds the 64 MiB limit"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers"


def yes(_request: Any) -> bool:
    return True


def _stdio(name: str, **extra: Any) -> dict[str, Any]:
    command, *args = fixture_server(name)
    return {"command": command, "args": args, "tool_timeout": 60, **extra}


def _open(tmp_path: Path, servers: dict[str, Any]) -> Any:
    for d in ("ws", "home"):
        (tmp_path / d).mkdir(exist_ok=True)
    docs = [("user", {"mcp_servers": servers})]
    return Runtime.open(tmp_path / "ws", home=tmp_path / "home", config_documents=docs)


async def _fails_fast(rt: Runtime, tool: str, arguments: dict[str, Any]) -> str:
    """The call's error: the callers check it names the bad answer. A call that waited for
    its 60 s ``tool_timeout`` instead fails with "timed out", so no clock is read here (writing
    the 70 MiB answer took 11 s on 2 busy cores, and a wall-clock bound failed under load)."""
    with pytest.raises(ToolError) as info:
        await rt.call_tool(tool, arguments, approver=yes)
    message = str(info.value)
    assert "timed out" not in message, "the call waited for its timeout"
    return message


# -- oversized and deeply nested results over stdio ------------------------------------------


@pytest.mark.parametrize("order", ["id-first", "id-last"])
async def test_a_result_over_the_frame_limit_fails_its_call_at_once_and_the_server_goes_on(
    tmp_path: Path, order: str, no_leftovers: None
) -> None:
    async with _open(tmp_path, {"h": _stdio("hostile_results")}) as rt:
        message = await _fails_fast(rt, "h.huge", {"order": order})
        assert LIMIT_MESSAGE in message and "MCP server h" in message
        server = manager_of(rt).server("h")
        assert server.state is ServerState.READY  # the framing is intact: nothing else is lost
        assert (await rt.call_tool("h.echo", {"message": "still here"}, approver=yes)).text == "still here"
        assert any(LIMIT_MESSAGE in line for line in manager_of(rt).logs("h"))


async def test_an_oversized_response_that_never_ends_fails_its_call_at_once(tmp_path: Path, no_leftovers: None) -> None:
    """The size is checked as the line grows, not when it ends: a response that passes the
    limit and never gets its newline fails its call at once instead of waiting out
    tool_timeout."""
    async with _open(tmp_path, {"h": _stdio("hostile_results")}) as rt:
        message = await _fails_fast(rt, "h.huge", {"unterminated": True})
        assert "response of more than 64 MiB exceeds the 64 MiB limit" in message, message


async def test_an_oversized_response_whose_id_cannot_be_read_fails_every_pending_call(
    tmp_path: Path, no_leftovers: None
) -> None:
    async with _open(tmp_path, {"h": _stdio("hostile_results")}) as rt:
        server = manager_of(rt).server("h")
        results: dict[str, str] = {}

        async def call(tool: str, arguments: dict[str, Any]) -> None:
            results[tool] = await _fails_fast(rt, tool, arguments)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "h.park", {})  # answered only after the next request
            assert server.client is not None
            pending = server.client.exchange.pending
            with anyio.fail_after(5):
                while "tools/call" not in {method for _, method in pending.values()}:  # noqa: ASYNC110 - polling
                    await anyio.sleep(0.01)
            tg.start_soon(call, "h.huge", {"order": "no-id"})
        for tool in ("h.park", "h.huge"):
            assert LIMIT_MESSAGE in results[tool]
            assert "its id could not be read, so all 2 pending requests fail" in results[tool]
        assert server.state is ServerState.READY
        assert (await rt.call_tool("h.echo", {"message": "after"}, approver=yes)).text == "after"


async def test_a_result_nested_deeper_than_the_parser_allows_fails_its_call_at_once(
    tmp_path: Path, no_leftovers: None
) -> None:
    async with _open(tmp_path, {"h": _stdio("hostile_results")}) as rt:
        message = await _fails_fast(rt, "h.deep", {"depth": 5000})
        assert "nested deeper than the JSON parser allows" in message
        assert (await rt.call_tool("h.echo", {"message": "ok"}, approver=yes)).text == "ok"
        # the control: nesting the parser accepts is an ordinary result
        shallow = await rt.call_tool("h.deep", {"depth": 20}, approver=yes)
        assert shallow.structured is not None and shallow.text == "deep"


async def test_a_result_of_millions_of_small_values_fails_its_call_before_it_is_parsed(
    tmp_path: Path, no_leftovers: None
) -> None:
    """The count of JSON values is bounded before the result is parsed. The attack:
    2,000,000 text blocks in one answer (54 MB, under the frame limit), parsed into models,
    take 4.45 GB and 48 s to print 50,000 characters."""
    async with _open(tmp_path, {"h": _stdio("hostile_results")}) as rt:
        message = await _fails_fast(rt, "h.blocks", {})
        assert "response of 6,000,005 JSON values exceeds the limit of 300,000" in message, message
        assert manager_of(rt).server("h").state is ServerState.READY
        assert (await rt.call_tool("h.echo", {"message": "ok"}, approver=yes)).text == "ok"
        # the control: many blocks, under the limit, are an ordinary result
        result = await rt.call_tool("h.blocks", {"n": 50_000}, approver=yes)
        assert len(result.content) == 50_000


def test_a_result_of_millions_of_small_values_costs_bounded_memory(tmp_path: Path) -> None:
    """The same answer through the real ``kairox tools call``: its peak memory (the largest
    of the processes it waited for: kairox, and the server kairox reaped) stays under 1 GB."""
    import subprocess

    command, *args = fixture_server("hostile_results")
    (tmp_path / "home").mkdir()
    (tmp_path / "ws").mkdir()
    (tmp_path / "home" / "kairox.toml").write_text(
        f"[mcp_servers.h]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n"
        '[policy.rules]\n"h.*" = "allow"\n'
    )
    kairox = str(Path(sys.executable).with_name("kairox"))
    measure = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.stderr.write(done.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    env["KAIROX_HOME"] = str(tmp_path / "home")
    run = subprocess.run(
        [sys.executable, "-c", measure, kairox, "--workspace", str(tmp_path / "ws"), "tools", "call", "h.blocks"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    code, peak_kib = (int(x) for x in run.stdout.split())
    assert code == 1 and "JSON values exceeds the limit" in run.stderr, run.stderr
    assert peak_kib < 1_000_000, f"peak RSS {peak_kib / 1e6:.2f} GB"


def test_an_unparseable_event_from_the_sdk_fails_the_request_it_answered() -> None:
    # Legacy SSE: the SDK's sse_client puts pydantic's error (holding the raw event) in the
    # read stream; the request it answered fails at once instead of waiting for its timeout.
    import mcp.types as types

    from kairox_mcp._streams import UNREADABLE, Exchange
    from kairox_mcp.transport import Diagnostics

    deep = '{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":{"x":' + "[" * 500 + "]" * 500 + "}}}"
    not_jsonrpc = '{"jsonrpc":"2.0","id":8,"result":"a string"}'
    exchange = Exchange("s", Diagnostics())
    for rid in (7, 8, 9):
        exchange.sent(types.JSONRPCRequest(jsonrpc="2.0", id=rid, method="tools/call", params={"name": "t"}))
    out = []
    for raw in (deep, not_jsonrpc, "this is not json", '{"foo": 1}'):
        try:
            types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
        except ValueError as exc:
            out.extend(exchange.unreadable(exc))
    errors = [m.message for m in out if isinstance(m.message, types.JSONRPCError)]
    assert len(errors) == len(out)
    assert [e.id for e in errors] == [7, 8]  # garbage answers nothing: request 9 stays pending
    assert all(e.error.data == UNREADABLE for e in errors)
    assert "nested deeper than the JSON parser allows" in errors[0].error.message
    assert list(exchange.pending) == ["9"]


# -- a bounded response body over streamable HTTP --------------------------------------------------


@pytest.fixture
def oversized_http() -> Iterator[str]:
    port = peers.free_port()
    with peers.http_peer([sys.executable, str(FIXTURES / "http_oversized.py"), str(port)], port) as url:
        yield url


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "no-length"])
async def test_a_json_body_over_the_limit_fails_its_call_at_once(
    tmp_path: Path, oversized_http: str, length: bool
) -> None:
    servers = {"web": {"type": "http", "url": oversized_http, "tool_timeout": 60}}
    async with _open(tmp_path, servers) as rt:
        assert manager_of(rt).server("web").state is ServerState.READY
        message = await _fails_fast(rt, "web.huge", {"length": length})
        assert "exceeds the 64 MiB limit" in message
        assert (await rt.call_tool("web.echo", {"message": "fine"}, approver=yes)).text == "fine"


# -- invalid tools in tools/list ------------------------------------------------------------------


BAD_NAMES = ["bad name", "../escape", "a/b", "nul\x00name", "new\nline", "esc\x1b]0;pwned\x07", "rtl\u202eexe.txt"]


async def test_invalid_tools_are_skipped_with_a_warning_and_the_others_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, no_leftovers: None
) -> None:
    caplog.set_level(logging.WARNING, logger="kairox_mcp")
    async with _open(tmp_path, {"bt": _stdio("bad_tools")}) as rt:
        server = manager_of(rt).server("bt")
        assert server.state is ServerState.READY, server.detail
        assert {s.id for s in rt.tools.by_provider("mcp:bt")} == {"bt.echo", "bt.big", "bt.dotted.name-2"}
        assert (await rt.call_tool("bt.echo", {"message": "hi"}, approver=yes)).text == "hi"
        assert (await rt.call_tool("bt.dotted.name-2", {}, approver=yes)).text == "dotted"
        assert "14 invalid tools skipped" in server.detail
        logs = "\n".join(manager_of(rt).logs("bt", 100))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for name in ("scalar_schema", "stringy_schema", "no_schema", "bad_properties"):
        assert any(f'MCP server bt: skipping tool "{name}": ' in w for w in warnings), name
        assert f'skipped tool "{name}"' in logs
    assert any('"scalar_schema": inputSchema has "type": "string"' in w for w in warnings)
    assert sum("MCP server bt: skipping tool" in w for w in warnings) == 14
    for w in warnings:  # the names are shown escaped: nothing reaches a terminal raw
        assert not any(c in w for c in ("\x00", "\n", "\x1b", "\x07", "\u202e"))
    assert any('"nul\\x00name"' in w for w in warnings)
    assert any('"rtl\\u202eexe.txt"' in w for w in warnings)
    assert any('"../escape"' in w for w in warnings)


def test_the_tool_name_rule_is_the_specs() -> None:
    from kairox_mcp.adapter import tool_problem

    def problem(name: Any) -> str | None:
        return tool_problem({"name": name, "inputSchema": {"type": "object"}})

    for good in ("echo", "get-tiny-image", "git_status", "a.b-c_D9", "x" * 128, "_", "."):
        assert problem(good) is None, good
    for bad in [*BAD_NAMES, "", "x" * 129, "trailing\n", "tab\tname", "é", 5, None]:
        assert problem(bad) is not None, bad
    assert tool_problem({"name": "t", "inputSchema": {"type": "string"}}) is not None
    assert tool_problem({"name": "t", "inputSchema": "x"}) is not None
    assert tool_problem({"name": "t"}) is not None
    assert tool_problem("not an object") is not None


# -- which request a response answered, from its bytes (the parser of outside input) ------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["id", "result", "method", "x", 'q"uote', "\\"]), inner, max_size=4)
    ),
    max_leaves=30,
)
ids = st.integers(min_value=-(2**40), max_value=2**40) | st.text(max_size=12)


@given(
    result=json_values,
    rid=ids,
    order=st.permutations(["jsonrpc", "id", "result"]),
    cut=st.integers(min_value=0, max_value=3000),
)
def test_the_sniffed_id_is_the_messages_own_or_none(result: Any, rid: int | str, order: list[str], cut: int) -> None:
    members = {"jsonrpc": "2.0", "id": rid, "result": result}
    line = json.dumps({k: members[k] for k in order}).encode()
    head = line[: min(cut, WINDOW)]
    sniffed = sniff_response(head, line[-TAIL:])
    if sniffed is None:
        assert not head.strip()
        return
    assert sniffed.id in (rid, None)  # never another request's id (one nested in the result)
    assert not sniffed.id_unusable
    if cut >= len(line):  # the whole message: the scanner reads every member
        assert sniffed == Sniffed(True, rid)
    elif order[-1] == "id" or order == ["result", "id", "jsonrpc"]:  # the id at the end: the tail has it
        assert sniffed.id == rid


@given(data=st.binary(max_size=300))
def test_any_bytes_are_read_without_error_and_only_an_object_can_be_a_response(data: bytes) -> None:
    sniffed = sniff_response(data, data)
    if not data.lstrip(b" \t\r\n").startswith(b"{"):
        assert sniffed is None
    elif sniffed is not None:
        assert sniffed.id is None or isinstance(sniffed.id, int | str)


def test_a_request_from_the_server_is_no_response() -> None:
    line = b'{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"x":1}}'
    sniffed = sniff_response(line, line)
    assert sniffed is not None and not sniffed.is_response


def test_the_splitter_reports_an_overflowing_line_once_before_it_ends() -> None:
    from kairox_stdio._lines import LineSplitter

    splitter = LineSplitter(10, keep_tail=4)
    assert splitter.feed(b"0123456") == [] and splitter.overflow() is None
    assert splitter.feed(b"789abc") == []
    early = splitter.overflow()
    assert early is not None and early.truncated and early.data == b"0123456789" and early.size == 13
    assert splitter.overflow() is None  # once per line
    [line] = splitter.feed(b"def\nok")
    assert line.truncated and line.size == 16 and line.tail == b"cdef"
    assert splitter.overflow() is None  # the next line is short
    assert splitter.flush() is not None


@given(name=st.one_of(st.text(max_size=140), st.from_regex(r"[A-Za-z0-9_.-]{1,130}", fullmatch=True)))
def test_any_tool_name_is_accepted_exactly_when_the_spec_allows_it(name: str) -> None:
    """Property: the MCP rule (1-128 of A-Za-z0-9_.-) and nothing else decides; an accepted
    name sanitises to a valid exported name, a refused one never reaches the registry."""
    import re

    from kairox._names import EXPORTED_NAME_RE
    from kairox.ext import sanitize_name
    from kairox_mcp.adapter import tool_problem

    allowed = re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", name) is not None
    problem = tool_problem({"name": name, "inputSchema": {"type": "object"}})
    assert (problem is None) == allowed, (name, problem)
    if allowed:
        assert EXPORTED_NAME_RE.fullmatch(sanitize_name(f"srv.{name}"))
    else:
        assert isinstance(problem, str) and problem


async def test_a_server_that_dies_writing_a_response_fails_the_call_with_its_exit(
    tmp_path: Path, no_leftovers: None
) -> None:
    """A server that dies mid-answer fails the call as a server that died: the cut last line
    (its own id, no newline) is dropped at EOF, not read as "the response is not JSON"."""
    async with _open(tmp_path, {"c": _stdio("crash_mid_call", max_restarts=0)}) as rt:
        message = await _fails_fast(rt, "c.crash", {"half": True, "code": 9})
    assert "not JSON" not in message, message
    assert "exited unexpectedly; exit code 9" in message and "about to die" in message, message


# -- a server's schema costs one pass over the arguments ---------------------------------------


@pytest.mark.timeout(30)
async def test_a_schemas_backtracking_pattern_costs_one_pass_over_the_argument(
    tmp_path: Path, no_leftovers: None
) -> None:
    """``costly.py``'s tool ``match`` gives ``s`` the pattern ``^(a+)+$``; the argument is 34
    ``a`` and a ``!``. Python's ``re`` (jsonschema's) took 24 s at 28 and more than 60 at 34,
    holding the event loop before the policy was asked; RE2 answers at once."""
    async with _open(tmp_path, {"c": _stdio("costly")}) as rt:
        result = await rt.call_tool("c.match", {"s": "a" * 34 + "!"}, approver=yes)
        assert result.is_error and "does not match '^(a+)+$'" in result.text, result.text
        assert (await rt.call_tool("c.match", {"s": "a" * 100_000}, approver=yes)).text == "matched"
