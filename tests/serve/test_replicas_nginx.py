"""Three ``kairox serve --http --stateless`` replicas behind nginx running ``deploy/nginx.conf``
(only its ``listen`` and upstream ``server`` lines rewritten to loopback ports), and the
gateway's ``/healthz`` and ``/readyz`` probes. Real processes throughout: Debian's nginx,
three gateways over one workspace, the mcp SDK's streamable HTTP client."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import peers
import pytest
from serve_helpers import Workspace, connect, listening, make_workspace, serve_http, serve_http_up
from test_stdio import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]

NGINX_CONF = peers.REPO / "deploy" / "nginx.conf"
REPLICAS = 3


def nginx_binary() -> str:
    """Debian's nginx, or skip (fail on CI: ``.ci/run`` installs it)."""
    found = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("nginx is not installed (apt-get install nginx); CI needs the replica tests")
        pytest.skip("nginx is not installed (apt-get install nginx)")
    return found


def shipped_config(port: int, replicas: list[int]) -> str:
    """``deploy/nginx.conf`` with ``listen`` on ``127.0.0.1:port`` and its upstream servers at
    the ``replicas`` ports; every other line as shipped (a line not found fails the test)."""
    text = NGINX_CONF.read_text(encoding="utf-8")
    assert text.count("listen 8080;") == 1, "deploy/nginx.conf: expected one `listen 8080;`"
    text = text.replace("listen 8080;", f"listen 127.0.0.1:{port};")
    for n, replica in enumerate(replicas, 1):
        line = f"server replica-{n}:8000 "
        assert text.count(line) == 1, f"deploy/nginx.conf: expected one `{line.strip()}` line"
        text = text.replace(line, f"server 127.0.0.1:{replica} ")
    assert "replica-" not in text.split("upstream kairox", 1)[1].split("}", 1)[0].replace("# ", ""), (
        "deploy/nginx.conf lists more replicas than the test starts"
    )
    return text


class Nginx:
    def __init__(self, url: str, log: Path, replicas: list[tuple[str, subprocess.Popen[bytes]]]) -> None:
        #: http://127.0.0.1:PORT (nginx)
        self.url = url
        self.log = log
        #: each replica's endpoint URL and process
        self.replicas = replicas

    def upstreams(self, since: int = 0) -> list[tuple[str, str, str]]:
        """(request line, status, the replica that answered) of each access-log line from byte
        ``since`` (``$upstream_addr`` lists every replica tried; the last one answered)."""
        text = self.log.read_bytes()[since:].decode(errors="replace")
        found = re.findall(r'"([A-Z]+ \S+) HTTP/[\d.]+" (\d{3}) \d+ upstream=(.+?) upstream_status=', text)
        return [(line, status, tried.split(", ")[-1]) for line, status, tried in found]

    def size(self) -> int:
        return self.log.stat().st_size

    def replica_address(self, n: int) -> str:
        return self.replicas[n][0].removeprefix("http://").removesuffix("/mcp")


@contextlib.contextmanager
def nginx_in_front(tmp_path: Path, replicas: list[tuple[str, subprocess.Popen[bytes]]]) -> Iterator[Nginx]:
    """nginx (not a daemon, its prefix under ``tmp_path``) on a free loopback port, running
    :func:`shipped_config` in front of ``replicas``; stopped (and reaped) when done."""
    binary = nginx_binary()
    prefix = tmp_path / "nginx"
    (prefix / "temp").mkdir(parents=True)
    port = peers.free_port()
    ports = [int(url.rsplit(":", 1)[1].split("/")[0]) for url, _ in replicas]
    conf = prefix / "nginx.conf"
    conf.write_text(shipped_config(port, ports), encoding="utf-8")
    # pid: Debian's default (/run/nginx.pid) is shared by every nginx of the machine; as root,
    # the workers would run as nobody and could not reach the private temp directory
    directives = f"daemon off; pid {prefix / 'nginx.pid'};" + (" user root;" if os.geteuid() == 0 else "")
    log = tmp_path / "nginx.log"
    argv = [binary, "-p", f"{prefix}/", "-c", str(conf), "-e", "stderr", "-g", directives]
    with listening("nginx", argv, port, log, timeout=30):
        yield Nginx(f"http://127.0.0.1:{port}", log, replicas)


@contextlib.contextmanager
def replicas_behind_nginx(tmp_path: Path) -> Iterator[Nginx]:
    """:data:`REPLICAS` ``kairox serve --http --stateless`` processes over one workspace, one
    token, each on its own port and up (its backend lists ``wb_echo``), behind nginx."""
    nginx_binary()  # skip before starting anything
    ws = make_workspace(tmp_path)
    with contextlib.ExitStack() as stack:
        replicas = [stack.enter_context(serve_http_up(ws, "wb_echo", "--stateless", mode="auto")) for _ in range(3)]
        yield stack.enter_context(nginx_in_front(tmp_path, replicas))


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nginx]:
    """One set of replicas behind nginx for the tests that leave them as they are."""
    with replicas_behind_nginx(tmp_path_factory.mktemp("replicas")) as nginx:
        yield nginx


async def test_calls_through_nginx_spread_over_every_replica(shared: Nginx) -> None:
    """One client's calls go round the replicas (no stickiness: stateless, any replica answers
    any request), and six concurrent clients' calls all come back right, each replica having
    answered some of them (nginx's access log names the replica of each request)."""
    nginx = shared
    everyone = {nginx.replica_address(n) for n in range(REPLICAS)}
    start = nginx.size()
    async with connect(f"{nginx.url}/mcp", mode="auto") as client:
        for i in range(6):
            assert text_of(await client.call_tool("wb_echo", {"message": f"alone {i}"})) == f"alone {i}"
    alone = [up for line, status, up in nginx.upstreams(start) if line == "POST /mcp" and status == "200"]
    assert set(alone) == everyone, f"one client's calls stayed on {Counter(alone)}"

    start = nginx.size()
    seen: dict[int, list[str]] = {}

    async def one(n: int) -> None:
        async with connect(f"{nginx.url}/mcp", mode="legacy" if n % 2 else "auto") as client:
            seen[n] = [text_of(await client.call_tool("wb_echo", {"message": f"{n}.{i}"})) for i in range(10)]

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for n in range(6):
                tg.start_soon(one, n)
    assert seen == {n: [f"{n}.{i}" for i in range(10)] for n in range(6)}
    served = Counter(up for line, status, up in nginx.upstreams(start) if line == "POST /mcp" and status == "200")
    assert set(served) == everyone, f"calls did not reach every replica: {served}"
    assert min(served.values()) >= sum(served.values()) // (2 * REPLICAS), f"round robin is lopsided: {served}"


async def test_probes_through_nginx_need_no_token_and_say_one_word(shared: Nginx) -> None:
    """A load balancer's probes reach a replica without a token and get one status word;
    the MCP endpoint still wants the token, and a browser page of another origin is refused
    the probes too."""
    nginx = shared
    async with httpx2.AsyncClient(timeout=30) as http:
        ready = await http.get(f"{nginx.url}/readyz")
        assert (ready.status_code, ready.text) == (200, "ready")
        assert ready.headers["cache-control"] == "no-store"
        health = await http.get(f"{nginx.url}/healthz")
        assert (health.status_code, health.text) == (200, "ok")
        head = await http.head(f"{nginx.url}/readyz")
        assert (head.status_code, head.content) == (200, b"")
        post = await http.post(f"{nginx.url}/readyz", content=b"{}")
        assert post.status_code == 405
        assert (await http.post(f"{nginx.url}/mcp", json={})).status_code == 401
        foreign = await http.get(f"{nginx.url}/readyz", headers={"Origin": "https://attacker.example"})
        assert foreign.status_code == 403
    for line, _status, up in nginx.upstreams():
        if line == "GET /readyz":
            assert up in {nginx.replica_address(n) for n in range(REPLICAS)}
            break
    else:
        raise AssertionError("nginx's log shows no /readyz passed to a replica")


async def test_probes_keep_the_host_check_and_leak_nothing(tmp_path: Path) -> None:
    """A replica without a token (loopback only): a page whose name was re-bound to 127.0.0.1
    (DNS rebinding) sends its own Host and is refused the probes as everything else (421);
    what a probe answers names no server, tool, path or setting of the workspace."""
    ws: Workspace = make_workspace(tmp_path)
    with serve_http(ws) as (url, _proc):
        base = url.removesuffix("/mcp")
        async with httpx2.AsyncClient(timeout=30) as http:
            for path in ("/healthz", "/readyz"):
                rebound = await http.get(f"{base}{path}", headers={"Host": "attacker.example:80"})
                assert rebound.status_code == 421, path
                assert "ok" not in rebound.text and "ready" not in rebound.text
            answers = [await http.get(f"{base}{path}") for path in ("/healthz", "/readyz")]
    assert [(a.status_code, a.text) for a in answers] == [(200, "ok"), (200, "ready")]
    for answer in answers:
        shown = answer.text + " ".join(f"{k}: {v}" for k, v in answer.headers.items())
        for secret in ("wb", "well_behaved", str(ws.root), str(ws.home), "greet", "kairox"):
            assert secret not in shown, (secret, shown)


async def test_readyz_is_503_until_the_gateway_serves_and_once_it_closes(tmp_path: Path) -> None:
    """``kairox serve --http``'s app in this process (a real workspace and backend): ``/readyz``
    says "starting" before the runtime is open, "ready" while the gateway serves, "closing" once
    the server begins to stop; ``/healthz`` says "ok" throughout. (uvicorn binds the port only
    after the app's start and closes it first when stopping, so a socket rarely sees the 503s.)"""
    from kairox_serve.http import GatewayApp, settings_from
    from kairox_serve.runtime import served_runtime

    ws = make_workspace(tmp_path)
    env = ws.env(MCP_TOKEN="t" * 32)
    settings = settings_from(host="127.0.0.1", port=0, token_env="MCP_TOKEN", env=env, stateless=True)
    app = GatewayApp(settings, lambda: served_runtime(ws.root, env=env))

    async def probe(path: str) -> tuple[int, str]:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            answer = await http.get(path)
        return answer.status_code, answer.text

    assert await probe("/readyz") == (503, "not ready: starting")
    assert await probe("/healthz") == (200, "ok")
    async with app.serving():
        assert await probe("/readyz") == (200, "ready")
        app.closing = True  # what kairox serve's uvicorn server sets as its shutdown begins
        assert await probe("/readyz") == (503, "not ready: closing")
        assert await probe("/healthz") == (200, "ok")


@pytest.mark.timeout(240)
async def test_a_replica_killed_under_load_fails_its_calls_and_the_rest_go_on(tmp_path: Path) -> None:
    """Nine concurrent calls of a 4-second tool through nginx, three on each replica; one
    replica is killed (SIGKILL, its process group) 1.5 s after the calls are sent. Its calls end in an error
    within the bound (nginx answers 502 or cuts the stream; the client raises), never a hang;
    the other replicas' calls succeed; every later call succeeds, on the two left."""
    with replicas_behind_nginx(tmp_path) as nginx:
        _url, victim = nginx.replicas[0]
        victim_address = nginx.replica_address(0)
        outcome: dict[int, str] = {}
        connected: list[int] = []
        all_connected, go = anyio.Event(), anyio.Event()

        async def one(n: int) -> None:
            try:
                async with connect(f"{nginx.url}/mcp", mode="auto") as client:
                    connected.append(n)
                    if len(connected) == 9:
                        all_connected.set()
                    await go.wait()  # every call sent at once, so each replica has some in flight
                    result = await client.call_tool("wb_sleep", {"seconds": 4})
                    outcome[n] = "error result" if result.is_error else text_of(result)
            except Exception as exc:  # what the SDK raises for a failed request
                outcome[n] = f"raised {type(exc).__name__}"

        start = nginx.size()
        with anyio.fail_after(60):  # a hung call would hold the task group for ever
            async with anyio.create_task_group() as tg:
                for n in range(9):
                    tg.start_soon(one, n)
                await all_connected.wait()
                go.set()
                await anyio.sleep(1.5)
                os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(timeout=10)
        failed = {n: o for n, o in outcome.items() if o != "slept"}
        assert len(outcome) == 9, outcome
        assert failed, f"no call was in flight on the killed replica: {outcome}"
        assert len(failed) < 9, f"every call failed, not only the killed replica's: {outcome}"
        lines = nginx.upstreams(start)
        assert any(up == victim_address for line, _status, up in lines if line == "POST /mcp"), lines

        start = nginx.size()
        with anyio.fail_after(60):
            async with connect(f"{nginx.url}/mcp", mode="auto") as client:
                for i in range(9):
                    assert text_of(await client.call_tool("wb_echo", {"message": f"after {i}"})) == f"after {i}"
        answered = {up for line, status, up in nginx.upstreams(start) if line == "POST /mcp" and status == "200"}
        assert answered == {nginx.replica_address(1), nginx.replica_address(2)}, answered
