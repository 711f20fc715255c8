"""Streamable HTTP: the gateway as an ASGI app, with a bearer token, Host and Origin checks.

- ``[serve.auth]``: every request must carry a JWT the :class:`~kairox_serve.identity.TokenVerifier`
  accepts; its ``sub`` is the request's principal. A missing or invalid token is 401, one
  without the required scopes 403, each with ``WWW-Authenticate: Bearer resource_metadata=...``
  naming the protected-resource metadata (RFC 9728), served without a token at
  ``/.well-known/oauth-protected-resource`` and at that path followed by ``/mcp``.
- ``token``: every request must carry ``Authorization: Bearer <token>`` (compared in
  constant time); anything else is 401. The principal is ``"token"``. The two are never
  configured together.
- Bound to a loopback address, the ``Host`` header must name a loopback host (421
  otherwise): a page whose name was re-bound to 127.0.0.1 (DNS rebinding) sends its own.
- An ``Origin`` header (browsers send one) must be a loopback origin or one of
  ``allowed_origins`` (403 otherwise). No CORS headers are ever sent.
- Without a token or ``[serve.auth]`` only a loopback address is served (:func:`check_bind`
  refuses the rest); the principal is ``"local"``.

- ``GET /healthz`` (liveness: the process answers) and ``GET /readyz`` (readiness: the runtime is
  open and the gateway serves; 503 while it starts or closes) need no token: a load balancer
  probes without one. They pass the Host and Origin checks like any request and answer one
  status word, nothing about the servers, the config or the principal.

What a connection may cost before these checks (read deadlines, a connection limit) is
:mod:`kairox_serve.frontdoor`'s; the SDK's session manager bounds the MCP sessions
(``[serve] max_sessions``, ``session_idle_timeout``).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
import attrs
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Message, Receive, Scope, Send

from kairox import KairoxError, Runtime
from kairox_cli import is_loopback_host

from .config import ServeConfig
from .frontdoor import DOOR_KEY, DoorLimits, FrontDoor, watching
from .gateway import PRINCIPAL_KEY, Gateway
from .identity import LOCAL_PRINCIPAL, TOKEN_PRINCIPAL, WELL_KNOWN, BadToken, Principal, TokenVerifier, metadata_path
from .identity import protected_resource_metadata as resource_metadata
from .runtime import serve_config

__all__ = [
    "HEALTH_PATH",
    "MCP_PATH",
    "READY_PATH",
    "GatewayApp",
    "HttpSettings",
    "InsecureBind",
    "bearer_token",
    "check_bind",
    "host_allowed",
    "is_loopback_host",
    "origin_allowed",
]

#: a bearer token shorter than this is refused at start (it could be guessed)
MIN_TOKEN_LENGTH = 16

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"


class InsecureBind(KairoxError):
    """A non-loopback address without a token."""


@attrs.frozen
class HttpSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    #: the bearer token every request must carry (``None``: no token; loopback only)
    token: str | None = attrs.field(default=None, repr=False)
    #: the variable the token came from (for messages; the token itself is never shown)
    token_env: str | None = None
    stateless: bool = False
    allowed_origins: tuple[str, ...] = ()


def check_bind(settings: HttpSettings, config: ServeConfig | None = None) -> None:
    """Refuse to serve a non-loopback address without a token or ``[serve.auth]``, and
    refuse both at once."""
    if config is not None and config.auth is not None and settings.token is not None:
        raise InsecureBind(
            f"[serve.auth] and --token-env {settings.token_env} (KAIROX_SERVE_TOKEN_ENV) are both set: the gateway "
            "takes either the identity provider's tokens or one static token; remove one"
        )
    if config is not None and config.auth is not None:
        return
    if settings.token is None and not is_loopback_host(settings.host):
        raise InsecureBind(
            f"refusing to serve {settings.host} without a token: anyone who can reach it could call every tool. "
            "Pass --token-env NAME (a variable holding a long random token; KAIROX_SERVE_TOKEN_ENV=NAME for "
            "kairox_serve.asgi) or serve 127.0.0.1"
        )


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value (``None`` otherwise)."""
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or any(c.isspace() for c in token):
        return None
    return token


def token_matches(given: str | None, expected: str) -> bool:
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass"))


def _hostname(authority: str) -> str | None:
    """The host of a ``Host`` header value (``name``, ``name:port``, ``[v6]:port``)."""
    authority = authority.strip()
    if not authority or any(c in authority for c in "/?#@ \t"):
        return None
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            return None
        rest = authority[end + 1 :]
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return None
        return authority[: end + 1]
    name, sep, port = authority.partition(":")
    if sep and not port.isdigit():
        return None
    return name or None


def host_allowed(host_header: str | None) -> bool:
    """Whether a ``Host`` header names a loopback host (the check of a loopback bind)."""
    if host_header is None:
        return False
    name = _hostname(host_header)
    return name is not None and is_loopback_host(name)


def origin_allowed(origin: str | None, allowed: Sequence[str] = ()) -> bool:
    """Whether a request's ``Origin`` may reach the gateway: none (not a browser), a
    loopback origin, or one of ``allowed`` (exact, scheme://host[:port])."""
    if origin is None:
        return True
    origin = origin.strip()
    if origin in allowed:
        return True
    try:
        parts = urlsplit(origin)
        port = parts.port  # raises on a bad port
    except ValueError:
        return False
    del port
    if parts.scheme not in ("http", "https") or parts.path or parts.query or parts.fragment or parts.username:
        return False
    return parts.hostname is not None and is_loopback_host(parts.hostname)


async def _respond(
    send: Send,
    status: int,
    text: str,
    headers: Sequence[tuple[bytes, bytes]] = (),
    content_type: bytes = b"text/plain; charset=utf-8",
) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class GatewayApp:
    """The ASGI app: its lifespan opens the runtime (``runtime``, a factory of an async
    context manager) and the SDK's session manager; ``/mcp`` requests pass the checks
    above and go to the manager."""

    def __init__(
        self,
        settings: HttpSettings,
        runtime: Callable[[], AbstractAsyncContextManager[Runtime]],
    ) -> None:
        self.settings = settings
        self._runtime = runtime
        self._manager: StreamableHTTPSessionManager | None = None
        self.gateway: Gateway | None = None
        #: the connections' deadlines and limit (uvicorn's protocol finds it in the lifespan state)
        self.door: FrontDoor | None = None
        #: with ``[serve.auth]``: the tokens' verifier, the metadata document and where it is
        self.verifier: TokenVerifier | None = None
        self._metadata: bytes = b""
        self._metadata_paths: tuple[str, ...] = ()
        self._metadata_url = ""
        #: MCP session id -> the principal whose request made it (oldest first; bounded)
        self._owners: dict[str, tuple[str, str]] = {}
        self._max_owners = 512
        #: set when the server begins to close: /readyz answers 503 from then on
        self.closing = False

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[GatewayApp]:
        async with AsyncExitStack() as stack:
            rt = await stack.enter_async_context(self._runtime())
            config = serve_config(rt)
            check_bind(self.settings, config)
            if config.auth is not None:
                self._set_auth(config, rt.workspace)
            gateway = Gateway(rt, config, stateless=self.settings.stateless)
            await stack.enter_async_context(gateway.running())
            manager = StreamableHTTPSessionManager(
                app=gateway.server,
                stateless=self.settings.stateless,
                # Host and Origin are checked here (one place, with allowed_origins); the
                # manager still checks Content-Type and the body size
                security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
                # a session beyond the limit is refused (503); an idle one is closed, with
                # its kairox session, and its id answers 404 after
                max_sessions=config.max_sessions,
                session_idle_timeout=config.session_idle_timeout,
            )
            await stack.enter_async_context(manager.run())
            self.door = FrontDoor(DoorLimits(config.header_timeout, config.body_timeout, config.max_connections))
            self._max_owners = 2 * config.max_sessions
            self.gateway, self._manager = gateway, manager
            try:
                yield self
            finally:
                self.gateway = self._manager = self.door = self.verifier = None

    def resource(self, config: ServeConfig) -> str:
        """The gateway's resource URL (RFC 8707): ``[serve.auth] resource``, else the bind's ``/mcp``."""
        assert config.auth is not None
        if config.auth.resource is not None:
            return config.auth.resource
        if not self.settings.port:
            raise InsecureBind(
                "[serve.auth] resource: not set, and the port is not known here; set it to the gateway's public URL "
                f"(https://HOST{MCP_PATH})"
            )
        host = f"[{self.settings.host}]" if ":" in self.settings.host else self.settings.host
        return f"http://{host}:{self.settings.port}{MCP_PATH}"

    def _set_auth(self, config: ServeConfig, workspace: Any) -> None:
        assert config.auth is not None
        resource = self.resource(config)
        self.verifier = TokenVerifier(config.auth, resource, config.principals.group_claim, workspace)
        self._metadata = json.dumps(resource_metadata(config.auth, resource)).encode()
        path = metadata_path(resource)
        self._metadata_paths = tuple(dict.fromkeys((path, WELL_KNOWN)))
        parts = urlsplit(resource)
        self._metadata_url = f"{parts.scheme}://{parts.netloc}{path}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        with watching(scope, receive) as watched:
            await self._serve(scope, watched, send)

    def readiness(self) -> str | None:
        """Why the gateway is not ready to serve (``"starting"``, ``"closing"``), or ``None``."""
        if self.closing:
            return "closing"
        if self._manager is None or self.gateway is None:
            return "starting"
        return None

    async def _probe(self, scope: Scope, send: Send, path: str) -> None:
        """``/healthz`` and ``/readyz``: no token, the Host and Origin checks, a status word."""
        refusal = self.check_probe(scope)
        if refusal is not None:
            status, text, headers = refusal
            await _respond(send, status, text, headers)
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await _respond(send, 405, "method not allowed", [(b"allow", b"GET, HEAD")])
            return
        status, text = 200, "ok"
        if path == READY_PATH:
            why = self.readiness()
            status, text = (200, "ready") if why is None else (503, f"not ready: {why}")
        await _respond(send, status, text, [(b"cache-control", b"no-store")])

    def check_probe(self, scope: Scope) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        """:meth:`check` without the token: the Host check of a gateway without one, the Origin check."""
        if self.settings.token is None and self.verifier is None:
            server = scope.get("server")
            if server and not is_loopback_host(str(server[0])):
                return 403, "refused: this gateway has no token and serves loopback only", []
            if not host_allowed(_header(scope, b"host")):
                return 421, "refused: the Host header must name a loopback host", []
        if not origin_allowed(_header(scope, b"origin"), self.settings.allowed_origins):
            return 403, "refused: this Origin may not use the gateway", []
        return None

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if path in (HEALTH_PATH, READY_PATH):
            await self._probe(scope, send, path)
            return
        if self.verifier is not None and path.rstrip("/") in self._metadata_paths:
            # the protected-resource metadata is public: a client reads it to learn where to get a token
            if scope.get("method") not in ("GET", "HEAD"):
                await _respond(send, 405, "method not allowed", [(b"allow", b"GET, HEAD")])
                return
            await _respond(send, 200, self._metadata.decode(), content_type=b"application/json")
            return
        refusal = await self.admit(scope)
        if refusal is not None:
            status, text, headers = refusal
            await _respond(send, status, text, headers)
            return
        if scope.get("path", "").rstrip("/") != MCP_PATH:
            await _respond(send, 404, f"not found: the MCP endpoint is {MCP_PATH}")
            return
        if self._manager is None:
            await _respond(send, 503, "the gateway is not running")
            return
        if self.settings.stateless:
            await self._manager.handle_request(scope, receive, send)
            return
        principal: Principal = scope[PRINCIPAL_KEY]
        owner = (principal.name, principal.via)
        session_id = _header(scope, b"mcp-session-id")
        if session_id is not None:
            # a session id is no credential: only the principal that made the session uses it
            known = self._owners.get(session_id)
            if known is None:
                await _respond(send, 404, "not found: no such MCP session")
            elif known != owner:
                await _respond(send, 403, "refused: this MCP session belongs to another principal")
            else:
                await self._manager.handle_request(scope, receive, send)
            return

        async def send_owned(message: Message) -> None:
            if message["type"] == "http.response.start":
                for key, value in message.get("headers", ()):
                    if bytes(key).lower() == b"mcp-session-id":
                        self._own(bytes(value).decode("latin-1"), owner)
            await send(message)

        await self._manager.handle_request(scope, receive, send_owned)

    def _own(self, session_id: str, owner: tuple[str, str]) -> None:
        self._owners[session_id] = owner
        while len(self._owners) > self._max_owners:  # the oldest first: sessions beyond these are gone
            del self._owners[next(iter(self._owners))]

    async def admit(self, scope: Scope) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        """Why a request is refused (status, text, headers), or ``None`` to serve it, its
        principal then in ``scope[PRINCIPAL_KEY]``."""
        verifier = self.verifier
        if verifier is None:
            refusal = self.check(scope)
            if refusal is None:
                scope[PRINCIPAL_KEY] = TOKEN_PRINCIPAL if self.settings.token is not None else LOCAL_PRINCIPAL
            return refusal
        token = bearer_token(_header(scope, b"authorization"))
        if token is None:
            challenge = verifier.challenge(self._metadata_url, None)
            return 401, "unauthorized: send Authorization: Bearer <token>", [(b"www-authenticate", challenge)]
        try:
            if verifier.fetches:  # the JWKS may be fetched: off the event loop
                principal: Principal = await anyio.to_thread.run_sync(verifier.verify, token)
            else:
                principal = verifier.verify(token)
        except BadToken as exc:
            logger.info("kairox serve: refused a token: %s", exc)
            challenge = verifier.challenge(self._metadata_url, exc)
            what = "forbidden" if exc.status == 403 else "unauthorized"
            return exc.status, f"{what}: {exc}", [(b"www-authenticate", challenge)]
        if not origin_allowed(_header(scope, b"origin"), self.settings.allowed_origins):
            return 403, "refused: this Origin may not use the gateway", []
        scope[PRINCIPAL_KEY] = principal
        return None

    def check(self, scope: Scope) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        """Why a request is refused by the static token, Host and Origin checks (status,
        text, headers), or ``None`` to serve it."""
        settings = self.settings
        if settings.token is None:
            server = scope.get("server")
            if server and not is_loopback_host(str(server[0])):  # served on a wider address after all
                return 403, "refused: this gateway has no token and serves loopback only", []
            if not host_allowed(_header(scope, b"host")):
                return 421, "refused: the Host header must name a loopback host", []
        elif not token_matches(bearer_token(_header(scope, b"authorization")), settings.token):
            return 401, "unauthorized: send Authorization: Bearer <token>", [(b"www-authenticate", b"Bearer")]
        if not origin_allowed(_header(scope, b"origin"), settings.allowed_origins):
            return 403, "refused: this Origin may not use the gateway", []
        return None

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        started = False
        try:
            async with self.serving():
                if isinstance(scope.get("state"), dict):  # uvicorn hands it to each connection's protocol
                    scope["state"][DOOR_KEY] = self.door
                await send({"type": "lifespan.startup.complete"})
                started = True
                await receive()  # lifespan.shutdown
        except Exception as exc:
            text = str(exc) if isinstance(exc, KairoxError) else f"{type(exc).__name__}: {exc}"
            logger.error("kairox serve: %s", text)
            await send({"type": "lifespan.shutdown.failed" if started else "lifespan.startup.failed", "message": text})
            return
        await send({"type": "lifespan.shutdown.complete"})


def settings_from(
    *,
    host: str,
    port: int,
    token_env: str | None,
    env: Any,
    stateless: bool,
    allowed_origins: Sequence[str] = (),
) -> HttpSettings:
    """Settings from options: the token is read from the variable ``token_env`` names."""
    token: str | None = None
    # where the name came from, as the user gave it (kairox serve's option, kairox_serve.asgi's variable)
    given = f"--token-env {token_env} (KAIROX_SERVE_TOKEN_ENV={token_env})"
    if token_env:
        token = env.get(token_env)
        if not token:
            raise InsecureBind(f"{given}: the variable {token_env} is not set or empty")
        if len(token) < MIN_TOKEN_LENGTH:
            raise InsecureBind(
                f"{given}: the token is {len(token)} characters; use at least {MIN_TOKEN_LENGTH} "
                "(python -c 'import secrets; print(secrets.token_urlsafe(32))')"
            )
    return HttpSettings(
        host=host,
        port=port,
        token=token,
        token_env=token_env,
        stateless=stateless,
        allowed_origins=tuple(o.strip() for o in allowed_origins if o.strip()),
    )
