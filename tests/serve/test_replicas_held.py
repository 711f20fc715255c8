"""Held calls behind a load balancer: three ``kairox serve --http --stateless`` replicas
sharing ``[serve.state]`` in one real ``redis-server``, behind Debian's nginx running
``deploy/nginx.conf`` (round robin, no stickiness). Concurrent SDK clients on the
2026-07-28 revision call a backend tool that asks for sampling: each call's first round
and its retry go to whichever replica nginx picks, and every call completes."""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import mcp_types as types
import pytest
import test_state
from serve_helpers import connect, serve_http_up, with_script
from test_forward import ASKS, Host
from test_held import MODERN
from test_replicas_nginx import nginx_binary, nginx_in_front
from test_stdio import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]

#: the real redis-server of test_state, for this module too
redis_url = test_state.redis_url

CLIENTS = 6


async def test_held_calls_resume_on_whichever_replica_nginx_picks(tmp_path: Path, redis_url: str) -> None:
    """Without the shared state this fails: a retry that reaches a replica other than the
    one holding its call is refused ("held by another replica")."""
    nginx_binary()  # skip before starting anything
    state = f'\n[serve.state]\nredis = "{redis_url}"\nprefix = "{tmp_path.name[:40]}:"\n'
    allow = '"asks.*" = "allow"\n"mcp.asks.sampling" = "allow"\n'
    ws = with_script(tmp_path, "asks", ASKS, user_config=allow + state)
    with contextlib.ExitStack() as stack:
        replicas = [
            stack.enter_context(serve_http_up(ws, "asks_ask_model", "--stateless", mode=MODERN)) for _ in range(3)
        ]
        nginx = stack.enter_context(nginx_in_front(tmp_path, replicas))
        since = nginx.size()
        results: dict[int, types.CallToolResult] = {}
        hosts = [Host() for _ in range(CLIENTS)]

        async def one(i: int) -> None:
            async with connect(f"{nginx.url}/mcp", mode=MODERN, sampling_callback=hosts[i].sample) as client:
                results[i] = await client.call_tool("asks_ask_model", {"prompt": f"question {i}"})

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for i in range(CLIENTS):
                    tg.start_soon(one, i)
        for i in range(CLIENTS):
            assert not results[i].is_error, text_of(results[i])
            assert text_of(results[i]) == "test-model: an answer from the gateway's client"
            assert hosts[i].samples == [f"question {i}"]  # each client was asked its own call's question
        calls = [(status, replica) for line, status, replica in nginx.upstreams(since) if line.startswith("POST")]
        assert {status for status, _ in calls} == {"200"}, calls
        assert len({replica for _, replica in calls}) == 3, calls  # no stickiness: every replica served
