"""A backend server's sampling, elicitation and roots requests reach a 2026-07-28 client as
``InputRequiredResult``\\s: the gateway holds the call (``kairox_serve.held``) while the
client answers and retries with the ``requestState`` token (the SDK ``Client`` drives the
rounds). Bounded: ``[serve] max_held_calls``, ``held_call_timeout``; a token works once, for
the call it names."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from serve_helpers import TOKEN, connect, gateway_client, serve_http, with_script
from test_forward import ASKS, TRANSPORTS, Host, with_sdk_backend, with_two_backends
from test_stdio import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]

MODERN = "auto"  # the SDK client's default: 2026-07-28 where the server speaks it


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_declined_elicitation_reaches_the_backend(tmp_path: Path, transport: str) -> None:
    ws = with_sdk_backend(tmp_path)
    host = Host(backend_action="decline")
    async with gateway_client(ws, transport, mode=MODERN, elicitation_callback=host.elicit) as client:
        result = await client.call_tool("asks_ask_user", {"question": "Your name?"})
        assert json.loads(text_of(result)) == {"action": "decline", "content": None}, text_of(result)
        assert host.forms == ["Your name?"]


async def test_roots_of_a_modern_stdio_client(tmp_path: Path) -> None:
    """Over stdio the client is on this machine: its roots, asked in a round, are the backend's."""
    ws = with_sdk_backend(tmp_path)
    mine = tmp_path / "client-root"
    mine.mkdir()
    asked: list[int] = []

    async def list_roots(context: Any) -> types.ListRootsResult:
        asked.append(1)
        return types.ListRootsResult.model_validate({"roots": [{"uri": mine.as_uri(), "name": "mine"}]})

    async with gateway_client(ws, "stdio", mode=MODERN, list_roots_callback=list_roots) as client:
        result = await client.call_tool("asks_roots", {})
        assert not result.is_error, text_of(result)
    assert json.loads(text_of(result)) == [{"uri": mine.as_uri(), "name": "mine"}]
    assert asked == [1]


async def _first_round(client: Client, tool: str, arguments: dict[str, Any]) -> types.InputRequiredResult:
    first = await client.session.call_tool(tool, arguments, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult), first
    assert first.request_state and first.input_requests
    return first


def _sampled(text: str = "a held answer") -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(text=text), model="m")


async def _held_and_forged(
    client: Client,
) -> tuple[types.InputRequiredResult, str, dict[str, types.CreateMessageResult]]:
    """``client``'s ``asks_ask_model`` call, held: its first round, its state, and answers to
    each of its requests that its client did not give (an attacker's)."""
    first = await _first_round(client, "asks_ask_model", {"prompt": "hi"})
    assert first.input_requests is not None and first.request_state is not None
    return first, first.request_state, {key: _sampled("forged answer") for key in first.input_requests}


async def _refused(client: Client, state: str, answers: dict[str, Any]) -> MCPError:
    """``client``'s retry of an ``asks_ask_model`` call with ``state`` and ``answers``, refused
    as invalid params (the tool never runs); the error."""
    with pytest.raises(MCPError) as refused:
        await client.session.call_tool(
            "asks_ask_model", {"prompt": "hi"}, input_responses=answers, request_state=state, allow_input_required=True
        )
    assert refused.value.code == types.INVALID_PARAMS, refused.value
    return refused.value


async def _retry(
    client: Client, tool: str, arguments: dict[str, Any], first: types.InputRequiredResult
) -> types.CallToolResult | types.InputRequiredResult:
    """The client's retry of ``first``'s call: every request answered with :func:`_sampled`."""
    assert first.input_requests is not None
    return await client.session.call_tool(
        tool,
        arguments,
        input_responses={key: _sampled() for key in first.input_requests},
        request_state=first.request_state,
        allow_input_required=True,
    )


async def test_a_state_works_once_for_its_call(tmp_path: Path) -> None:
    """Driving the rounds by hand: an unknown token, a token for other arguments, a token
    used twice are refused with a clear error; the right retry completes the call."""
    ws = with_script(tmp_path, "asks", ASKS, user_config='"asks.*" = "allow"\n"mcp.asks.sampling" = "allow"\n')
    host = Host()
    async with gateway_client(ws, "stdio", mode=MODERN, sampling_callback=host.sample) as client:
        with pytest.raises(MCPError) as unknown:
            await client.session.call_tool(
                "asks_ask_model", {"prompt": "hi"}, request_state="no-such-state", allow_input_required=True
            )
        assert unknown.value.code == types.INVALID_PARAMS
        assert "the call's state expired or is held by another replica; retry the call" in str(unknown.value)

        first = await _first_round(client, "asks_ask_model", {"prompt": "hi"})
        assert first.input_requests is not None
        [(_key, request)] = first.input_requests.items()
        assert isinstance(request, types.CreateMessageRequest)
        with pytest.raises(MCPError, match="another tool or prompt, or other arguments"):
            await _retry(client, "asks_ask_model", {"prompt": "something else"}, first)
        done = await _retry(client, "asks_ask_model", {"prompt": "hi"}, first)
        assert isinstance(done, types.CallToolResult) and not done.is_error, done
        assert text_of(done) == "m: a held answer"
        with pytest.raises(MCPError, match="expired or is held by another replica"):
            await _retry(client, "asks_ask_model", {"prompt": "hi"}, first)


@pytest.mark.parametrize("stalls", [False, True])
async def test_a_held_call_whose_client_stays_away_expires(tmp_path: Path, stalls: bool) -> None:
    """``held_call_timeout = 1``: the client answers after the call was cancelled, and is told
    to retry the call; a fresh call works. A client that keeps retrying without the answer
    (each retry minting a new state) does not keep the call held past the timeout either."""
    ws = with_script(tmp_path, "asks", ASKS, user_config='"asks.*" = "allow"\n"mcp.asks.sampling" = "allow"\n')
    toml = ws.root / "kairox.toml"
    toml.write_text(toml.read_text() + "\n[serve]\nheld_call_timeout = 1\n")
    from kairox_testing import trust_workspace

    trust_workspace(ws.root, ws.home, env=ws.env())
    async with gateway_client(ws, "stdio", mode=MODERN, sampling_callback=Host().sample) as client:
        first = await _first_round(client, "asks_ask_model", {"prompt": "hi"})
        assert first.input_requests is not None
        if stalls:  # retries with no answers, for longer than the timeout
            for _ in range(6):
                await anyio.sleep(0.5)
                try:
                    stalled = await client.session.call_tool(
                        "asks_ask_model",
                        {"prompt": "hi"},
                        input_responses={},
                        request_state=first.request_state,
                        allow_input_required=True,
                    )
                except MCPError:  # expired meanwhile: the answer below is refused the same way
                    break
                assert isinstance(stalled, types.InputRequiredResult), stalled
                first = stalled
        else:
            await anyio.sleep(3)  # the client stays away longer than held_call_timeout
        with pytest.raises(MCPError, match="the call's state expired or is held by another replica; retry the call"):
            await _retry(client, "asks_ask_model", {"prompt": "hi"}, first)
        result = await client.call_tool("asks_ask_model", {"prompt": "hi"})
        assert not result.is_error and "an answer from the gateway's client" in text_of(result), text_of(result)


async def test_held_calls_are_bounded(tmp_path: Path) -> None:
    """``max_held_calls = 1``: while one client's call is held, another's backend request is
    refused, naming the limit; the held call completes."""
    rules = "".join(f'"{n}.*" = "allow"\n"mcp.{n}.sampling" = "allow"\n' for n in ("asks", "asks2"))
    ws = with_two_backends(tmp_path, rules, "[serve]\nmax_held_calls = 1\n")
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        second: list[str] = []

        async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
            if not second:  # the first call is held now: a second client's call (on the other backend) asks too
                async with connect(url, mode=MODERN, sampling_callback=Host().sample) as other:
                    second.append(text_of(await other.call_tool("asks2_ask_model", {"prompt": "second"})))
            return _sampled("first answer")

        async with connect(url, mode=MODERN, sampling_callback=sample) as client:
            result = await client.call_tool("asks_ask_model", {"prompt": "first"})
            assert not result.is_error and text_of(result) == "m: first answer", text_of(result)
            assert len(second) == 1 and "[serve] max_held_calls = 1" in second[0], second
            # the first call is done: the next one may be held again
            result = await client.call_tool("asks2_ask_model", {"prompt": "third"})
            assert not result.is_error and text_of(result) == "m: first answer", text_of(result)


#: a backend whose tool asks for sampling and dies while the answer is awaited
CRASHES = textwrap.dedent(
    """
    import os, sys, threading, time
    from typing import Annotated

    import mcp.types as types
    from mcp.server.mcpserver import MCPServer, Resolve, Sample

    server = MCPServer("crashes")
    PIDFILE = sys.argv[1]

    def question(prompt: str) -> Sample:
        with open(PIDFILE, "w") as f:
            f.write(str(os.getpid()))
        threading.Thread(target=lambda: (time.sleep(0.5), os._exit(3)), daemon=True).start()
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
        return Sample([message], max_tokens=20)

    @server.tool()
    def ask_and_die(prompt: str, answer: Annotated[types.CreateMessageResult, Resolve(question)]) -> str:
        \"\"\"Ask the client's model, then never answer.\"\"\"
        return "unreachable"

    server.run("stdio")
    """
)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_a_backend_that_crashes_while_held_fails_the_retry(tmp_path: Path) -> None:
    pidfile = tmp_path / "backend.pid"
    ws = with_script(
        tmp_path,
        "crashes",
        CRASHES,
        str(pidfile),
        user_config='"crashes.*" = "allow"\n"mcp.crashes.sampling" = "allow"\n',
    )
    async with gateway_client(ws, "stdio", mode=MODERN, sampling_callback=Host().sample) as client:
        first = await _first_round(client, "crashes_ask_and_die", {"prompt": "hi"})
        assert first.input_requests is not None
        pid = int(pidfile.read_text())
        for _ in range(600):  # the backend exits (and is reaped) while the call is held
            if _gone(pid):
                break
            await anyio.sleep(0.05)
        assert _gone(pid)
        with anyio.fail_after(30):  # not held until held_call_timeout (300 s)
            retry = await _retry(client, "crashes_ask_and_die", {"prompt": "hi"}, first)
        assert isinstance(retry, types.CallToolResult) and retry.is_error, retry
        assert "failed" in text_of(retry) and "unreachable" not in text_of(retry), text_of(retry)


async def test_a_forged_state_is_refused_and_answers_nothing(tmp_path: Path) -> None:
    """The attack: a client that did not get a call's ``requestState`` (another client, a
    different bearer credential) retries with it, or a client alters one, to slip its own
    answer into a held call. Each is a JSON-RPC error (not the tool's result), the held
    call's backend never sees the forged answer, and the call's own client completes it."""
    ws = with_script(tmp_path, "asks", ASKS, user_config='"asks.*" = "allow"\n"mcp.asks.sampling" = "allow"\n')
    with serve_http(ws) as (url, _proc):  # no --token-env: each client's credential is its own
        async with (
            connect(url, token="victim", mode=MODERN, sampling_callback=Host().sample) as victim,
            connect(url, token="attacker", mode=MODERN, sampling_callback=Host().sample) as attacker,
        ):
            first, state, forged = await _held_and_forged(victim)
            attempts = [
                (attacker, state),  # another client, with the victim's state
                (victim, state + "-TAMPERED"),
                (victim, state[:-1] + ("A" if state[-1] != "A" else "B")),
            ]
            for client, request_state in attempts:
                refused = await _refused(client, request_state, forged)
                assert "retry the call" in str(refused)
            done = await _retry(victim, "asks_ask_model", {"prompt": "hi"}, first)
            assert isinstance(done, types.CallToolResult) and not done.is_error, done
            assert text_of(done) == "m: a held answer"
            assert "forged" not in json.dumps(done.model_dump(mode="json"))


async def test_a_client_that_never_retries_blocks_no_other_client(tmp_path: Path) -> None:
    """Two clients on one backend: the first leaves its call held (it never retries); the
    second client's call on the same backend asks too, and its request reaches the second
    client (the backend's input requests are answered in its caller's call, so they are
    told apart), not refused until ``held_call_timeout``."""
    ws = with_script(tmp_path, "asks", ASKS, user_config='"asks.*" = "allow"\n"mcp.asks.sampling" = "allow"\n')
    with serve_http(ws) as (url, _proc):
        async with (
            connect(url, token="away", mode=MODERN, sampling_callback=Host().sample) as away,
            connect(url, token="here", mode=MODERN, sampling_callback=Host().sample) as here,
        ):
            await _first_round(away, "asks_ask_model", {"prompt": "left held"})
            with anyio.fail_after(30):
                result = await here.call_tool("asks_ask_model", {"prompt": "second"})
            assert not result.is_error, text_of(result)
            assert "an answer from the gateway's client" in text_of(result), text_of(result)
