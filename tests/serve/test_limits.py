"""``[serve.limits]``: per-principal rate and concurrency limits of the gateway's tool calls.

The token bucket and the store's bounds with an injected clock (no time passes); the limits
against ``kairox serve --http`` as a real process, with JWT principals from a local identity
provider (``test_identity.Idp``), the SDK's client, and a backend whose tool answers only
when the test says so (a release file)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from serve_helpers import assert_names_file_and_field, connect, make_workspace, raw_server, serve_http, with_script
from test_identity import ISSUER, Idp
from test_stdio import Answers, text_of

from kairox_serve.config import LimitRule, LimitsConfig
from kairox_serve.identity import Principal
from kairox_serve.limits import META_KEY, Admitted, Limited, Limits, MemoryStore

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


ALICE = Principal("alice", "jwt")
BOB = Principal("bob", "jwt", groups=frozenset({"ci"}))


# -- the bucket and the store, with an injected clock ------------------------------------------


async def test_a_bucket_allows_its_burst_then_says_when_to_retry() -> None:
    clock = Clock()
    store = MemoryStore(100, clock)
    assert [await store.take("a", 2, 60.0, 2) for _ in range(2)] == [0.0, 0.0]
    assert await store.take("a", 2, 60.0, 2) == pytest.approx(30.0)  # one call every 30 s
    assert await store.take("b", 2, 60.0, 2) == 0.0  # another key has its own bucket
    clock.now += 10
    assert await store.take("a", 2, 60.0, 2) == pytest.approx(20.0)  # a refused take takes nothing
    clock.now += 20
    assert await store.take("a", 2, 60.0, 2) == 0.0
    assert await store.take("a", 2, 60.0, 2) == pytest.approx(30.0)
    clock.now += 3600  # a long rest fills the bucket to its burst, no further
    assert [await store.take("a", 2, 60.0, 2) for _ in range(3)][-1] > 0


@settings(max_examples=80, deadline=None)
@given(
    rate=st.integers(1, 20),
    per=st.sampled_from([1.0, 7.5, 60.0]),
    burst=st.integers(1, 20),
    steps=st.lists(st.floats(0, 30, allow_nan=False), min_size=1, max_size=60),
)
def test_a_bucket_never_lets_more_than_burst_plus_rate(rate: int, per: float, burst: int, steps: list[float]) -> None:
    """Over any run of calls, no more are let through than ``burst`` plus ``rate`` per ``per`` elapsed."""
    clock = Clock()
    store = MemoryStore(10, clock)
    start = clock.now
    taken = 0

    async def run() -> None:
        nonlocal taken
        for step in steps:
            clock.now += step
            if await store.take("k", rate, per, burst) == 0.0:
                taken += 1

    anyio.run(run)
    assert taken <= burst + (clock.now - start) * rate / per + 1e-9


async def test_slots_in_flight_are_counted_and_given_back() -> None:
    store = MemoryStore(100)
    assert [await store.acquire("a", 2) for _ in range(3)] == [True, True, False]
    assert await store.acquire("b", 2)
    await store.release("a")
    assert await store.acquire("a", 2)


async def test_the_table_is_bounded_and_keeps_calls_in_flight() -> None:
    clock = Clock()
    store = MemoryStore(2, clock)
    assert await store.acquire("busy", 1)  # in flight: never forgotten
    assert await store.take("idle", 1, 3600.0, 1) == 0.0
    assert await store.take("new", 1, 3600.0, 1) == 0.0  # the idle one goes to make room
    assert len(store) == 2
    assert not await store.acquire("busy", 1)  # still counted
    assert await store.take("idle", 1, 3600.0, 1) == 0.0  # forgotten: its bucket is full again
    for n in range(50):
        await store.take(f"p{n}", 1, 3600.0, 1)
    assert len(store) == 2


async def test_limits_refuse_over_rate_and_over_concurrency_and_overrides_raise_them() -> None:
    clock = Clock()
    config = LimitsConfig(rate=1, per=60.0, concurrent=1, rules=[LimitRule(groups=["ci"], rate=5, concurrent=3)])
    limits = Limits(config, clock=clock)
    first = await limits.admit(ALICE)
    assert isinstance(first, Admitted)
    busy = await limits.admit(ALICE)
    assert isinstance(busy, Limited) and busy.limit == "concurrent" and busy.retry_after is None
    assert "already has 1 calls in flight" in busy.message and "[serve.limits] concurrent = 1" in busy.message
    await first.release()
    await first.release()  # once only: a second release gives back nothing more
    over = await limits.admit(ALICE)
    assert isinstance(over, Limited) and over.limit == "rate" and over.retry_after == 60
    assert "retry after 60 s" in over.message and "[serve.limits] rate = 1, per = 60" in over.message
    result = over.result()
    assert result.is_error and result.meta == {META_KEY: {"limit": "rate", "retryAfter": 60}}
    # a refused rate gave its slot back: the concurrency count is 0 again
    clock.now += 60
    again = await limits.admit(ALICE)
    assert isinstance(again, Admitted)
    # bob's group rule: 3 at once, 5 calls in a burst
    held = [await limits.admit(BOB) for _ in range(3)]
    assert all(isinstance(h, Admitted) for h in held)
    fourth = await limits.admit(BOB)
    assert isinstance(fourth, Limited) and "[serve.limits] rules[0] concurrent = 3" in fourth.message
    for h in held:
        assert isinstance(h, Admitted)
        await h.release()
    assert isinstance(await limits.admit(BOB), Admitted)
    assert isinstance(await limits.admit(BOB), Admitted)
    assert isinstance(await limits.admit(BOB), Limited)  # 5 taken


class FailingTake(MemoryStore):
    """A store whose bucket cannot be reached (a shared store's connection down, say)."""

    async def take(self, key: str, rate: int, per: float, burst: int) -> float:
        raise ConnectionError("the store is down")


async def test_a_store_that_fails_keeps_no_slot() -> None:
    store = FailingTake(10)
    limits = Limits(LimitsConfig(rate=10, concurrent=1), store=store)
    for _ in range(2):  # the first failure gave its slot back, or the second would be "in flight"
        with pytest.raises(ConnectionError):
            await limits.admit(ALICE)
    assert await store.acquire("jwt:alice", 1)


async def test_no_limits_admit_everything() -> None:
    limits = Limits(None)
    assert all(isinstance(a, Admitted) for a in [await limits.admit(ALICE) for _ in range(100)])


# -- the config ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "error"),
    [
        ("[serve.limits]\nrate = 0\n", "serve.limits.rate: must be between 1"),
        ("[serve.limits]\nrate = 5\nper = 0\n", "serve.limits.per: must be more than 0"),
        ("[serve.limits]\nburst = 5\n", "serve.limits.burst: burst needs a rate"),
        ("[serve.limits]\n", "serve.limits.rate: sets no limit"),
        ("[serve.limits]\nrate = 5\n[[serve.limits.rules]]\nrate = 50\n", "serve.limits.rules[0].subjects"),
        (
            '[serve.limits]\nconcurrent = 2\n[[serve.limits.rules]]\nsubjects = ["a"]\nburst = 3\n',
            "serve.limits.rules[0].rate: burst and per need a rate",
        ),
    ],
)
async def test_a_bad_limits_section_names_its_file_and_field(tmp_path: Path, section: str, error: str) -> None:
    await assert_names_file_and_field(tmp_path, section, error)


async def test_a_workspace_cannot_lift_the_limits(tmp_path: Path) -> None:
    """A trusted workspace's [serve.limits] would lift the user's limits for its callers: refused."""
    from kairox import Runtime
    from kairox_serve.runtime import BrokenServeConfig, check_serve_config

    ws = make_workspace(
        tmp_path, serve="[serve.limits]\nrate = 100000\nper = 1\n", user_config="\n[serve.limits]\nrate = 1\n"
    )
    async with Runtime.open(ws.root, start=False, home=ws.home) as rt:
        with pytest.raises(BrokenServeConfig, match=r"kairox.toml: serve.limits: is the user's to set"):
            check_serve_config(rt)


# -- against kairox serve --http ----------------------------------------------------------------


def _auth(tmp: Path, idp: Idp, limits: str) -> str:
    jwks = tmp / "jwks.json"
    jwks.write_text(json.dumps(idp.jwks), encoding="utf-8")
    audit = tmp / "audit.jsonl"
    return (
        f'\n[serve.auth]\nissuer = "{ISSUER}"\njwks_file = "{jwks}"\n'
        f'\n[serve.audit]\nfile = "{audit}"\n\n[serve.limits]\n{textwrap.dedent(limits)}'
    )


def _audit(tmp: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp / "audit.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def idp() -> Idp:
    return Idp()


async def test_a_principal_over_its_rate_is_refused_and_another_is_not(tmp_path: Path, idp: Idp) -> None:
    limits = """\
    rate = 2
    per = 3600
    [[serve.limits.rules]]
    subjects = ["carol"]
    rate = 100
    """
    ws = make_workspace(tmp_path, user_config=_auth(tmp_path, idp, limits))
    with serve_http(ws) as (url, _proc):
        async with connect(url, token=idp.token(url, sub="alice"), mode="legacy") as alice:
            for n in range(2):
                assert text_of(await alice.call_tool("wb_echo", {"message": f"a{n}"})) == f"a{n}"
            refused = await alice.call_tool("wb_echo", {"message": "one too many"})
            assert refused.is_error
            assert "limited: the principal 'alice' has used its 2 calls per 3600 s" in text_of(refused)
            assert "retry after 1800 s" in text_of(refused)
            assert refused.meta is not None and refused.meta[META_KEY] == {"limit": "rate", "retryAfter": 1800}
        async with connect(url, token=idp.token(url, sub="bob"), mode="legacy") as bob:
            assert text_of(await bob.call_tool("wb_echo", {"message": "bob"})) == "bob"
        async with connect(url, token=idp.token(url, sub="carol"), mode="legacy") as carol:
            for n in range(5):  # her rule raises her rate
                assert text_of(await carol.call_tool("wb_echo", {"message": f"c{n}"})) == f"c{n}"
    records = _audit(tmp_path)
    limited = [r for r in records if r["decided_by"] == "limits"]
    assert [(r["principal"], r["tool"], r["decision"], r["outcome"]) for r in limited] == [
        ("alice", "wb.echo", "deny", "denied")
    ]
    assert "retry after 1800 s" in limited[0]["detail"]
    # the refused call never reached the backend: three wb.echo calls of alice's ran, two allowed
    assert [r["decision"] for r in records if r["principal"] == "alice"] == ["allow", "allow", "deny"]


#: a raw JSON-lines server whose tool ``hold`` writes ``{"called": id}`` to the file named by
#: its first argument, then answers only once the file named by its second exists (each call
#: on a thread of its own, so calls of other clients go on)
HOLDS = raw_server(
    "holds",
    ["hold"],
    """
    elif method == "tools/call":
        threading.Thread(target=hold, args=(msg,), daemon=True).start()
    """,
    setup="""
    marker, release = sys.argv[1], sys.argv[2]
    def hold(msg):
        with lock:
            with open(marker, "a") as fh:
                fh.write(json.dumps({"called": msg["id"]}) + "\\n")
        deadline = time.monotonic() + 60
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.02)
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": "released"}]}})
    """,
)


def _calls(marker: Path) -> int:
    return marker.read_text(encoding="utf-8").count("called") if marker.is_file() else 0


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_concurrency_cap_counts_calls_in_flight(tmp_path: Path, idp: Idp, mode: str) -> None:
    """Alice may have one call in flight: while her ``hold`` waits, her next call is refused
    and never reaches the backend, bob's runs; once it ends her slot is hers again. ``auto``:
    a 2026-07-28 client that declares elicitation, whose call the gateway holds in its own task."""
    marker, release = tmp_path / "holds.log", tmp_path / "release"
    user = '"holds.*" = "allow"\n' + _auth(tmp_path, idp, "concurrent = 1\n")
    ws = with_script(tmp_path, "holds", HOLDS, str(marker), str(release), user_config=user)
    extra: dict[str, Any] = {"elicitation_callback": Answers("once")} if mode == "auto" else {}
    with serve_http(ws) as (url, _proc):
        async with (
            connect(url, token=idp.token(url, sub="alice"), mode=mode, **extra) as alice,
            connect(url, token=idp.token(url, sub="bob"), mode=mode, **extra) as bob,
        ):
            outcome: list[Any] = []

            async def first() -> None:
                outcome.append(await alice.call_tool("holds_hold", {}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(first)
                with anyio.fail_after(30):
                    while _calls(marker) < 1:  # noqa: ASYNC110 - a file written by another process
                        await anyio.sleep(0.05)
                refused = await alice.call_tool("holds_hold", {})
                assert refused.is_error and "already has 1 calls in flight" in text_of(refused), text_of(refused)
                assert "[serve.limits] concurrent = 1" in text_of(refused)
                assert refused.meta is not None and refused.meta[META_KEY] == {"limit": "concurrent"}
                assert text_of(await bob.call_tool("wb_echo", {"message": "bob runs"})) == "bob runs"
                release.write_text("go", encoding="utf-8")
            assert text_of(outcome[0]) == "released"
            assert text_of(await alice.call_tool("holds_hold", {})) == "released"  # her slot came back
    assert _calls(marker) == 2  # the refused call never reached the backend
    limited = [r for r in _audit(tmp_path) if r["decided_by"] == "limits"]
    assert [(r["principal"], r["tool"]) for r in limited] == [("alice", "holds.hold")]
