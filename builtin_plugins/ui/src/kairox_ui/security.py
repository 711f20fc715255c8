"""The dashboard's front door: the access token, the Host check, the Origin check.

Every request must carry the token: the ``token`` query parameter (the URL
``kairox ui`` prints; the first page load turns it into a cookie and redirects to
the same URL without it), the cookie (HttpOnly, SameSite=Strict), or an
``Authorization: Bearer`` header. The ``Host`` header must name the address the
server listens on (a DNS-rebinding page has its own host name), and a request
that changes something must come from the dashboard's own origin: ``Origin``
equal to ``http://<Host>``, ``Sec-Fetch-Site`` not ``cross-site``, and the
``X-Kairox-UI`` header (which a cross-site form cannot send). Anything else is
403 and does nothing.

The parsers here read outside input (headers); they never raise.
"""

from __future__ import annotations

import ipaddress
import secrets
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

__all__ = [
    "CSRF_HEADER",
    "Guard",
    "allowed_hosts",
    "cookie_name",
    "cookie_value",
    "host_allowed",
    "is_loopback",
    "new_token",
    "origin_allowed",
    "parse_host",
    "strip_token",
]

CSRF_HEADER = "x-kairox-ui"
SAFE_METHODS = frozenset({"GET", "HEAD"})

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def new_token() -> str:
    """A fresh random access token (URL-safe, 256 bits)."""
    return secrets.token_urlsafe(32)


def cookie_name(port: int) -> str:
    """Cookies are not kept apart by port: each dashboard has its own cookie name."""
    return f"kairox_ui_{port}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address or host name) is this machine only."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def parse_host(value: str) -> tuple[str, int | None] | None:
    """``"name:port"`` / ``"[::1]:port"`` / ``"name"`` -> (lower-case name, port); ``None`` when malformed."""
    value = value.strip()
    if not value or any(c in value for c in " /\\@?#\t\r\n") or not value.isprintable():
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            return None
        name = f"[{name.lower()}]"
    else:
        name, sep, port_text = value.partition(":")
        rest = sep + port_text
        if not name or ":" in port_text:
            return None
        name = name.lower()
    if not rest:
        return name, None
    digits = rest[1:]
    if not rest.startswith(":") or not digits.isascii() or not digits.isdigit() or len(digits) > 5:
        return None
    if digits.startswith("0"):
        return None
    port = int(rest[1:])
    return (name, port) if 0 < port < 65536 else None


def allowed_hosts(host: str, port: int) -> frozenset[str] | None:
    """The ``Host`` values the server answers to: the bind address, and ``localhost`` and
    the loopback addresses when it listens on loopback; ``None`` (any name, the token
    still required) for a wildcard address such as ``0.0.0.0``."""
    name = host.strip().lower()
    if name in ("0.0.0.0", "::", "[::]", ""):
        return None
    if ":" in name and not name.startswith("["):
        name = f"[{name}]"
    names = {name}
    if is_loopback(host):
        names |= {"127.0.0.1", "localhost", "[::1]"}
    return frozenset(f"{n}:{port}" for n in names)


def host_allowed(header: str | None, allowed: frozenset[str] | None, port: int) -> bool:
    """Whether a request's ``Host`` header names this server."""
    parsed = parse_host(header or "")
    if parsed is None:
        return False
    name, given = parsed
    if given is None:
        given = 80
    if given != port:
        return False
    return allowed is None or f"{name}:{given}" in allowed


def origin_allowed(origin: str | None, host_header: str | None) -> bool:
    """Whether ``Origin`` is the dashboard's own (``http://`` + the request's Host)."""
    if not origin or not host_header:
        return False
    text = origin.strip()
    if not text.startswith("http://"):
        return False
    netloc = text[len("http://") :]
    if netloc.endswith("/"):
        netloc = netloc[:-1]
    if not netloc or any(c in netloc for c in "/?#@"):
        return False
    mine, theirs = parse_host(host_header), parse_host(netloc)
    if mine is None or theirs is None:
        return False
    return (mine[0], mine[1] or 80) == (theirs[0], theirs[1] or 80)


def cookie_value(header: str | None, name: str) -> str | None:
    """The value of cookie ``name`` in a ``Cookie`` header (the first one), else ``None``."""
    if not header:
        return None
    for part in header.split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key.strip() == name:
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            return value
    return None


def strip_token(query: str) -> str:
    """The query string without its ``token`` parameters (the URL the page is redirected to)."""
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    return urllib.parse.urlencode([(k, v) for k, v in pairs if k != "token"])


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw_key, raw_value in scope.get("headers", ()):
        key = raw_key.decode("latin-1").lower()
        if key not in out:  # the first of repeated headers
            out[key] = raw_value.decode("latin-1")
    return out


def _query_tokens(query: str) -> list[str]:
    return [v for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True) if k == "token"]


def _equal(given: str | None, token: str) -> bool:
    return given is not None and secrets.compare_digest(given.encode("utf-8", "replace"), token.encode())


class Guard:
    """ASGI middleware: refuse (403) what lacks the token, names another host, or comes
    from another origin; turn a valid ``?token=`` on a page load into the cookie."""

    def __init__(self, app: App, *, token: str, host: str, port: int, pages: Iterable[str] = ()) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.hosts = allowed_hosts(host, port)
        self.cookie = cookie_name(port)
        self.pages = frozenset(pages)
        #: requests refused, by reason (tests and the trace read it)
        self.refused: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # websockets: none served
        headers = _headers(scope)
        method = scope.get("method", "GET").upper()
        query = scope.get("query_string", b"").decode("latin-1")
        host = headers.get("host")
        if not host_allowed(host, self.hosts, self.port):
            await self._refuse(send, "host", "this dashboard answers only to its own address")
            return
        origin = headers.get("origin")
        if method not in SAFE_METHODS:
            if not origin_allowed(origin, host) or headers.get(CSRF_HEADER) != "1":
                await self._refuse(send, "origin", "a change must come from the dashboard's own page")
                return
        elif origin is not None and not origin_allowed(origin, host):
            await self._refuse(send, "origin", "cross-origin request")
            return
        if headers.get("sec-fetch-site") == "cross-site":
            await self._refuse(send, "origin", "cross-site request")
            return
        tokens = _query_tokens(query)
        if tokens:
            if not _equal(tokens[0], self.token):
                await self._refuse(send, "token", "wrong access token")
                return
            if method == "GET" and scope.get("path", "/") in self.pages:
                await self._set_cookie_and_redirect(scope, send, strip_token(query))
                return
        else:
            bearer = headers.get("authorization", "")
            given = bearer[7:].strip() if bearer.lower().startswith("bearer ") else None
            if given is None:
                given = cookie_value(headers.get("cookie"), self.cookie)
            if not _equal(given, self.token):
                await self._refuse(send, "token", "the access token is missing: open the URL kairox ui printed")
                return
        await self.app(scope, receive, send)

    async def _refuse(self, send: Send, reason: str, message: str) -> None:
        self.refused[reason] = self.refused.get(reason, 0) + 1
        body = f"403 Forbidden: {message}\n".encode()
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _set_cookie_and_redirect(self, scope: Scope, send: Send, query: str) -> None:
        location = scope.get("path", "/") + (f"?{query}" if query else "")
        cookie = f"{self.cookie}={self.token}; HttpOnly; SameSite=Strict; Path=/"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode("latin-1", "replace")),
                    (b"set-cookie", cookie.encode()),
                    (b"cache-control", b"no-store"),
                    (b"content-length", b"0"),
                    (b"referrer-policy", b"no-referrer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})
