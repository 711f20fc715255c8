"""OAuth 2.1 for streamable HTTP servers, against a real local authorization server + protected
MCP server on 127.0.0.1 (``tests/fixtures/mcp_servers/oauth_server.py``, built from the SDK's
server-side auth pieces). The browser is an HTTP client that follows the authorization URL
(the server approves at once and redirects to kairox's loopback listener)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import peers
import pytest
from mcp_helpers import open_runtime

from kairox._types import ServerState
from kairox.errors import KairoxError
from kairox.ext import structure
from kairox_mcp import McpServerFailed, manager_of
from kairox_mcp.auth import LoginFailed, login, token_path
from kairox_mcp.config import McpServerConfig

pytestmark = pytest.mark.integration

WAIT = 20.0


@contextlib.contextmanager
def _fixture_on(port: int, argv: list[str], *, quiet_stdout: bool = True) -> Iterator[None]:
    """``argv`` as a process in its own session until it listens on ``port``; on exit SIGTERM
    to its group (SIGKILL after 10 s) and reaped."""
    stdout = subprocess.DEVNULL if quiet_stdout else None
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        peers.wait_for_port(port, proc=proc)
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextlib.contextmanager
def oauth_server(*args: str) -> Iterator[str]:
    """Run the fixture; yield its base URL (``http://127.0.0.1:PORT``)."""
    port = peers.free_port()
    with _fixture_on(port, [*peers.fixture_server("oauth_server"), "--port", str(port), *args]):
        yield f"http://127.0.0.1:{port}"


def follow(url: str) -> None:
    """The browser: GET the authorization URL, follow its redirect to the loopback listener."""
    response = httpx2.get(url, follow_redirects=True, timeout=10)
    assert response.status_code == 200, response.text


def browser(url: str) -> bool:
    threading.Thread(target=follow, args=(url,), daemon=True).start()
    return True


def stats(base: str) -> dict[str, Any]:
    data: dict[str, Any] = httpx2.get(f"{base}/admin/stats", timeout=10).json()
    return data


def admin(base: str, what: str) -> None:
    httpx2.post(f"{base}/admin/{what}", timeout=10).raise_for_status()


def entry(base: str, **extra: Any) -> dict[str, Any]:
    return {"type": "http", "url": f"{base}/mcp", "startup_timeout": WAIT, **extra}


async def do_login(name: str, base: str, env: dict[str, str], **extra: Any) -> Path:
    config: McpServerConfig = structure(entry(base, **extra), McpServerConfig)
    shown: list[str] = []
    path = await login(name, config, env, show_url=shown.append, open_browser=browser, timeout=WAIT)
    assert len(shown) == 1 and shown[0].startswith(f"{base}/authorize?")
    return path


async def wait_state(rt: Any, name: str, state: ServerState) -> None:
    server = manager_of(rt).server(name)
    with anyio.fail_after(WAIT):
        while server.state is not state:  # noqa: ASYNC110 - a lifecycle has no event per state
            await anyio.sleep(0.05)


def envs(tmp_path: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KAIROX_HOME": str(tmp_path / "kx")}


@pytest.mark.anyio
async def test_server_without_login_needs_authorization(tmp_path: Path, events_of: Any, no_leftovers: None) -> None:
    with oauth_server() as base:
        await needs_login(tmp_path, events_of, base, entry(base))


async def needs_login(
    tmp_path: Path, events_of: Any, base: str, server_entry: dict[str, Any], check: Any = None
) -> None:
    """A server at the OAuth fixture ``base`` that was never logged in: needs_authorization
    with the command to run, in its detail, status, event and a call; ``check(server)`` looks
    further at the server while it runs."""
    env = envs(tmp_path)
    async with open_runtime(tmp_path, {"s": server_entry}, env=env, start=False) as rt:
        seen = events_of(rt)
        await manager_of(rt).start_servers(["s"])
        server = manager_of(rt).server("s")
        assert server.state is ServerState.NEEDS_AUTHORIZATION
        assert "kairox mcp login s" in server.detail and "not logged in" in server.detail
        status = {s.name: s for s in manager_of(rt).status()}["s"]
        assert status.state is ServerState.NEEDS_AUTHORIZATION
        failed = [e for e in seen if isinstance(e, McpServerFailed)]
        assert failed and "kairox mcp login s" in failed[-1].error and not failed[-1].will_restart
        if check is not None:
            check(server)
        with pytest.raises(KairoxError, match="kairox mcp login s"):
            await rt.call_tool("s.whoami", {})
    # the runtime never registered a client or started a flow on its own
    assert stats(base)["registrations"] == 0 and stats(base)["authorizations"] == 0
    assert not token_path("s", env).exists()


@pytest.mark.anyio
async def test_login_use_refresh_revoke_and_login_again(tmp_path: Path, no_leftovers: None) -> None:
    env = envs(tmp_path)
    with oauth_server("--lifetime", "2") as base:
        path = await do_login("s", base, env)
        assert path == token_path("s", env)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        saved = json.loads(path.read_text())
        assert saved["server_url"] == f"{base}/mcp" and saved["tokens"]["access_token"]
        client_id = saved["client_info"]["client_id"]
        assert stats(base)["registrations"] == 1 and stats(base)["exchanges"] == 1

        async with open_runtime(tmp_path, {"s": entry(base)}, env=env) as rt:
            assert manager_of(rt).server("s").state is ServerState.READY
            assert (await rt.call_tool("s.whoami", {})).text == client_id
            # the token expires (lifetime 2 s): the next call refreshes it first
            await anyio.sleep(2.5)
            assert (await rt.call_tool("s.whoami", {})).text == client_id
            assert stats(base)["refreshes"] >= 1
            refreshed = json.loads(path.read_text())["tokens"]["access_token"]
            assert refreshed != saved["tokens"]["access_token"]
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            seen = stats(base)["seen"]
            assert seen[-1] == hashlib.sha256(refreshed.encode()).hexdigest()

            # the server forgets the access token (revoked): a refresh on the 401 fixes it
            before = stats(base)["refreshes"]
            admin(base, "revoke")
            assert (await rt.call_tool("s.whoami", {})).text == client_id
            assert stats(base)["refreshes"] == before + 1

            # the refresh token goes too: mid-session, the server needs authorization again
            admin(base, "revoke-all")
            with pytest.raises(KairoxError, match="kairox mcp login s"):
                await rt.call_tool("s.whoami", {})
            await wait_state(rt, "s", ServerState.NEEDS_AUTHORIZATION)
            assert "kairox mcp login s" in manager_of(rt).server("s").detail
            assert stats(base)["authorizations"] == 1  # no interactive flow from the runtime

            # logging in (another process would do the same) brings it back by itself
            await do_login("s", base, env)
            await wait_state(rt, "s", ServerState.READY)
            assert (await rt.call_tool("s.whoami", {})).text == client_id
            assert stats(base)["registrations"] == 1  # the stored registration was reused


@pytest.mark.anyio
async def test_configured_client_id_skips_registration(tmp_path: Path, no_leftovers: None) -> None:
    env = envs(tmp_path)
    port = peers.free_port()
    redirect = f"http://127.0.0.1:{port}/callback"
    oauth = {"client_id": "kairox-test", "scopes": ["mcp"], "redirect_port": port}
    with oauth_server("--client-id", "kairox-test", "--redirect-uri", redirect, "--no-registration") as base:
        await do_login("s", base, env, oauth=oauth)
        assert stats(base)["registrations"] == 0 and stats(base)["clients"] == ["kairox-test"]
        async with open_runtime(tmp_path, {"s": entry(base, oauth=oauth)}, env=env) as rt:
            assert (await rt.call_tool("s.whoami", {})).text == "kairox-test"


@pytest.mark.anyio
async def test_tokens_are_bound_to_the_server_url(tmp_path: Path, no_leftovers: None) -> None:
    """A token file written for one URL is never sent to another (a config that re-points
    the name): the other server sees no bearer token, and the server needs a login."""
    env = envs(tmp_path)
    with oauth_server() as first, oauth_server() as second:
        await do_login("s", first, env)
        async with open_runtime(tmp_path, {"s": entry(second)}, env=env) as rt:
            assert manager_of(rt).server("s").state is ServerState.NEEDS_AUTHORIZATION
        assert stats(second)["seen"] == [] and stats(second)["authorizations"] == 0


@pytest.mark.anyio
async def test_damaged_token_file_names_the_file(tmp_path: Path, no_leftovers: None) -> None:
    env = envs(tmp_path)
    path = token_path("s", env)
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "server_url": "x", "tokens": [')
    with oauth_server() as base:
        async with open_runtime(tmp_path, {"s": entry(base)}, env=env) as rt:
            server = manager_of(rt).server("s")
            assert server.state is ServerState.FAILED
            assert str(path) in server.detail and "not JSON" in server.detail
        config: McpServerConfig = structure(entry(base), McpServerConfig)
        with pytest.raises(KairoxError, match="not JSON") as info:
            await login("s", config, env, show_url=lambda _u: None, timeout=WAIT)
        assert str(path) in str(info.value)


@contextlib.contextmanager
def plain_server() -> Iterator[str]:
    """An SDK server over streamable HTTP without any auth; yields its /mcp URL."""
    port = peers.free_port()
    with _fixture_on(port, [*peers.fixture_server("rich_tools"), "--http", str(port)], quiet_stdout=False):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.mark.anyio
async def test_login_to_a_server_without_oauth_fails_plainly(tmp_path: Path, no_leftovers: None) -> None:
    env = envs(tmp_path)
    with plain_server() as url:
        config: McpServerConfig = structure({"type": "http", "url": url}, McpServerConfig)
        with pytest.raises(LoginFailed, match="without asking for authorization"):
            await login("plain", config, env, show_url=lambda _u: None, timeout=WAIT)
        # and a runtime uses it as before (no Authorization header, no token file)
        async with open_runtime(tmp_path, {"plain": {"type": "http", "url": url}}, env=env) as rt:
            assert manager_of(rt).server("plain").state is ServerState.READY
    assert not token_path("plain", env).exists()


def test_no_secret_in_any_output(tmp_path: Path, no_leftovers: None) -> None:
    """The real CLI (a subprocess, -vvv): login, status, a tool call, logout. No access token,
    refresh token, authorization code or client secret appears on stdout or stderr."""
    with oauth_server() as base:
        no_secret_in_any_output(tmp_path, base, "http")


def no_secret_in_any_output(tmp_path: Path, base: str, kind: str) -> None:
    """The scenario of :func:`test_no_secret_in_any_output` against the OAuth fixture at
    ``base`` as a ``kind`` server (``http``, ``sse``)."""
    env = {**os.environ, "KAIROX_HOME": str(tmp_path / "kx"), "PYTHONUNBUFFERED": "1"}
    env.pop("BROWSER", None)
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "kx").mkdir()
    (tmp_path / "kx" / "kairox.toml").write_text(
        f'[mcp_servers.s]\ntype = "{kind}"\nurl = "{base}/mcp"\ntrust_annotations = true\n'
    )
    cli = [*peers.fixture_server("oauth_cli"), "-vvv", "-w", str(ws)]
    outputs: list[str] = []

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*cli, *args], capture_output=True, text=True, env=env, timeout=60)
        outputs.extend([done.stdout, done.stderr])
        return done

    before = run("mcp", "status")
    assert "needs_authorization" in before.stdout and "kairox mcp login s" in before.stdout

    proc = subprocess.Popen(
        [*cli, "mcp", "login", "s", "--no-browser", "--timeout", str(WAIT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        start_new_session=True,
    )
    assert proc.stderr is not None
    err_lines = []
    for line in proc.stderr:
        err_lines.append(line)
        if line.strip().startswith(f"{base}/authorize?"):
            follow(line.strip())
            break
    out, rest = proc.communicate(timeout=WAIT)
    outputs += [out, "".join(err_lines), rest]
    assert proc.returncode == 0, outputs
    assert "Logged in to s" in out

    path = token_path("s", env)
    saved = json.loads(path.read_text())
    secrets = [saved["tokens"]["access_token"], saved["tokens"]["refresh_token"]]
    secrets += [c for c in [saved["client_info"].get("client_secret")] if c]
    seen = hashlib.sha256(saved["tokens"]["access_token"].encode()).hexdigest()

    for args in (["mcp", "status"], ["tools", "call", "s.whoami"], ["mcp", "logs", "s"]):
        done = run(*args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    assert saved["client_info"]["client_id"] in outputs[-4]  # the tool call's answer
    assert stats(base)["seen"][-1] == seen  # and it carried the stored token
    logout = run("mcp", "logout", "s")
    assert "Logged out of s" in logout.stdout and not path.exists()

    after = run("mcp", "status")
    assert "needs_authorization" in after.stdout and "kairox mcp login s" in after.stdout
    call = run("tools", "call", "s.whoami")
    assert call.returncode == 1 and "needs authorization" in call.stderr and "kairox mcp login s" in call.stderr

    text = "\n".join(outputs)
    for secret in secrets:
        assert secret not in text
    assert stats_codes(outputs) == []  # the fixture's codes start with "code-"


def stats_codes(outputs: list[str]) -> list[str]:
    """Authorization codes the fixture issues start with ``code-``: any in the output is a leak."""
    return [word for text in outputs for word in text.split() if word.startswith("code-")]
