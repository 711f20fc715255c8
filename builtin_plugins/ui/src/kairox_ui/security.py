"""The dashboard's front door: the access token, the Host check, the Origin check.

``kairox ui`` prints ``http://HOST:PORT/#token=TOKEN``: the fragment is never sent to
any server (nor in a Referer), and the page's script keeps the token in
``sessionStorage`` and takes it out of the address bar. The page itself (the HTML shell,
its modules and CSS: nothing with data) is served without the token; every ``/api/``
request needs ``Authorization: Bearer TOKEN``, except the event stream, which takes
``?token=TOKEN`` (EventSource cannot send headers; the URL only ever goes to this
server, and every response says ``Referrer-Policy: no-referrer``). No cookie is set or
read: browsers do not keep cookies apart by port, so a cookie for 127.0.0.1 would be
sent to every other local server the user visits. A legacy ``/?token=`` page load is
redirected to ``/#token=``.

The ``Host`` header must name the address the server listens on (a DNS-rebinding page
has its own host name), and a request that changes something must come from the
dashboard's own origin: ``Origin`` equal to ``http://<Host>``, ``Sec-Fetch-Site`` not
``cross-site``, and the ``X-Kairox-UI`` header (which a cross-site form cannot send).
Anything else is 403 and does nothing.

The parsers here read outside input (headers); they never raise.
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
import stat
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any

from kairox.files import atomic_write_text, locked
from kairox_cli import is_loopback_host as is_loopback

__all__ = [
    "CSRF_HEADER",
    "STREAM_PATH",
    "Guard",
    "allowed_hosts",
    "bearer_token",
    "host_allowed",
    "is_loopback",
    "new_token",
    "stored_token",
    "origin_allowed",
    "parse_host",
    "strip_token",
]

CSRF_HEADER = "x-kairox-ui"
SAFE_METHODS = frozenset({"GET", "HEAD"})
#: the server-sent event stream: EventSource cannot send headers, so it takes ``?token=``
STREAM_PATH = "/api/stream"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def new_token() -> str:
    """A fresh random access token (URL-safe, 256 bits)."""
    return secrets.token_urlsafe(32)


#: the file in the kairox home that keeps the dashboard's token between runs
TOKEN_FILE = "ui-token"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{43,128}")


def stored_token(home: Path) -> str:
    """The dashboard's access token kept in ``HOME/ui-token`` (only the user may read it),
    made on first use: a page left open reconnects by itself when ``kairox ui`` is started
    again. Whoever can read the file can read the rest of the kairox home, and run kairox
    itself, so keeping it there gives away nothing; deleting it makes a new one."""
    path = home / TOKEN_FILE
    home.mkdir(parents=True, exist_ok=True)
    with locked(path.with_name(path.name + ".lock")):
        text = _own_token_text(path)
        if _TOKEN.fullmatch(text):
            return text
        # none yet, not one of ours, readable by others, or not a file of the user's own: a
        # fresh one (the atomic write replaces a link, never writes through it)
        token = new_token()
        atomic_write_text(path, token + "\n", mode=0o600)
        return token


def _own_token_text(path: Path) -> str:
    """The first bytes of ``path`` when it is a regular file of this user that no one else
    may read, else ``""``. Never through a link (one planted there could lead to another of
    the user's secrets, which the dashboard would then print in its URL), and never blocking
    (a FIFO planted there would hang ``kairox ui``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # missing, a link (ELOOP), unreadable
        return ""
    with os.fdopen(fd, "rb") as file:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return ""
        return file.read(256).decode("ascii", errors="replace").strip()  # a token is short


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


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header, else ``None``."""
    if not header or not header[:7].lower() == "bearer ":
        return None
    return header[7:].strip()


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
    """ASGI middleware: refuse (403) what names another host or comes from another origin,
    and every ``/api/`` request without the token; send a legacy ``/?token=`` page load to
    ``/#token=`` (the fragment never reaches a server). No cookie is ever set or read."""

    def __init__(self, app: App, *, token: str, host: str, port: int, pages: Iterable[str] = ()) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.hosts = allowed_hosts(host, port)
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
        path = scope.get("path", "/")
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
        if path == "/api" or path.startswith("/api/"):
            if path == STREAM_PATH and method in SAFE_METHODS:
                tokens = _query_tokens(query)  # EventSource cannot send headers
                given = tokens[0] if tokens else bearer_token(headers.get("authorization"))
            else:
                given = bearer_token(headers.get("authorization"))
            if not _equal(given, self.token):
                await self._refuse(send, "token", "the access token is missing: open the URL kairox ui printed")
                return
        elif method in SAFE_METHODS and path in self.pages and _query_tokens(query):
            if not _equal(_query_tokens(query)[0], self.token):
                await self._refuse(send, "token", "wrong access token: open the URL kairox ui printed")
                return
            await self._redirect_to_fragment(send, path, strip_token(query))
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
                    (b"referrer-policy", b"no-referrer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _redirect_to_fragment(self, send: Send, path: str, query: str) -> None:
        location = path + (f"?{query}" if query else "") + f"#token={self.token}"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode("latin-1", "replace")),
                    (b"cache-control", b"no-store"),
                    (b"content-length", b"0"),
                    (b"referrer-policy", b"no-referrer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})
