"""A catalog server on 127.0.0.1: http.server in a thread on a free port.

Serves documents by path with ETag / Last-Modified, answers conditional
requests with 304, and can be slow, fail or send garbage per route. It also
stands for an MCP endpoint an entry points at: every request (any method) is kept
whole in ``received`` (request line, headers, body), and a POST is answered 500.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


@attrs.define
class Route:
    body: bytes = b""
    status: int = 200
    delay: float = 0.0
    etag: bool = True
    last_modified: str = "Wed, 21 Oct 2026 07:28:00 GMT"


@attrs.define
class Seen:
    path: str
    if_none_match: str | None
    if_modified_since: str | None
    status: int


class CatalogServer:
    """Serves documents by path. ``routes[path]`` sets a response; ``requests`` records each one
    with its conditional headers and the status sent (304 when the ETag matches)."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[Seen] = []
        self.received: list[bytes] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _keep(self, body: bytes = b"") -> None:
                raw = f"{self.requestline}\r\n{self.headers}".encode("latin-1", "replace") + body
                with server._lock:
                    server.received.append(raw)

            def do_POST(self) -> None:
                length = min(int(self.headers.get("Content-Length") or 0), 1 << 20)
                self._keep(self.rfile.read(length) if length else b"")
                try:
                    self.send_response(500)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                self._keep()
                route = server.routes.get(self.path)
                inm = self.headers.get("If-None-Match")
                ims = self.headers.get("If-Modified-Since")
                headers: dict[str, str] = {}
                if route is None:
                    status, body = 404, b"not found"
                else:
                    if route.delay:
                        time.sleep(route.delay)
                    etag = '"' + hashlib.sha256(route.body).hexdigest()[:16] + '"'
                    if route.etag:
                        headers["ETag"] = etag
                    if route.last_modified:
                        headers["Last-Modified"] = route.last_modified
                    if route.status == 200 and route.etag and inm == etag:
                        status, body = 304, b""
                    elif route.status == 200 and not route.etag and ims and ims == route.last_modified:
                        status, body = 304, b""
                    else:
                        status, body = route.status, route.body
                with server._lock:
                    server.requests.append(Seen(self.path, inm, ims, status))
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    if body:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def serve(self, path: str, document: Any = None, *, raw: bytes | None = None, **kw: Any) -> str:
        body = raw if raw is not None else json.dumps(document).encode()
        self.routes[path] = Route(body=body, **kw)
        return self.url(path)

    def text(self) -> str:
        """Everything every request sent, as text."""
        with self._lock:
            return b"\n".join(self.received).decode("utf-8", "replace")

    def hits(self, path: str) -> list[Seen]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def __enter__(self) -> CatalogServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
