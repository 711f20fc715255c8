"""``kairox serve --http`` and ``kairox_serve.asgi:app`` as real processes, real sockets,
the mcp SDK's client (both protocol eras) and raw HTTP for the refusals."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import peers
import pytest
from serve_helpers import (
    ACCEPT,
    INIT,
    TOKEN,
    connect,
    make_workspace,
    refused,
    serve_http,
    serve_http_up,
    uvicorn_workers,
    with_backend,
    with_script,
)
from test_stdio import Answers, text_of

from kairox import ConfigError

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]


def shared_gateway(tmp_path_factory: pytest.TempPathFactory, *args: str) -> Iterator[str]:
    """``kairox serve --http ARGS`` (with a token) over :func:`make_workspace`, for the tests
    of this module that need nothing else: each test's client is a new MCP session (or, with
    ``--stateless``, none). Yields the endpoint URL once the backend is up, which is before
    any test's ``no_leftovers`` looks (a module-scoped fixture is set up first)."""
    ws = make_workspace(tmp_path_factory.mktemp("shared-gateway"))
    with serve_http_up(ws, "wb_echo", *args, mode="auto") as (url, _proc):
        yield url


@pytest.fixture(scope="module")
def stateful(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The module's shared ``kairox serve --http`` (:func:`shared_gateway`)."""
    yield from shared_gateway(tmp_path_factory)


@pytest.fixture(scope="module")
def stateless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The module's shared ``kairox serve --http --stateless`` (:func:`shared_gateway`)."""
    yield from shared_gateway(tmp_path_factory, "--stateless")


def gateway_output(tmp_path: Path) -> str:
    (log,) = tmp_path.glob("serve-*.log")
    return log.read_text(errors="replace")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_client_over_http(stateful: str, mode: str) -> None:
    url = stateful
    async with connect(url, mode=mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"fs_read", "wb_echo"} <= names
        result = await client.call_tool("wb_echo", {"message": "over http"})
        assert text_of(result) == "over http"
        assert (await client.call_tool("wb_env", {})).is_error
        refused = await client.call_tool("wb_cwd", {})
        assert refused.is_error and "needs approval" in text_of(refused)
        assert [p.name for p in (await client.list_prompts()).prompts] == ["greet"]
    for decision, ok in (("once", True), ("deny", False)):
        answers = Answers(decision)
        async with connect(url, mode=mode, elicitation_callback=answers) as client:
            result = await client.call_tool("wb_cwd", {})
            assert result.is_error is not ok, text_of(result)
            assert len(answers.asked) == 1


async def test_allow_for_session_belongs_to_the_http_session(stateful: str) -> None:
    url = stateful
    first = Answers("session")
    async with connect(url, mode="legacy", elicitation_callback=first) as client:
        for _ in range(2):
            assert not (await client.call_tool("wb_cwd", {})).is_error
    assert len(first.asked) == 1
    second = Answers("once")
    async with connect(url, mode="legacy", elicitation_callback=second) as client:
        assert not (await client.call_tool("wb_cwd", {})).is_error
    assert len(second.asked) == 1  # another connection: its own session, asked again


async def test_refusals(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        async with httpx2.AsyncClient(timeout=30) as http:
            for auth in (None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer"):
                headers = dict(ACCEPT, **({"Authorization": auth} if auth else {}))
                response = await http.post(url, json=INIT, headers=headers)
                assert response.status_code == 401, auth
                assert response.headers["www-authenticate"] == "Bearer"
                assert "access-control-allow-origin" not in response.headers
            good = dict(ACCEPT, Authorization=f"Bearer {TOKEN}")
            response = await http.post(url, json=INIT, headers={**good, "Origin": "https://evil.example"})
            assert response.status_code == 403
            assert "access-control-allow-origin" not in response.headers
            response = await http.post(url, json=INIT, headers={**good, "Origin": "http://localhost:5173"})
            assert response.status_code == 200
            assert "access-control-allow-origin" not in response.headers
            response = await http.post(url.replace("/mcp", "/other"), json=INIT, headers=good)
            assert response.status_code == 404
        async with connect(url, mode="legacy") as client:
            await client.call_tool("wb_echo", {"message": "x"})
    # the token never shows: not in the gateway's output (its start line names only the variable)
    output = gateway_output(tmp_path)
    assert "token from $MCP_TOKEN" in output and TOKEN not in output


def test_wide_bind_without_token_or_unset_token_is_refused(tmp_path: Path) -> None:
    """In process (``KairoxHarness.cli``): the refusal comes before anything starts; the
    other tests run ``kairox serve`` as the program."""
    from kairox_testing import KairoxHarness

    ws = make_workspace(tmp_path)
    harness = KairoxHarness(ws.root, ws.home, env=ws.env())
    wide = harness.cli("serve", "--http", "--host", "0.0.0.0", "--port", str(peers.free_port()), load_entrypoints=True)
    assert wide.exit_code == 1, wide.output
    assert "refusing to serve 0.0.0.0 without a token" in wide.stderr
    unset = harness.cli("serve", "--http", "--token-env", "NOT_SET_ANYWHERE", load_entrypoints=True)
    assert unset.exit_code == 2 and "NOT_SET_ANYWHERE is not set" in unset.stderr


#: a backend that leaves a marker when it is started at all
MARKER_SERVER = "import pathlib, sys\npathlib.Path(sys.argv[1]).write_text('started')\n"


def test_a_port_in_use_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """A port someone listens on: one line saying so and what to do, exit 1, and the
    workspace's servers never started (no traceback of uvicorn's exit after they had)."""
    marker = tmp_path / "backend-started"
    ws = with_script(tmp_path, "mark", MARKER_SERVER, str(marker))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        err, _proc = refused(ws, "--http", "--port", str(port), timeout=120)
    assert f"kairox serve cannot listen on 127.0.0.1:{port}: Address already in use; pass another --port" in err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert not marker.exists()


async def test_without_token_the_host_is_checked(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with serve_http(ws) as (url, _proc):
        async with httpx2.AsyncClient(timeout=30) as http:
            # a name re-bound to 127.0.0.1 (DNS rebinding) arrives with its own Host
            response = await http.post(url, json=INIT, headers={**ACCEPT, "Host": "attacker.example:8000"})
            assert response.status_code == 421
            response = await http.post(url, json=INIT, headers=ACCEPT)
            assert response.status_code == 200
        async with connect(url, token=None, mode="legacy") as client:
            assert "wb_echo" in {t.name for t in (await client.list_tools()).tools}
    log = (ws.root.parent / f"serve-{url.split(':')[2].split('/')[0]}.log").read_text()
    assert "no token: loopback only" in log
    assert "any process on this machine, any other user's too, can call this workspace's tools" in log


async def test_four_concurrent_clients(stateful: str) -> None:
    url = stateful
    seen: dict[int, list[str]] = {}

    async def one(n: int) -> None:
        async with connect(url, mode="legacy" if n % 2 else "auto") as client:
            got = []
            for i in range(5):
                result = await client.call_tool("wb_echo", {"message": f"client {n} call {i}"})
                got.append(text_of(result))
            seen[n] = got

    async with anyio.create_task_group() as tg:
        for n in range(4):
            tg.start_soon(one, n)
    assert seen == {n: [f"client {n} call {i}" for i in range(5)] for n in range(4)}


@pytest.mark.timeout(90)
async def test_one_clients_catastrophic_argument_does_not_hold_the_others(tmp_path: Path) -> None:
    """Client A sends 34 ``a`` and a ``!`` for a backend tool whose schema has the pattern
    ``^(a+)+$`` (``costly.py``); meanwhile client B lists the tools. Checked with Python's
    ``re`` the argument held the gateway's event loop for minutes, and B got nothing."""
    costly = peers.fixture_server("costly")
    ws = with_backend(tmp_path, "costly", *costly, user_config='"costly.*" = "allow"\n')
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        async with connect(url) as a, connect(url) as b:
            assert "costly_match" in {t.name for t in (await b.list_tools()).tools}
            answers: dict[str, str] = {}

            async def attack() -> None:
                answers["a"] = text_of(await a.call_tool("costly_match", {"s": "a" * 34 + "!"}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(attack)
                await anyio.sleep(1)  # A's request reaches the gateway first
                assert "costly_match" in {t.name for t in (await b.list_tools()).tools}
            assert "does not match '^(a+)+$'" in answers["a"], answers


async def test_two_stateless_workers_serve_one_client(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, user_config='"shell.exec" = "allow"\n')
    env = ws.env(
        KAIROX_WORKSPACE=str(ws.root),
        KAIROX_SERVE_TOKEN_ENV="MCP_TOKEN",
        MCP_TOKEN=TOKEN,
        KAIROX_SERVE_STATELESS="1",
    )
    with uvicorn_workers(ws, 2, env) as url:
        # a new TCP connection for every request: the kernel spreads them over the workers
        limits = httpx2.Limits(max_keepalive_connections=0)
        workers: set[str] = set()
        for mode in ("legacy", "auto"):
            async with connect(url, mode=mode, limits=limits) as client:
                for i in range(30):
                    echo = await client.call_tool("wb_echo", {"message": f"m{i}"})
                    assert text_of(echo) == f"m{i}"
                    pid = await client.call_tool("shell_exec", {"command": "echo $PPID"})
                    assert not pid.is_error, text_of(pid)
                    workers.update(re.findall(r"^\d+$", text_of(pid), re.M)[:1])
                    if len(workers) == 2 and i > 5:
                        break
        assert len(workers) == 2, f"one worker served every request: {workers}"


async def test_asgi_refuses_a_wide_bind_without_token(tmp_path: Path) -> None:
    from kairox import Runtime
    from kairox_serve.asgi import app_from_env
    from kairox_serve.http import GatewayApp, InsecureBind

    # the app starts (its lifespan) only once it knows [serve.auth], which may serve a wide address
    wide = app_from_env({"KAIROX_WORKSPACE": str(tmp_path), "KAIROX_SERVE_HOST": "0.0.0.0"})
    (tmp_path / "home").mkdir()
    app = GatewayApp(wide.settings, lambda: Runtime.open(tmp_path, start=False, home=tmp_path / "home"))
    with pytest.raises(InsecureBind, match=r"without a token.*KAIROX_SERVE_TOKEN_ENV"):
        async with app.serving():
            pytest.fail("served 0.0.0.0 without a token")
    with pytest.raises(InsecureBind, match="MISSING is not set"):
        app_from_env({"KAIROX_WORKSPACE": str(tmp_path), "KAIROX_SERVE_TOKEN_ENV": "MISSING"})
    with pytest.raises(InsecureBind, match="the token is 1 characters; use at least 16") as caught:
        app_from_env({"KAIROX_WORKSPACE": str(tmp_path), "KAIROX_SERVE_TOKEN_ENV": "T", "T": "a"})
    assert "'a'" not in str(caught.value)
    app = app_from_env({"KAIROX_WORKSPACE": str(tmp_path), "KAIROX_SERVE_TOKEN_ENV": "T", "T": TOKEN})
    assert app.settings.token == TOKEN and TOKEN not in repr(app.settings)


def test_asgi_errors_name_the_variables_an_embedder_sets(tmp_path: Path) -> None:
    """Under ``kairox_serve.asgi`` there is no ``--token-env`` option: each refusal names the
    ``KAIROX_SERVE_*`` variable to set, and a ``KAIROX_SERVE_STATELESS`` that is neither a yes
    nor a no is refused rather than read as "off" (a typo must not make replicas stateful)."""
    from kairox_serve.asgi import app_from_env
    from kairox_serve.http import InsecureBind

    base = {"KAIROX_WORKSPACE": str(tmp_path)}
    with pytest.raises(InsecureBind, match="KAIROX_SERVE_TOKEN_ENV=MISSING"):
        app_from_env({**base, "KAIROX_SERVE_TOKEN_ENV": "MISSING"})
    with pytest.raises(InsecureBind, match="KAIROX_SERVE_TOKEN_ENV=T"):
        app_from_env({**base, "KAIROX_SERVE_TOKEN_ENV": "T", "T": "a"})
    for typo in ("ture", "2", "stateless"):
        with pytest.raises(ConfigError, match=f"KAIROX_SERVE_STATELESS: {typo!r}"):
            app_from_env({**base, "KAIROX_SERVE_STATELESS": typo})
    for yes, no in (("1", "0"), ("true", "false"), ("YES", "no"), ("on", "off")):
        assert app_from_env({**base, "KAIROX_SERVE_STATELESS": yes}).settings.stateless
        assert not app_from_env({**base, "KAIROX_SERVE_STATELESS": no}).settings.stateless
    assert not app_from_env({**base, "KAIROX_SERVE_STATELESS": ""}).settings.stateless


async def test_progress_and_list_changed_pass_through(tmp_path: Path) -> None:
    """A backend's progress reaches the gateway's client (server-everything's long operation)."""
    js = peers.everything_server_js()
    ws = with_backend(tmp_path, "ev", "node", js, "stdio", user_config='"ev.*" = "allow"\n')
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        async with connect(url, mode="legacy") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "ev_trigger-long-running-operation" in names
            steps: list[tuple[float, float | None]] = []

            async def progress(done: float, total: float | None, message: str | None) -> None:
                steps.append((done, total))

            result = await client.call_tool(
                "ev_trigger-long-running-operation", {"duration": 0.5, "steps": 4}, progress_callback=progress
            )
            assert not result.is_error, text_of(result)
            assert steps == [(1, 4), (2, 4), (3, 4), (4, 4)]
            assert isinstance(result.content[0], types.TextContent)


async def test_approvals_last_one_call_where_no_session_lasts(stateful: str, stateless: str) -> None:
    """Where the gateway keeps no session between requests (``--stateless``; 2026-07-28 over
    HTTP, which has no connections) the form offers this call only and says so, and the
    next call asks again; a refusal for want of a back channel says the same. A stateful
    handshake-era connection is offered "for this session"."""
    url = stateless
    answers = Answers("once")
    async with connect(url, mode="auto", elicitation_callback=answers) as client:
        for _ in range(2):
            result = await client.call_tool("wb_cwd", {})
            assert not result.is_error, text_of(result)
    assert answers.choices == [["once", "deny"], ["once", "deny"]]
    assert all("an approval covers this one call" in asked for asked in answers.asked)
    async with connect(url, mode="legacy", elicitation_callback=Answers("session")) as client:
        refused = await client.call_tool("wb_cwd", {})
    assert refused.is_error and "could cover only this one call" in text_of(refused), text_of(refused)
    assert "needs approval" in text_of(refused) and '"wb.cwd" = "allow"' in text_of(refused)
    url = stateful
    for mode, offered in (("legacy", ["once", "session", "deny"]), ("auto", ["once", "deny"])):
        answers = Answers("once")
        async with connect(url, mode=mode, elicitation_callback=answers) as client:
            assert not (await client.call_tool("wb_cwd", {})).is_error
        assert answers.choices == [offered], mode


async def test_an_answer_the_form_did_not_offer_is_a_deny(stateful: str, stateless: str) -> None:
    """A 2026-07-28 client over HTTP (stateful or ``--stateless``) is offered "this call" or
    "deny": answering "session" anyway denies, and the refusal says the form did not offer it."""
    for args, url in (((), stateful), (("--stateless",), stateless)):
        answers = Answers("session")
        async with connect(url, mode="auto", elicitation_callback=answers) as client:
            refused = await client.call_tool("wb_cwd", {})
        assert answers.choices == [["once", "deny"]], args
        assert refused.is_error, (args, text_of(refused))
        assert "'session', which the form did not offer (it offered once, deny)" in text_of(refused), text_of(refused)
        assert "an answer the form did not offer is a deny" in text_of(refused)
