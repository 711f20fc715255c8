"""The dashboard's front door: header parsers (property tests) and the Guard against the attacks."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_ui.security import (
    CSRF_HEADER,
    STREAM_PATH,
    Guard,
    allowed_hosts,
    bearer_token,
    host_allowed,
    is_loopback,
    new_token,
    origin_allowed,
    parse_host,
    stored_token,
    strip_token,
)

TOKEN = "t0ken-value"
PORT = 8765


@given(st.text(max_size=40))
def test_parse_host_never_raises_and_keeps_the_port_in_range(value: str) -> None:
    parsed = parse_host(value)
    if parsed is not None:
        name, port = parsed
        assert name and name == name.lower()
        assert port is None or 0 < port < 65536


@given(st.from_regex(r"[a-z][a-z0-9.-]{0,20}", fullmatch=True), st.integers(1, 65535))
def test_a_name_and_port_parse_back(name: str, port: int) -> None:
    assert parse_host(f"{name}:{port}") == (name, port)
    assert parse_host(name.upper()) == (name, None)


def test_ipv6_hosts() -> None:
    assert parse_host("[::1]:8765") == ("[::1]", 8765)
    assert parse_host("[::1") is None and parse_host("[nope]:1") is None and parse_host("a:b:c") is None


@given(st.text(max_size=40), st.text(max_size=40))
def test_origin_checks_never_raise(origin: str, host: str) -> None:
    assert origin_allowed(origin, host) in (True, False)


@given(st.text(max_size=60))
def test_only_the_dashboards_own_origin_passes(origin: str) -> None:
    host = f"127.0.0.1:{PORT}"
    if origin_allowed(origin, host):
        assert origin.strip().lower().rstrip("/") == f"http://127.0.0.1:{PORT}"


def test_origins() -> None:
    host = f"127.0.0.1:{PORT}"
    assert origin_allowed(f"http://127.0.0.1:{PORT}", host)
    for bad in (
        "null",
        f"https://127.0.0.1:{PORT}",
        f"http://localhost:{PORT}",
        "http://127.0.0.1:1",
        f"http://evil@127.0.0.1:{PORT}",
        "",
        None,
    ):
        assert not origin_allowed(bad, host), bad


@given(st.text(max_size=80))
def test_bearer_token_never_raises(header: str) -> None:
    value = bearer_token(header)
    assert value is None or (isinstance(value, str) and header.lower().startswith("bearer "))


@given(st.from_regex(r"[A-Za-z0-9_-]{1,60}", fullmatch=True))
def test_a_bearer_token_reads_back(token: str) -> None:
    assert bearer_token(f"Bearer {token}") == token and bearer_token(f"bearer  {token} ") == token
    assert bearer_token(f"Basic {token}") is None and bearer_token(token) is None and bearer_token(None) is None


@given(st.dictionaries(st.sampled_from(["token", "a", "b"]), st.text(max_size=5), max_size=3))
def test_strip_token_removes_only_the_token(params: dict[str, str]) -> None:
    import urllib.parse

    query = urllib.parse.urlencode(params)
    left = dict(urllib.parse.parse_qsl(strip_token(query), keep_blank_values=True))
    assert left == {k: v for k, v in params.items() if k != "token"}


def test_hosts() -> None:
    hosts = allowed_hosts("127.0.0.1", PORT)
    assert hosts is not None and {"127.0.0.1:8765", "localhost:8765", "[::1]:8765"} <= hosts
    assert host_allowed("localhost:8765", hosts, PORT)
    assert not host_allowed("rebind.example:8765", hosts, PORT)
    assert not host_allowed("127.0.0.1:9999", hosts, PORT)
    assert not host_allowed(None, hosts, PORT)
    assert allowed_hosts("0.0.0.0", PORT) is None and host_allowed("anything:8765", None, PORT)
    assert is_loopback("127.0.0.5") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2") and not is_loopback("example.com")
    assert len(new_token()) >= 40 and new_token() != new_token()


# -- the guard, as ASGI ---------------------------------------------------------------------
async def _call(
    guard: Guard, method: str, path: str, headers: dict[str, str], query: str = ""
) -> tuple[int, dict[str, str]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query.encode(),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    await guard(scope, receive, send)
    start = sent[0]
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}


def _guard(reached: list[str]) -> Guard:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    return Guard(app, token=TOKEN, host="127.0.0.1", port=PORT, pages=["/", "/skills"])


HOST = {"host": f"127.0.0.1:{PORT}"}
BEARER = {"authorization": f"Bearer {TOKEN}"}
SAME_ORIGIN = {"origin": f"http://127.0.0.1:{PORT}", CSRF_HEADER: "1"}


@pytest.mark.anyio
async def test_a_legacy_token_link_is_sent_to_the_fragment_and_no_cookie_is_set() -> None:
    reached: list[str] = []
    status, headers = await _call(_guard(reached), "GET", "/skills", HOST, f"token={TOKEN}&x=1")
    assert status == 303 and headers["location"] == f"/skills?x=1#token={TOKEN}"
    assert "set-cookie" not in headers and headers["referrer-policy"] == "no-referrer"
    assert reached == []
    status, headers = await _call(_guard(reached), "GET", "/", HOST, "token=wrong")
    assert status == 403 and "set-cookie" not in headers and reached == []


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["/", "/skills", "/static/app.js", "/static/style.css"])
async def test_the_shell_is_served_without_the_token(path: str) -> None:
    reached: list[str] = []
    status, headers = await _call(_guard(reached), "GET", path, HOST)
    assert status == 200 and reached == [path] and "set-cookie" not in headers


@pytest.mark.anyio
async def test_the_api_needs_the_bearer_header_and_the_stream_its_query_token() -> None:
    reached: list[str] = []
    assert (await _call(_guard(reached), "GET", "/api/status", {**HOST, **BEARER}))[0] == 200
    assert (await _call(_guard(reached), "GET", STREAM_PATH, HOST, f"token={TOKEN}"))[0] == 200
    assert reached == ["/api/status", STREAM_PATH]
    refused = [
        ("/api/status", HOST, ""),
        ("/api/status", HOST, f"token={TOKEN}"),  # a token in the URL is for the stream only
        ("/api/status", {**HOST, "cookie": f"kairox_ui_{PORT}={TOKEN}"}, ""),  # no cookie is read
        ("/api/status", {**HOST, "authorization": f"Basic {TOKEN}"}, ""),
        ("/api/status", {**HOST, "authorization": f"Bearer {TOKEN}x"}, ""),
        (STREAM_PATH, HOST, ""),
        (STREAM_PATH, HOST, "token=wrong"),
        (STREAM_PATH, {**HOST, "cookie": f"kairox_ui_{PORT}={TOKEN}"}, ""),
    ]
    for path, headers, query in refused:
        status, answer = await _call(_guard(reached), "GET", path, headers, query)
        assert status == 403 and "set-cookie" not in answer, (path, headers, query)
    assert reached == ["/api/status", STREAM_PATH]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("method", "headers", "query"),
    [
        ("GET", HOST, ""),  # no token
        ("GET", HOST, "token=wrong"),
        ("GET", HOST, f"token={TOKEN}"),  # not in the URL of an API call
        ("GET", {**HOST, "cookie": f"kairox_ui_{PORT}={TOKEN}"}, ""),  # a cookie is no token
        ("GET", {**HOST, "authorization": "Bearer wrong"}, ""),
        ("GET", {"host": f"rebind.example:{PORT}", **BEARER}, ""),  # DNS rebinding
        ("GET", {**BEARER}, ""),  # no Host
        ("GET", {**HOST, **BEARER, "origin": "http://evil.example"}, ""),
        ("GET", {**HOST, **BEARER, "sec-fetch-site": "cross-site"}, ""),
        ("POST", {**HOST, **BEARER}, ""),  # no Origin
        ("POST", {**HOST, **BEARER, "origin": "http://evil.example", CSRF_HEADER: "1"}, ""),
        ("POST", {**HOST, **BEARER, "origin": f"http://127.0.0.1:{PORT}"}, ""),  # a plain form: no header
        ("POST", {**HOST, "origin": f"http://127.0.0.1:{PORT}", CSRF_HEADER: "1"}, ""),  # no token
        ("POST", {**HOST, **SAME_ORIGIN}, f"token={TOKEN}"),  # not in the URL of an API call
    ],
)
async def test_the_attacks_are_refused_before_the_app(method: str, headers: dict[str, str], query: str) -> None:
    reached: list[str] = []
    status, _ = await _call(_guard(reached), method, "/api/skills/x/enabled", headers, query)
    assert status == 403 and reached == []


@pytest.mark.anyio
async def test_a_same_origin_change_with_the_token_passes() -> None:
    reached: list[str] = []
    status, _ = await _call(_guard(reached), "POST", "/api/reload", {**HOST, **BEARER, **SAME_ORIGIN})
    assert status == 200 and reached == ["/api/reload"]


def test_the_stored_token_is_kept_for_the_user_only_and_reused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    token = stored_token(home)
    path = home / "ui-token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stored_token(home) == token and len(token) >= 43
    path.chmod(0o644)  # readable by others: no longer a secret, so a fresh one
    replaced = stored_token(home)
    assert replaced != token and stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text("short\n")  # not one this code made
    assert stored_token(home) not in ("short", replaced)
    path.write_text("a" * 1_000_000)  # nor this: only its first bytes are read
    assert len(stored_token(home)) < 100


def test_a_link_planted_at_the_token_path_is_not_read_nor_written_through(tmp_path: Path) -> None:
    # the attack: ui-token -> another secret of the user's, shaped like a token (an API key
    # file, mode 0600); the dashboard would adopt it and print it in its URL
    home = tmp_path / "home"
    home.mkdir()
    secret = tmp_path / "api-key"
    key = "K" * 50
    secret.write_text(key + "\n")
    secret.chmod(0o600)
    (home / "ui-token").symlink_to(secret)
    token = stored_token(home)
    assert token != key
    assert secret.read_text() == key + "\n"  # the target is untouched
    path = home / "ui-token"
    assert not path.is_symlink() and path.read_text().strip() == token
    assert stored_token(home) == token


def test_a_fifo_planted_at_the_token_path_does_not_hang_the_dashboard(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    os.mkfifo(home / "ui-token", 0o600)
    code = "import sys, pathlib; from kairox_ui.security import stored_token; print(len(stored_token(pathlib.Path(sys.argv[1]))))"
    # a hang guard, not a measurement: opening a FIFO to read waits for a writer forever
    done = subprocess.run([sys.executable, "-c", code, str(home)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 43 and (home / "ui-token").is_file()
