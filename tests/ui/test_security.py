"""The dashboard's front door: header parsers (property tests) and the Guard against the attacks."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_ui.security import (
    CSRF_HEADER,
    Guard,
    allowed_hosts,
    cookie_name,
    cookie_value,
    host_allowed,
    is_loopback,
    new_token,
    origin_allowed,
    parse_host,
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


@given(st.text(max_size=80), st.text(min_size=1, max_size=10))
def test_cookie_value_never_raises(header: str, name: str) -> None:
    value = cookie_value(header, name)
    assert value is None or isinstance(value, str)


def test_cookie_value_finds_the_named_cookie() -> None:
    assert cookie_value('a=1; kairox_ui_8765="abc"; b=2', "kairox_ui_8765") == "abc"
    assert cookie_value("kairox_ui_8765x=abc", "kairox_ui_8765") is None


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
COOKIE = {"cookie": f"{cookie_name(PORT)}={TOKEN}"}
SAME_ORIGIN = {"origin": f"http://127.0.0.1:{PORT}", CSRF_HEADER: "1"}


@pytest.mark.anyio
async def test_the_token_becomes_an_httponly_strict_cookie_and_leaves_the_url() -> None:
    reached: list[str] = []
    status, headers = await _call(_guard(reached), "GET", "/skills", HOST, f"token={TOKEN}&x=1")
    assert status == 303 and headers["location"] == "/skills?x=1"
    assert headers["set-cookie"] == f"{cookie_name(PORT)}={TOKEN}; HttpOnly; SameSite=Strict; Path=/"
    assert reached == []
    assert (await _call(_guard(reached), "GET", "/api/status", {**HOST, **COOKIE}))[0] == 200
    assert reached == ["/api/status"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("method", "headers", "query"),
    [
        ("GET", HOST, ""),  # no token
        ("GET", HOST, "token=wrong"),
        ("GET", {**HOST, "cookie": f"{cookie_name(PORT)}=wrong"}, ""),
        ("GET", {**HOST, "authorization": "Bearer wrong"}, ""),
        ("GET", {"host": f"rebind.example:{PORT}", **COOKIE}, ""),  # DNS rebinding
        ("GET", {**COOKIE}, ""),  # no Host
        ("GET", {**HOST, **COOKIE, "origin": "http://evil.example"}, ""),
        ("GET", {**HOST, **COOKIE, "sec-fetch-site": "cross-site"}, ""),
        ("POST", {**HOST, **COOKIE}, ""),  # no Origin
        ("POST", {**HOST, **COOKIE, "origin": "http://evil.example", CSRF_HEADER: "1"}, ""),
        ("POST", {**HOST, **COOKIE, "origin": f"http://127.0.0.1:{PORT}"}, ""),  # a plain form: no header
        ("POST", {**HOST, "origin": f"http://127.0.0.1:{PORT}", CSRF_HEADER: "1"}, ""),  # no token
    ],
)
async def test_the_attacks_are_refused_before_the_app(method: str, headers: dict[str, str], query: str) -> None:
    reached: list[str] = []
    status, _ = await _call(_guard(reached), method, "/api/skills/x/enabled", headers, query)
    assert status == 403 and reached == []


@pytest.mark.anyio
async def test_a_same_origin_change_with_the_token_passes() -> None:
    reached: list[str] = []
    status, _ = await _call(_guard(reached), "POST", "/api/reload", {**HOST, **COOKIE, **SAME_ORIGIN})
    assert status == 200 and reached == ["/api/reload"]
