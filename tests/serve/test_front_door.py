"""The attacks on ``kairox serve --http``'s front door, each against a real process on a real
socket: clients that trickle their headers or body, idle sockets beyond the connection limit,
more MCP sessions than allowed, and a session left idle. The limits are test-sized through
``[serve]``."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import httpx2
import peers
import psutil
import pytest
from serve_helpers import ACCEPT, INIT, KAIROX, TOKEN, Workspace, connect, make_workspace, serve_http, uvicorn_workers
from test_stdio import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]

AUTH = {**ACCEPT, "Authorization": f"Bearer {TOKEN}"}
#: how long an attacker keeps trying before the test calls it a success for the attacker
PATIENCE = 20.0


Gateway = tuple[str, int, "subprocess.Popen[bytes]"]


@pytest.fixture
def gateway_of(tmp_path: Path) -> Iterator[Callable[[str], Gateway]]:
    """``gateway_of(serve)``: ``kairox serve --http`` with a token over a workspace whose
    ``[serve]`` section holds ``serve``; gives (URL, port, the process)."""
    with contextlib.ExitStack() as stack:

        def start(serve: str) -> Gateway:
            ws = make_workspace(tmp_path, serve=f"[serve]\n{serve}")
            url, proc = stack.enter_context(serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)))
            return url, int(url.split(":")[2].split("/")[0]), proc

        yield start


async def served(url: str) -> None:
    """A well-behaved client: it lists the tools and calls one."""
    async with connect(url, mode="legacy") as client:
        assert "wb_echo" in {t.name for t in (await client.list_tools()).tools}
        assert text_of(await client.call_tool("wb_echo", {"message": "served"})) == "served"


async def cut_after(stream: anyio.abc.ByteStream, drip: bytes) -> float | None:
    """Send ``drip`` a byte every 0.1 s, reading what comes back; the seconds until the
    gateway closed the connection, or ``None`` if it was still open after :data:`PATIENCE`."""
    start = time.monotonic()
    received = b""

    async def read() -> None:
        nonlocal received
        try:
            while True:
                received += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
            pass

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        with anyio.move_on_after(PATIENCE):
            try:
                for i in range(10**6):
                    await stream.send(drip[i % len(drip) : i % len(drip) + 1])
                    await anyio.sleep(0.1)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
                tg.cancel_scope.cancel()
                return time.monotonic() - start
        tg.cancel_scope.cancel()
    return None


def request_head(auth: bool, length: int | None = None) -> bytes:
    lines = ["POST /mcp HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in (AUTH if auth else ACCEPT).items())]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


#: (what the attacker sends at once, what it then trickles a byte at a time)
ATTACKS = {
    "headers": (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"X-Slow: " + b"a" * 10_000),
    "body, with the token": (request_head(True, 1_000_000), b'{"jsonrpc": "2.0", "id": 1 ' + b" " * 10_000),
    "body, refused (no token)": (request_head(False, 1_000_000), b" " * 10_000),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
async def test_a_slowloris_is_cut_and_does_not_starve_a_client(
    gateway_of: Callable[[str], Gateway], attack: str
) -> None:
    """Eight clients trickle a request a byte at a time (its headers, or, once its headers
    are in, its body, with and without the token): each is cut after the deadline
    (``header_timeout`` / ``body_timeout``, 1 s here), well before the attacker gives up,
    and meanwhile a well-behaved client is served."""
    url, port, _proc = gateway_of("header_timeout = 1\nbody_timeout = 1\n")
    first, drip = ATTACKS[attack]
    cut: list[float | None] = []

    async def slow() -> None:
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(first)
            cut.append(await cut_after(stream, drip))

    async with anyio.create_task_group() as tg:
        for _ in range(8):
            tg.start_soon(slow)
        await served(url)
    assert len(cut) == 8 and all(c is not None for c in cut), cut


def fds(proc: subprocess.Popen[bytes]) -> int:
    return psutil.Process(proc.pid).num_fds()


async def settled(proc: subprocess.Popen[bytes], wanted: Callable[[int], bool]) -> int:
    """The gateway's open file count once ``wanted(count)`` holds (or after 20 s)."""
    with anyio.move_on_after(20):
        while not wanted(fds(proc)):  # noqa: ASYNC110 - another process's files: nothing to wait on
            await anyio.sleep(0.1)
    return fds(proc)


async def test_idle_sockets_beyond_the_limit_neither_block_a_client_nor_leak(
    gateway_of: Callable[[str], Gateway],
) -> None:
    """Sixty sockets that connect and send nothing, against ``max_connections = 8`` (and a
    header deadline longer than the test, so the limit alone acts): the gateway holds no
    more than the limit (each newcomer closes the oldest idle one), a real client is
    served in the middle of it, and the files are back where they were after."""
    url, port, proc = gateway_of("max_connections = 8\nheader_timeout = 600\n")
    await served(url)
    base = await settled(proc, lambda n: True)
    idle = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(60)]
    try:
        during = await settled(proc, lambda n: n <= base + 8)
        assert during <= base + 8, f"{during - base} more files open for 60 idle sockets (limit 8)"
        await served(url)
        closed = 0
        for stream in idle:
            with anyio.move_on_after(0.05):
                try:
                    await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
                    closed += 1
        assert closed >= 60 - 8, closed
    finally:
        for stream in idle:
            await stream.aclose()
    after = await settled(proc, lambda n: n <= base)
    assert after <= base


async def until_closed(stream: anyio.abc.ByteStream) -> bytes:
    """What the gateway sends until it closes the connection."""
    answer = b""
    with anyio.fail_after(20):
        try:
            while True:
                answer += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
            return answer


async def test_a_connection_past_the_limit_is_refused_when_all_are_in_requests(
    gateway_of: Callable[[str], Gateway],
) -> None:
    """``max_connections = 2``, both inside a request (each an event stream of its session,
    its answer begun): a third connection is answered 503 naming the setting, and closed;
    once they are gone, a client is served."""
    url, port, _proc = gateway_of("max_connections = 2\n")
    sessions = []
    async with httpx2.AsyncClient(timeout=30) as http:
        for _ in range(2):
            opened = await http.post(url, json=INIT, headers=AUTH)
            sessions.append(opened.headers["mcp-session-id"])
    streams = []
    for session in sessions:
        stream = await anyio.connect_tcp("127.0.0.1", port)
        streams.append(stream)
        head = f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        head += f"Accept: text/event-stream\r\nmcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n\r\n"
        await stream.send(head.encode())
        with anyio.fail_after(20):
            assert (await stream.receive()).startswith(b"HTTP/1.1 200")
    async with await anyio.connect_tcp("127.0.0.1", port) as third:
        await third.send(request_head(True, 2) + b"{}")
        answer = await until_closed(third)
    assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
    assert b"[serve] max_connections" in answer
    for stream in streams:
        await stream.aclose()
    await served(url)


async def test_sessions_past_the_limit_are_refused(gateway_of: Callable[[str], Gateway]) -> None:
    """``max_sessions = 2``: a third ``initialize`` is refused with HTTP 503 and a JSON-RPC
    error, and once a client ends its session (DELETE), a new one opens."""
    url, _port, _proc = gateway_of("max_sessions = 2\n")
    async with httpx2.AsyncClient(timeout=30) as http:
        ids = []
        for _ in range(2):
            opened = await http.post(url, json=INIT, headers=AUTH)
            assert opened.status_code == 200, opened.text
            ids.append(opened.headers["mcp-session-id"])
        refused = await http.post(url, json=INIT, headers=AUTH)
        assert refused.status_code == 503, refused.text
        error = refused.json()["error"]
        assert error["message"] == "Too many open sessions"
        assert (await http.delete(url, headers={**AUTH, "mcp-session-id": ids[0]})).status_code == 200
        again = await http.post(url, json=INIT, headers=AUTH)
        assert again.status_code == 200, again.text


SESSION_END = textwrap.dedent(
    """\
    #!{python}
    import json, pathlib, sys
    reason = json.load(sys.stdin).get("reason", "")
    with open({marker!r}, "a") as out:
        out.write(reason + "\\n")
    """
)


def with_session_end_marker(ws: Workspace, marker: Path) -> None:
    """A user plugin whose ``SessionEnd`` hook appends to ``marker`` when a kairox session ends."""
    root = ws.home / "plugins" / "ends"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "ends"}))
    hooks = {"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/end.py"}]}]}}
    (root / "hooks").mkdir()
    (root / "hooks" / "hooks.json").write_text(json.dumps(hooks))
    script = root / "end.py"
    script.write_text(SESSION_END.format(python=sys.executable, marker=str(marker)))
    script.chmod(0o755)


async def test_an_idle_session_is_closed_and_its_id_is_unknown(tmp_path: Path) -> None:
    """A client opens a session, calls a tool (the gateway opens a kairox session for it) and
    goes quiet, with no stream open: after ``session_idle_timeout`` (1 s here) the kairox
    session has ended (a ``SessionEnd`` hook records it) and the session id answers 404, the
    MCP spec's answer for a session the server does not know."""
    from kairox_testing import trust_workspace

    ws = make_workspace(tmp_path, serve="[serve]\nsession_idle_timeout = 1\n", trusted=False)
    marker = tmp_path / "ended"
    with_session_end_marker(ws, marker)
    trust_workspace(ws.root, ws.home, env=ws.env())
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        async with httpx2.AsyncClient(timeout=30) as http:
            opened = await http.post(url, json=INIT, headers=AUTH)
            session = {**AUTH, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post(url, json=note, headers=session)).status_code == 202
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "wb_echo", "arguments": {"message": "hi"}},
            }
            called = await http.post(url, json=call, headers=session)
            assert called.status_code == 200 and "hi" in called.text, called.text
            assert not marker.exists()
            with anyio.move_on_after(PATIENCE):
                while not marker.exists():  # noqa: ASYNC110 - a file another process writes
                    await anyio.sleep(0.1)
            assert marker.exists(), "the idle session's kairox session never ended"
            gone = await http.post(url, json={**call, "id": 3}, headers=session)
            assert gone.status_code == 404, gone.text
            # the SDK says "not found" for an id it forgot, "terminated" for one it still remembers
            assert gone.json()["error"]["message"] in ("Session not found", "Not Found: Session has been terminated")


async def test_uvicorn_with_the_guarded_protocol_cuts_a_slowloris(tmp_path: Path) -> None:
    """``uvicorn --http kairox_serve.frontdoor:GuardedHttp kairox_serve.asgi:app``: the same
    deadlines, from the served workspace's ``[serve]``."""
    ws = make_workspace(tmp_path, serve="[serve]\nheader_timeout = 1\n")
    env = ws.env(KAIROX_WORKSPACE=str(ws.root), KAIROX_SERVE_TOKEN_ENV="MCP_TOKEN", MCP_TOKEN=TOKEN)
    guarded = ("--http", "kairox_serve.frontdoor:GuardedHttp", "--ws", "none")
    with uvicorn_workers(ws, 1, env, *guarded) as url:
        async with await anyio.connect_tcp("127.0.0.1", int(url.split(":")[2].split("/")[0])) as stream:
            first, drip = ATTACKS["headers"]
            await stream.send(first)
            assert await cut_after(stream, drip) is not None
        await served(url)
    (log,) = ws.root.parent.glob("uvicorn-*.log")
    assert "does not enforce" not in log.read_text(errors="replace")


def test_too_few_file_descriptors_for_the_limit_is_an_error(tmp_path: Path) -> None:
    """A hard ``ulimit -n`` below what ``max_connections`` takes: ``kairox serve --http`` does
    not start, and says which setting and which limit."""
    import resource

    ws = make_workspace(tmp_path, serve="[serve]\nmax_connections = 1000\n")

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (512, 512))

    argv = [*KAIROX, "-w", str(ws.root), "serve", "--http", "--port", str(peers.free_port())]
    done = subprocess.run(argv, env=ws.env(), capture_output=True, text=True, timeout=120, preexec_fn=low_limit)
    assert done.returncode == 1, done.stderr
    assert "[serve] max_connections = 1000 needs about" in done.stderr
    assert "may open at most 512 (ulimit -Hn)" in done.stderr
