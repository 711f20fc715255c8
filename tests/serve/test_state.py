"""``[serve.state] redis``: ``[serve.limits]`` counted in Redis, shared by replicas.

Against a real ``redis-server`` (Debian's; ``.ci/run`` installs it): two stores on one
server stand for two replicas, and two ``kairox serve --http --stateless`` processes on
one server share a principal's bucket."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import peers
import pytest
from serve_helpers import KAIROX, Workspace, connect, make_workspace, raw_server, serve_http, with_script
from test_cancel_and_changes import records
from test_forward import ASKS, Host
from test_held import MODERN, _first_round, _held_and_forged, _refused, _retry, _sampled
from test_identity import Idp
from test_limits import _auth
from test_stdio import text_of

from kairox_serve.config import LimitsConfig, StateConfig
from kairox_serve.identity import Principal
from kairox_serve.limits import META_KEY, Admitted, Limited, Limits
from kairox_serve.state import RedisStore, open_store

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]

ALICE = Principal("alice", "jwt")
PASSWORD = "s3cret-redis-pw-4711"
#: the replicas' one public URL (a load balancer's)
GW = "https://gw.example/mcp"


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``redis-server`` on a free 127.0.0.1 port, no persistence, in a temp dir; its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(
                "redis-server is not installed (apt-get install redis-server); CI needs the [serve.state] tests"
            )
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    where = tmp_path_factory.mktemp("redis")
    port = peers.free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    argv += ["--dir", str(where), "--requirepass", PASSWORD]
    log = (where / "redis.log").open("wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        peers.wait_for_port(port, timeout=20, proc=proc)
        yield f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
    finally:
        proc.kill()
        proc.wait(timeout=10)
        log.close()


def _store(url: str, prefix: str, lease: float = 30.0) -> RedisStore:
    return open_store(StateConfig(redis=url, prefix=prefix, lease=lease))


@contextlib.asynccontextmanager
async def _stores(url: str, prefix: str, n: int = 2, lease: float = 30.0) -> Any:
    stores = [_store(url, prefix, lease) for _ in range(n)]
    try:
        yield stores
    finally:
        for store in stores:
            await store.aclose()


# -- two stores on one server: two replicas ---------------------------------------------------


async def test_two_replicas_take_from_one_bucket(redis_url: str, request: pytest.FixtureRequest) -> None:
    """A bucket of 3: the takes of two stores (two replicas, two connections) add up, the
    fourth is refused with the wait of one refill; another prefix is another gateway."""
    prefix = f"{request.node.name[:40]}:"
    async with _stores(redis_url, prefix) as (a, b):
        assert [await s.take("jwt:alice", 3, 3600.0, 3) for s in (a, b, a)] == [0.0, 0.0, 0.0]
        wait = await b.take("jwt:alice", 3, 3600.0, 3)
        assert wait == pytest.approx(1200.0, rel=0.01)  # one call every 1200 s
        assert await a.take("jwt:bob", 3, 3600.0, 3) == 0.0  # another principal has its own
    async with _stores(redis_url, prefix + "other:", 1) as (c,):
        assert await c.take("jwt:alice", 3, 3600.0, 3) == 0.0


async def test_calls_in_flight_are_counted_across_replicas(redis_url: str, request: pytest.FixtureRequest) -> None:
    prefix = f"{request.node.name[:40]}:"
    async with _stores(redis_url, prefix) as (a, b):
        assert await a.acquire("k", 2)
        assert await b.acquire("k", 2)
        assert not await a.acquire("k", 2)  # two in flight, on two replicas
        assert not await b.acquire("k", 2)
        await b.release("k")
        assert await a.acquire("k", 2)
        await b.release("k")  # b holds none: gives back nothing of a's
        assert not await b.acquire("k", 2)
        assert a.leases() == 2 and b.leases() == 0


async def test_a_dead_replicas_calls_stop_counting_and_a_live_ones_do_not(
    redis_url: str, request: pytest.FixtureRequest
) -> None:
    """Replica ``dead`` takes the only slot and never renews it: after its lease the slot
    is free again. Replica ``live`` renews (its :meth:`RedisStore.run`): its slot stays
    taken well past the lease."""
    prefix = f"{request.node.name[:40]}:"
    async with _stores(redis_url, prefix, 3, lease=1.0) as (dead, live, other):
        assert await dead.acquire("d", 1)
        assert not await other.acquire("d", 1)
        with anyio.fail_after(10):
            while not await other.acquire("d", 1):  # noqa: ASYNC110 - a lease expiring in Redis
                await anyio.sleep(0.1)
        assert await live.acquire("l", 1)
        async with anyio.create_task_group() as tg:
            tg.start_soon(live.run)
            for _ in range(30):  # 3 s: three leases
                assert not await other.acquire("l", 1)
                await anyio.sleep(0.1)
            tg.cancel_scope.cancel()


async def test_limits_over_redis_refuse_across_replicas_and_refuse_when_redis_is_down(
    redis_url: str, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis down: the call is refused; the caller (any client, the model) is not told where
    the replicas' Redis is or why it failed, the replica's log is."""
    prefix = f"{request.node.name[:40]}:"
    config = LimitsConfig(rate=2, per=3600.0, concurrent=5)
    async with _stores(redis_url, prefix) as (a, b):
        one, two = Limits(config, a), Limits(config, b)
        first, second = await one.admit(ALICE), await two.admit(ALICE)
        assert isinstance(first, Admitted) and isinstance(second, Admitted)
        over = await one.admit(ALICE)
        assert isinstance(over, Limited) and over.limit == "rate" and over.retry_after == 1800
        await first.release()
        await second.release()
        assert a.leases() == b.leases() == 0  # the refused call kept no slot either
    port = peers.free_port()  # nothing listens there
    down = _store(f"redis://:{PASSWORD}@127.0.0.1:{port}/0", prefix)
    try:
        refused = await Limits(config, down).admit(ALICE)
    finally:
        await down.aclose()
    assert isinstance(refused, Limited) and refused.limit == "unavailable"
    assert "cannot be counted, so it is refused" in refused.message
    assert f"127.0.0.1:{port}" not in refused.message and "redis://" not in refused.message
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert f"127.0.0.1:{port}" in logged and PASSWORD not in logged + refused.message
    assert refused.result().meta == {META_KEY: {"limit": "unavailable"}}


async def test_a_replica_whose_redis_goes_away_says_so_once_as_an_error(
    request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    """``kairox serve`` shows errors only, without ``-v``: a replica's heartbeat that cannot
    reach Redis is an error, logged once for the outage (not every ``lease / 3`` seconds),
    naming the server without its password."""
    port = peers.free_port()  # nothing listens there
    down = _store(f"redis://:{PASSWORD}@127.0.0.1:{port}/0", f"{request.node.name[:40]}:", lease=0.03)
    try:
        with anyio.move_on_after(1.0):  # some thirty beats
            await down.run()
    finally:
        await down.aclose()
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1, errors
    assert f"127.0.0.1:{port}" in errors[0] and PASSWORD not in errors[0]


# -- the config ------------------------------------------------------------------------------


async def test_a_workspace_cannot_choose_the_shared_state(tmp_path: Path) -> None:
    """A trusted workspace's [serve.state] would point every replica's limits at its own Redis: refused."""
    from kairox import Runtime
    from kairox_serve.runtime import BrokenServeConfig, check_serve_config

    ws = make_workspace(tmp_path, serve='[serve.state]\nredis = "redis://evil.example:6379"\n')
    async with Runtime.open(ws.root, start=False, home=ws.home) as rt:
        with pytest.raises(BrokenServeConfig, match=r"kairox.toml: serve.state: is the user's to set"):
            check_serve_config(rt)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (f"http://:{PASSWORD}@host:6379", "serve.state.redis: expected redis://"),
        (f"redis://:{PASSWORD}@host:port", "serve.state.redis: is not a URL"),
        (f"redis://:{PASSWORD}@", "serve.state.redis: expected redis://"),
    ],
)
async def test_a_bad_redis_url_is_refused_without_showing_it(tmp_path: Path, value: str, error: str) -> None:
    from kairox import Runtime

    home = tmp_path / "home"
    home.mkdir()
    (home / "kairox.toml").write_text(f'[serve.state]\nredis = "{value}"\n', encoding="utf-8")
    async with Runtime.open(tmp_path, start=False, home=home) as rt:
        rendered = [e.render() for e in rt.config.errors]
    assert any(error in r for r in rendered), rendered
    assert not any(PASSWORD in r for r in rendered), rendered


def test_config_show_hides_the_redis_password(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, user_config=f'\n[serve.state]\nredis = "redis://:{PASSWORD}@10.0.0.9:6379/0"\n')
    done = peers.run_to_end([*KAIROX, "-w", str(ws.root), "config", "show"], env=ws.env())
    assert "10.0.0.9:6379" in done.stdout, done.stdout + done.stderr
    assert PASSWORD not in done.stdout + done.stderr


# -- two kairox serve --http --stateless replicas on one Redis --------------------------------


@pytest.fixture(scope="module")
def idp() -> Idp:
    return Idp()


async def test_two_gateway_replicas_share_a_principals_rate(tmp_path: Path, idp: Idp, redis_url: str) -> None:
    """Alice may make 3 calls an hour. Her calls go to replica A, then B, then A: the fourth,
    on B, is refused (each replica alone has seen two); bob's bucket is his own."""
    state = f'\n[serve.state]\nredis = "{redis_url}"\nprefix = "{tmp_path.name}:"\n'
    auth = _auth(tmp_path, idp, "rate = 3\nper = 3600\n").replace(
        "[serve.auth]\n", f'[serve.auth]\nresource = "{GW}"\n'
    )
    ws = make_workspace(tmp_path, user_config=auth + state)
    with serve_http(ws, "--stateless") as (url_a, _a), serve_http(ws, "--stateless") as (url_b, _b):
        token = idp.token(GW, sub="alice")  # both replicas are one resource to the IdP
        replies = []
        for n, url in enumerate([url_a, url_b, url_a, url_b]):
            async with connect(url, token=token, mode="legacy") as alice:
                replies.append(await alice.call_tool("wb_echo", {"message": f"a{n}"}))
        assert [text_of(r) for r in replies[:3]] == ["a0", "a1", "a2"]
        assert replies[3].is_error and "has used its 3 calls per 3600 s" in text_of(replies[3]), text_of(replies[3])
        async with connect(url_b, token=idp.token(GW, sub="bob"), mode="legacy") as bob:
            assert text_of(await bob.call_tool("wb_echo", {"message": "bob"})) == "bob"
    # the status line names the shared state, its password hidden
    port = redis_url.rsplit(":", 1)[1].split("/")[0]
    for url in (url_a, url_b):
        log = (tmp_path / f"serve-{url.split(':')[2].split('/')[0]}.log").read_text(encoding="utf-8")
        assert f", shared state in redis://:<redacted>@127.0.0.1:{port}/0" in log, log
        assert PASSWORD not in log


def test_a_gateway_whose_redis_is_down_does_not_serve_and_hides_the_password(tmp_path: Path) -> None:
    port = peers.free_port()
    state = f'\n[serve.state]\nredis = "redis://:{PASSWORD}@127.0.0.1:{port}/0"\n'
    ws = make_workspace(tmp_path, user_config=state)
    argv = [*KAIROX, "-w", str(ws.root), "serve", "--http", "--stateless", "--port", str(peers.free_port())]
    done = peers.run_to_end([*argv, "--token-env", "MCP_TOKEN"], env=ws.env(MCP_TOKEN="t" * 32), timeout=60)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert f"the replicas' shared state at redis://:<redacted>@127.0.0.1:{port}/0" in out, out
    assert PASSWORD not in out


# -- held calls across replicas ------------------------------------------------------------


def _asks(tmp_path: Path, redis_url: str, lease: float = 30.0) -> Workspace:
    state = f'\n[serve.state]\nredis = "{redis_url}"\nprefix = "{tmp_path.name[:40]}:"\nlease = {lease}\n'
    return with_script(
        tmp_path,
        "asks",
        ASKS,
        user_config='"asks.*" = "allow"\n"mcp.asks.sampling" = "allow"\n"mcp.asks.elicitation" = "allow"\n' + state,
    )


async def test_a_held_call_is_continued_through_another_replica(tmp_path: Path, redis_url: str) -> None:
    """The call is held by replica A; its client's retry reaches B, which relays it to A and
    answers with A's result. The attacks, all through B: another client (another bearer
    credential) with the victim's state, and a forged state, are refused, and the backend
    never sees their answer; the state works once."""
    ws = _asks(tmp_path, redis_url)
    with serve_http(ws, "--stateless") as (url_a, _a), serve_http(ws, "--stateless") as (url_b, _b):
        async with (
            connect(url_a, token="victim", mode=MODERN, sampling_callback=Host().sample) as on_a,
            connect(url_b, token="victim", mode=MODERN, sampling_callback=Host().sample) as on_b,
            connect(url_b, token="attacker", mode=MODERN, sampling_callback=Host().sample) as attacker,
        ):
            first, state, forged = await _held_and_forged(on_a)
            stolen = await _refused(attacker, state, forged)
            assert "the call's state belongs to another client" in str(stolen)
            made_up = await _refused(on_b, state[:-1] + ("A" if state[-1] != "A" else "B"), forged)
            assert "expired or is held by another replica" in str(made_up)
            with anyio.fail_after(30):
                done = await _retry(on_b, "asks_ask_model", {"prompt": "hi"}, first)
            assert isinstance(done, types.CallToolResult) and not done.is_error, done
            assert text_of(done) == "m: a held answer"
            assert "forged" not in json.dumps(done.model_dump(mode="json"))
            again = await _refused(on_b, state, forged)  # used once, through B
            assert "expired or is held by another replica" in str(again)


async def test_a_held_prompt_is_continued_through_another_replica(tmp_path: Path, redis_url: str) -> None:
    """A backend's prompt whose get asks (its own ``InputRequiredResult``), held by A; the
    answer, sent to B, reaches the backend through A, and B returns the rendered prompt."""
    ws = _asks(tmp_path, redis_url)
    with serve_http(ws, "--stateless") as (url_a, _a), serve_http(ws, "--stateless") as (url_b, _b):
        async with (
            connect(url_a, token="victim", mode=MODERN, elicitation_callback=Host().elicit) as on_a,
            connect(url_b, token="victim", mode=MODERN, elicitation_callback=Host().elicit) as on_b,
        ):
            first = await on_a.session.get_prompt("asks_greeting", {}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult) and first.input_requests is not None, first
            assert list(first.input_requests) == ["who"]
            with anyio.fail_after(30):
                got = await on_b.session.get_prompt(
                    "asks_greeting",
                    {},
                    input_responses={"who": types.ElicitResult(action="accept", content={"name": "Ada"})},
                    request_state=first.request_state,
                    allow_input_required=True,
                )
    assert isinstance(got, types.GetPromptResult), got
    assert [m.content.text for m in got.messages if isinstance(m.content, types.TextContent)] == ["Greet Ada."]


def _gets(redis_url: str) -> int:
    """How many GETs the Redis server has answered (each relayed retry looks its holder up with one)."""
    import redis

    with redis.Redis.from_url(redis_url) as client:
        stats: dict[str, Any] = client.info("commandstats")
    return int(stats.get("cmdstat_get", {}).get("calls", 0))


async def test_a_made_up_request_state_is_refused_without_asking_redis(tmp_path: Path, redis_url: str) -> None:
    """A retry is not counted by [serve.limits] (it continues a call that was): a state the
    gateway could not have minted (a megabyte of it, a Redis glob, a key with the prefix's
    separator and a newline) must be refused before any lookup, or every principal, over its
    limits or not, could make each replica send Redis commands with keys of its choosing."""
    ws = _asks(tmp_path, redis_url)
    with serve_http(ws, "--stateless") as (url, _proc):
        async with connect(url, token="attacker", mode=MODERN, sampling_callback=Host().sample) as attacker:
            before = _gets(redis_url)
            for state in ("x" * 1_000_000, "*", f"{tmp_path.name[:40]}:held:*", "a\r\nFLUSHALL\r\n", "A" * 42):
                refused = await _refused(attacker, state, {})
                assert "expired or is held by another replica" in str(refused)
            assert _gets(redis_url) == before, "made-up request states were looked up in Redis"


async def test_a_retry_whose_replica_died_fails_cleanly(tmp_path: Path, redis_url: str) -> None:
    """Replica A holds the call and dies (SIGKILL, its backend with it): the retry that
    reaches B fails within seconds saying the holder is gone, not after a client timeout."""
    ws = _asks(tmp_path, redis_url, lease=1.0)
    with serve_http(ws, "--stateless") as (url_a, proc_a), serve_http(ws, "--stateless") as (url_b, _b):
        async with connect(url_a, token="victim", mode=MODERN, sampling_callback=Host().sample) as on_a:
            first = await _first_round(on_a, "asks_ask_model", {"prompt": "hi"})
        assert first.request_state is not None
        os.killpg(proc_a.pid, signal.SIGKILL)
        proc_a.wait(timeout=10)
        async with connect(url_b, token="victim", mode=MODERN, sampling_callback=Host().sample) as on_b:
            with anyio.fail_after(20):
                gone = await _refused(on_b, first.request_state, {k: _sampled() for k in first.input_requests or {}})
        assert "the replica that held the call is gone" in str(gone), gone


async def test_a_retry_whose_replica_stopped_fails_at_once(tmp_path: Path, redis_url: str) -> None:
    """Replica A holds the call and is stopped (SIGTERM, as in a rolling deploy): its
    heartbeat goes with it, so the retry that reaches B fails at once saying the holder is
    gone, not ``lease`` (30) seconds later while B waits on a replica that will never answer."""
    ws = _asks(tmp_path, redis_url, lease=30.0)
    with serve_http(ws, "--stateless") as (url_a, proc_a), serve_http(ws, "--stateless") as (url_b, _b):
        async with connect(url_a, token="victim", mode=MODERN, sampling_callback=Host().sample) as on_a:
            first = await _first_round(on_a, "asks_ask_model", {"prompt": "hi"})
        assert first.request_state is not None
        proc_a.send_signal(signal.SIGTERM)
        proc_a.wait(timeout=20)
        async with connect(url_b, token="victim", mode=MODERN, sampling_callback=Host().sample) as on_b:
            with anyio.fail_after(10):
                gone = await _refused(on_b, first.request_state, {k: _sampled() for k in first.input_requests or {}})
        assert "the replica that held the call is gone" in str(gone), gone


#: a raw JSON-lines (handshake-era) server whose tool ``ask`` asks the client's model, then
#: never answers; it records the model's answer and every ``notifications/cancelled``
ASKS_THEN_BLOCKS = raw_server(
    "slow",
    ["ask"],
    """
    elif method is None and msg.get("id") == "s1":
        with open(marker, "a") as fh:
            fh.write(json.dumps({"answered": 1}) + "\\n")
    elif method == "tools/call":
        write({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}})
    elif method == "notifications/cancelled":
        with open(marker, "a") as fh:
            fh.write(json.dumps({"cancelled": msg["params"].get("requestId")}) + "\\n")
    """,
    setup="marker = sys.argv[1]\n",
)


async def test_a_relayed_retry_the_client_cancels_cancels_the_held_call(tmp_path: Path, redis_url: str) -> None:
    """The call held by A gets its answer through B, then runs on; the client gives the
    retry up (on B): A cancels the call at its backend, not ``held_call_timeout`` later."""
    marker = tmp_path / "slow.log"
    state = f'\n[serve.state]\nredis = "{redis_url}"\nprefix = "{tmp_path.name[:40]}:"\n'
    user = '"slow.*" = "allow"\n"mcp.slow.sampling" = "allow"\n' + state
    ws = with_script(tmp_path, "slow", ASKS_THEN_BLOCKS, str(marker), user_config=user)
    with serve_http(ws, "--stateless") as (url_a, _a), serve_http(ws, "--stateless") as (url_b, _b):
        async with (
            connect(url_a, token="victim", mode=MODERN, sampling_callback=Host().sample) as on_a,
            connect(url_b, token="victim", mode=MODERN, sampling_callback=Host().sample) as on_b,
        ):
            first = await _first_round(on_a, "slow_ask", {})
            async with anyio.create_task_group() as tg:
                tg.start_soon(_retry, on_b, "slow_ask", {}, first)
                with anyio.fail_after(30):
                    while not any("answered" in r for r in records(marker)):  # noqa: ASYNC110 - another process's file
                        await anyio.sleep(0.05)
                tg.cancel_scope.cancel()  # the client gives the retry up
            with anyio.fail_after(30):
                while not any("cancelled" in r for r in records(marker)):  # noqa: ASYNC110 - as above
                    await anyio.sleep(0.05)
