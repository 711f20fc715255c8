"""OAuth 2.1 for HTTP MCP servers, through the SDK's ``OAuthClientProvider``.

Two ways to use the same provider and the same token file:

* the **runtime** (:func:`runtime_auth`): sends the stored access token, refreshes it
  when it has expired (or when the server rejects it and a refresh token exists), and
  otherwise never starts an interactive flow: a ``401`` with ``WWW-Authenticate`` (or a
  ``403 insufficient_scope``) calls ``on_needed`` with "run ``kairox mcp login NAME``",
  and the server's lifecycle moves to ``needs_authorization``;
* ``kairox mcp login NAME`` (:func:`login`): the whole flow: protected resource
  metadata, authorization server metadata, dynamic client registration (or the
  configured ``oauth.client_id``), authorization code + PKCE with a loopback redirect
  listener on 127.0.0.1, the token request; the tokens are stored.

Tokens live in ``$KAIROX_HOME/mcp-oauth/<server>.json`` (directory 0700, file 0600,
written atomically), bound to the server's URL: a file written for another URL is
never sent. Tokens, codes and client secrets never appear in an output, a log record
or an error (:class:`TokenFileError` names the file and the field, never a value).

This module is cheap to import: ``mcp`` and ``httpx2`` are imported where used.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.parse
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kairox.errors import KairoxError
from kairox.ext import redact_url, user_home
from kairox.files import atomic_write_text, lock_path, locked

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
    from pydantic import BaseModel

    from .config import McpServerConfig
    from .transport import Diagnostics

__all__ = [
    "CALLBACK_PATH",
    "FileTokenStorage",
    "LoginFailed",
    "NeedsAuthorization",
    "TokenFile",
    "TokenFileError",
    "login",
    "login_command",
    "mark_needs_authorization",
    "needs_authorization",
    "needs_authorization_message",
    "quiet_sdk_auth_logs",
    "runtime_auth",
    "token_path",
    "wants_oauth",
]

logger = logging.getLogger(__name__)

M = TypeVar("M", bound="BaseModel")

#: where the loopback listener expects the authorization server's redirect
CALLBACK_PATH = "/callback"
#: the token file format
FORMAT_VERSION = 1
#: how long ``kairox mcp login`` waits for the browser to come back, seconds
LOGIN_TIMEOUT = 300.0
#: refresh this many seconds before the recorded expiry
EXPIRY_MARGIN = 5.0


class TokenFileError(KairoxError):
    """A token file that cannot be read (damaged JSON, a wrong field): names the file and
    the field, never a value."""


class NeedsAuthorization(KairoxError):
    """The server wants an OAuth login (``kairox mcp login NAME``)."""


class LoginFailed(KairoxError):
    """``kairox mcp login`` did not get a token (the reason, without secrets)."""


def login_command(server: str) -> str:
    return f"kairox mcp login {server}"


def needs_authorization_message(server: str, why: str = "") -> str:
    reason = f" ({why})" if why else ""
    return f"MCP server {server} needs authorization{reason}: run `{login_command(server)}`"


class _NoFlowErrorDetails(logging.Filter):
    """On the SDK's OAuth loggers: a record's exception keeps its type, loses its text and
    traceback. The SDK logs ``logger.exception("OAuth flow error")`` and "Invalid refresh
    response" with pydantic errors whose text quotes the token endpoint's answer (tokens,
    client secrets), which ``-vvv`` would print."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[0] is not None:
            record.msg = f"{record.getMessage()} ({record.exc_info[0].__name__})"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


_FILTER = _NoFlowErrorDetails()
SDK_AUTH_LOGGERS = ("mcp.client.auth", "mcp.client.auth.oauth2", "mcp.client.auth.utils")


def quiet_sdk_auth_logs() -> None:
    """Install :class:`_NoFlowErrorDetails` on the SDK's OAuth loggers (once)."""
    for name in SDK_AUTH_LOGGERS:
        log = logging.getLogger(name)
        if _FILTER not in log.filters:
            log.addFilter(_FILTER)


# -- the lifecycle's side channel: which connection attempt ended for want of a login -------
# (by identity: Diagnostics compares by value; an entry goes with its Diagnostics)
_NEEDED: dict[int, tuple[weakref.ref[Any], str]] = {}


def mark_needs_authorization(diagnostics: Diagnostics, message: str) -> None:
    """Record that the attempt with ``diagnostics`` ended because the server wants a login."""
    key = id(diagnostics)
    if key not in _NEEDED:
        weakref.finalize(diagnostics, _NEEDED.pop, key, None)
    _NEEDED[key] = (weakref.ref(diagnostics), message)


def needs_authorization(diagnostics: Diagnostics) -> str | None:
    """The message of :func:`mark_needs_authorization` for this attempt, if any."""
    found = _NEEDED.get(id(diagnostics))
    return found[1] if found is not None and found[0]() is diagnostics else None


# -- the token file -------------------------------------------------------------------------
def _file_name(server: str) -> str:
    quoted = urllib.parse.quote(server, safe="")
    return quoted if quoted not in ("", ".", "..") else f"%{quoted}"


def token_path(server: str, env: Mapping[str, str] | None = None) -> Path:
    """``$KAIROX_HOME/mcp-oauth/<server>.json`` (the name percent-encoded)."""
    return user_home(env) / "mcp-oauth" / f"{_file_name(server)}.json"


def _describe_validation(exc: Any) -> str:
    """A pydantic ``ValidationError`` as field paths and messages, never the values."""
    parts = []
    for err in exc.errors(include_input=False, include_url=False, include_context=False):
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(document)"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts[:5]) or "invalid"


class TokenFile:
    """One server's token file: ``{"version", "server_url", "tokens", "expires_at", "client_info"}``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _error(self, field: str, what: str) -> TokenFileError:
        where = f"{self.path}: {field}" if field else str(self.path)
        return TokenFileError(f"{where}: {what} (run `kairox mcp logout` for this server and log in again)")

    def read(self) -> dict[str, Any] | None:
        """The document (``None`` when there is no file). Raises :class:`TokenFileError`."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._error("", f"cannot read: {exc.strerror or type(exc).__name__}") from None
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise self._error("", "not UTF-8 text") from None
        except json.JSONDecodeError as exc:
            raise self._error("", f"not JSON (line {exc.lineno}, column {exc.colno})") from None
        except RecursionError:
            raise self._error("", "nested too deeply") from None
        if not isinstance(data, dict):
            raise self._error("", "expected a JSON object")
        if data.get("version") != FORMAT_VERSION:
            raise self._error("version", f"expected {FORMAT_VERSION}")
        url = data.get("server_url")
        if not isinstance(url, str):
            raise self._error("server_url", "expected a string")
        expires = data.get("expires_at")
        if expires is not None and (isinstance(expires, bool) or not isinstance(expires, (int, float))):
            raise self._error("expires_at", "expected a number or null")
        for field in ("tokens", "client_info"):
            if data.get(field) is not None and not isinstance(data[field], dict):
                raise self._error(field, "expected an object or null")
        return data

    def tokens(self, data: Mapping[str, Any]) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        return self._model(data, "tokens", OAuthToken)

    def client_info(self, data: Mapping[str, Any]) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        return self._model(data, "client_info", OAuthClientInformationFull)

    def _model(self, data: Mapping[str, Any], field: str, model: type[M]) -> M | None:
        """``data[field]`` as a ``model`` (``None`` when absent or null); an invalid one is an
        error naming the file and the field."""
        from pydantic import ValidationError

        if data.get(field) is None:
            return None
        try:
            return model.model_validate(data[field])
        except ValidationError as exc:
            raise self._error(field, _describe_validation(exc)) from None

    def write(self, data: Mapping[str, Any]) -> None:
        directory = self.path.parent
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            os.chmod(directory, 0o700)
        except OSError:  # pragma: no cover - a directory we cannot chmod is still usable
            pass
        atomic_write_text(self.path, json.dumps(dict(data), indent=1) + "\n", mode=0o600)

    def delete(self) -> bool:
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True


class FileTokenStorage:
    """The SDK's ``TokenStorage`` over a :class:`TokenFile`, bound to ``server_url``: a file
    written for another URL reads as empty (and is replaced by the next write)."""

    def __init__(self, path: Path, server_url: str) -> None:
        self.file = TokenFile(path)
        self.server_url = server_url

    def read(self) -> dict[str, Any] | None:
        """The file's data when it was written for :attr:`server_url`, else ``None``."""
        data = self.file.read()
        if data is None or data.get("server_url") != self.server_url:
            return None
        return data

    def check(self) -> None:
        """Read and validate the file (raises :class:`TokenFileError`)."""
        data = self.read()
        if data is not None:
            self.file.tokens(data)
            self.file.client_info(data)

    def expires_at(self) -> float | None:
        data = self.read()
        value = data.get("expires_at") if data else None
        return float(value) if value is not None else None

    def has_tokens(self) -> bool:
        data = self.read()
        return bool(data and data.get("tokens"))

    def load_tokens(self) -> OAuthToken | None:
        data = self.read()
        return self.file.tokens(data) if data else None

    def load_client_info(self) -> OAuthClientInformationFull | None:
        data = self.read()
        return self.file.client_info(data) if data else None

    async def get_tokens(self) -> OAuthToken | None:
        return self.load_tokens()

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.load_client_info()

    def update(self, **fields: Any) -> None:
        """Set ``fields`` in the file (``None`` clears one), keeping the others."""
        # under the file's lock: a token refresh in one process and a client registration in
        # another keep each other's field (each reads the file the other wrote)
        self.file.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with locked(lock_path(self.file.path)):
            data = self.read() or {"version": FORMAT_VERSION, "server_url": self.server_url}
            data.update(fields)
            self.file.write(data)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        self.update(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.update(client_info=client_info.model_dump(mode="json", exclude_none=True))


def wants_oauth(server: McpServerConfig, headers: Mapping[str, str]) -> bool:
    """OAuth applies unless the entry sends its own ``Authorization`` header (a static token)
    or says ``oauth = { enabled = false }``."""
    if not server.oauth_settings.enabled:
        return False
    return not any(k.lower() == "authorization" for k in headers)


def _client_metadata(server: McpServerConfig, redirect_uri: str) -> Any:
    from mcp.shared.auth import OAuthClientMetadata

    oauth = server.oauth_settings
    return OAuthClientMetadata(
        client_name="kairox",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_post" if oauth.client_secret_env else "none",
        scope=" ".join(oauth.scopes) if oauth.scopes else None,
    )


def _make_provider(
    server: McpServerConfig,
    storage: FileTokenStorage,
    redirect_uri: str,
    redirect_handler: Callable[[str], Awaitable[None]] | None,
    callback_handler: Callable[[], Awaitable[Any]] | None,
) -> Any:
    from mcp.client.auth import OAuthClientProvider

    assert server.url
    provider = OAuthClientProvider(
        server.url,
        _client_metadata(server, redirect_uri),
        storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    # The SDK loads stored tokens without their expiry (it knows only ``expires_in``);
    # the file records when they expire, so an expired token is refreshed before use.
    expires = storage.expires_at()
    if expires is not None:
        provider.context.token_expiry_time = expires - EXPIRY_MARGIN
    return provider


def _challenged(response: httpx2.Response) -> bool:
    """A 401 with ``WWW-Authenticate: Bearer`` or a 403 ``insufficient_scope``."""
    header = response.headers.get("www-authenticate", "")
    if response.status_code == 401:
        return header.strip().lower().startswith("bearer") or not header
    return response.status_code == 403 and "insufficient_scope" in header


def runtime_auth(
    name: str,
    server: McpServerConfig,
    env: Mapping[str, str],
    on_needed: Callable[[str], None],
) -> httpx2.Auth:
    """The ``httpx2.Auth`` of a running server: stored token, automatic refresh, never an
    interactive flow (``on_needed(message)`` instead). Raises :class:`TokenFileError`
    for a damaged token file."""
    import httpx2

    quiet_sdk_auth_logs()
    storage = FileTokenStorage(token_path(name, env), server.url or "")
    storage.check()

    async def no_redirect(_url: str) -> None:  # pragma: no cover - the flow never gets this far
        raise NeedsAuthorization(needs_authorization_message(name))

    provider = _make_provider(server, storage, f"http://127.0.0.1{CALLBACK_PATH}", no_redirect, None)
    ctx = provider.context
    # what the provider loads on its first flow, loaded now: the fast path below needs it
    ctx.current_tokens = storage.load_tokens()
    ctx.client_info = storage.load_client_info()

    class RuntimeAuth(httpx2.Auth):
        requires_response_body = True

        async def _send(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
            """The provider's flow up to the authenticated request's response (which it
            never sees when it is a challenge: that would start the interactive flow)."""
            flow = provider.async_auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    if outgoing is request and _challenged(response):
                        return
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()

        async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
            # Each inner flow is closed here, in this task (it may hold the provider's lock):
            # left to the garbage collector, another task would release it.
            response: httpx2.Response | None = None
            if ctx.current_tokens is None and not storage.has_tokens():
                # not logged in: no OAuth request at all (a server without OAuth works as before)
                response = yield request
                if _challenged(response):
                    on_needed(needs_authorization_message(name, "not logged in"))
                return
            first = 0
            if ctx.current_tokens is not None and ctx.is_token_valid():
                # a valid token: sent without the provider's lock, which the SDK holds until the
                # response's headers arrive (a JSON answer to a slow call would hold every request)
                request.headers["Authorization"] = f"Bearer {ctx.current_tokens.access_token}"
                response = yield request
                if not _challenged(response):
                    return
                first = 1  # the token was rejected: straight to the refresh
            for attempt in range(first, 2):
                if attempt == 1:
                    if not ctx.can_refresh_token():
                        break
                    # rejected before its recorded expiry (revoked, or the clock disagrees): refresh once
                    ctx.token_expiry_time = 1.0  # in the past (0 would mean "never expires")
                    request.headers.pop("Authorization", None)
                gen = self._send(request)
                try:
                    outgoing = await gen.__anext__()
                    while True:
                        response = yield outgoing
                        outgoing = await gen.asend(response)
                except StopAsyncIteration:
                    pass
                finally:
                    await gen.aclose()
                if response is None or not _challenged(response):
                    return
            why = "the server rejected the stored token" if storage.has_tokens() else "not logged in"
            logger.info("MCP server %s: %s", name, why)
            on_needed(needs_authorization_message(name, why))

    return RuntimeAuth()


# -- kairox mcp login -------------------------------------------------------------------------
async def _loopback_listener(port: int) -> Any:
    import anyio

    multi = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    return multi.listeners[0]  # one address (127.0.0.1): its listener accepts one by one


_PAGE = (
    "<!doctype html><meta charset=utf-8><title>kairox</title>"
    "<p>{text}</p><p>You can close this tab and return to the terminal.</p>"
)


async def _serve_one_callback(listener: Any) -> dict[str, str]:
    """Accept connections until one is ``GET /callback?...``; answer it with a small page;
    return its query parameters (the code is never logged)."""
    import anyio

    while True:
        stream = await listener.accept()
        async with stream:
            try:
                with anyio.fail_after(10):
                    head = b""
                    while b"\r\n\r\n" not in head and len(head) < 16384:
                        chunk = await stream.receive(4096)
                        if not chunk:
                            break
                        head += chunk
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                continue
            line = head.split(b"\r\n", 1)[0].decode("latin-1", "replace")
            parts = line.split(" ")
            target = urllib.parse.urlsplit(parts[1]) if len(parts) == 3 and parts[0] == "GET" else None
            if target is None or target.path != CALLBACK_PATH:
                await _respond(stream, 404, "Not found.")
                continue
            params = dict(urllib.parse.parse_qsl(target.query))
            ok = "code" in params
            text = "Authorized." if ok else f"Authorization failed: {params.get('error', 'no code')}"
            await _respond(stream, 200 if ok else 400, text)
            return params


async def _respond(stream: Any, status: int, text: str) -> None:
    import html

    body = _PAGE.format(text=html.escape(text)).encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    try:
        await stream.send(head + body)
    except Exception:  # pragma: no cover - the browser went away
        pass


def _seed_client_info(
    server: McpServerConfig, storage: FileTokenStorage, redirect_uri: str, env: Mapping[str, str]
) -> None:
    """A configured ``oauth.client_id`` (and ``client_secret_env``): stored as the client's
    registration, so the flow skips dynamic client registration."""
    from mcp.shared.auth import OAuthClientInformationFull

    oauth = server.oauth_settings
    if not oauth.client_id:
        return
    secret = None
    if oauth.client_secret_env:
        secret = env.get(oauth.client_secret_env)
        if not secret:
            raise LoginFailed(f"environment variable {oauth.client_secret_env} (oauth.client_secret_env) is not set")
    info = OAuthClientInformationFull(
        client_id=oauth.client_id,
        client_secret=secret,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        token_endpoint_auth_method="client_secret_post" if secret else "none",
    )
    storage.update(client_info=info.model_dump(mode="json", exclude_none=True))


def _registered_ports(storage: FileTokenStorage) -> list[int]:
    data = storage.read()
    info = (data or {}).get("client_info") or {}
    ports = []
    for uri in info.get("redirect_uris") or []:
        parts = urllib.parse.urlsplit(str(uri))
        if parts.hostname == "127.0.0.1" and parts.path == CALLBACK_PATH and parts.port:
            ports.append(parts.port)
    return ports


async def _listen_for(storage: FileTokenStorage, port: int) -> Any:
    """The loopback listener: on ``port``, or (0) on the port a stored registration was made
    for when it is free (so the registration stays valid), else on any free port."""
    if port:
        return await _loopback_listener(port)
    for registered in _registered_ports(storage):
        try:
            return await _loopback_listener(registered)
        except OSError:
            continue
    return await _loopback_listener(0)


async def _forget_registration_unless(storage: FileTokenStorage, redirect_uri: str) -> None:
    """A dynamically registered client whose redirect URI is not ``redirect_uri`` cannot be
    used: drop it (and its tokens), so the flow registers again."""
    info = await storage.get_client_info()
    if info is not None and redirect_uri not in [str(u) for u in info.redirect_uris or []]:
        storage.update(client_info=None, tokens=None, expires_at=None)


async def login(
    name: str,
    server: McpServerConfig,
    env: Mapping[str, str],
    *,
    show_url: Callable[[str], None],
    open_browser: Callable[[str], bool] | None = None,
    timeout: float = LOGIN_TIMEOUT,
) -> Path:
    """Run the authorization code flow with PKCE for ``server``; store the tokens; return the
    token file. ``show_url`` prints the authorization URL; ``open_browser`` (when given)
    opens it. Raises :class:`LoginFailed`."""
    import anyio
    import httpx2
    from mcp.client.auth import OAuthFlowError
    from mcp.shared.auth import AuthorizationCodeResult

    if not server.url:
        raise LoginFailed(f"MCP server {name} has no url: only HTTP servers log in")
    quiet_sdk_auth_logs()
    path = token_path(name, env)
    storage = FileTokenStorage(path, server.url)
    storage.check()
    oauth = server.oauth_settings
    listener = await _listen_for(storage, oauth.redirect_port)
    try:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        redirect_uri = f"http://127.0.0.1:{port}{CALLBACK_PATH}"
        if oauth.client_id:
            _seed_client_info(server, storage, redirect_uri, env)
        else:
            await _forget_registration_unless(storage, redirect_uri)
        got: dict[str, str] = {}

        async def redirect_handler(url: str) -> None:
            show_url(url)
            if open_browser is not None:
                open_browser(url)

        async def callback_handler() -> AuthorizationCodeResult:
            with anyio.fail_after(timeout):
                params = await _serve_one_callback(listener)
            got.update(params)
            if "code" not in params:
                error = params.get("error", "no code in the redirect")
                desc = params.get("error_description")
                raise LoginFailed(f"the authorization server refused: {error}" + (f" ({desc})" if desc else ""))
            return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

        provider = _make_provider(server, storage, redirect_uri, redirect_handler, callback_handler)
        # Force the flow even with stored tokens: a login is asked for because they do not work.
        provider.context.token_expiry_time = None
        request_body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "kairox", "version": "0"},
            },
        }
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        timeouts = httpx2.Timeout(server.http_timeout, read=timeout + server.http_timeout)
        try:
            async with httpx2.AsyncClient(auth=provider, timeout=timeouts) as client:
                # an initialize: the server's challenge starts the flow (stored tokens that
                # still work, or refresh, make it a no-op); the legacy SSE transport protects
                # its event stream's GET (a POST there is 405): that GET, closed at once
                if server.type == "sse":
                    sse_headers = {**headers, "Accept": "text/event-stream"}
                    async with client.stream("GET", server.url, headers=sse_headers) as response:
                        status = response.status_code
                    session = None
                else:
                    async with client.stream("POST", server.url, json=request_body, headers=headers) as response:
                        status = response.status_code
                        session = response.headers.get("mcp-session-id")
                if session:
                    await client.request("DELETE", server.url, headers={"mcp-session-id": session})
        except TimeoutError:
            raise LoginFailed(f"no answer from the browser within {timeout:g} s") from None
        except OAuthFlowError as exc:
            raise LoginFailed(f"the OAuth flow failed: {_safe_flow_error(exc)}") from None
        except httpx2.HTTPError as exc:
            raise LoginFailed(f"cannot reach {redact_url(server.url)}: {type(exc).__name__}") from None
        if not storage.has_tokens():
            raise LoginFailed(
                f"{redact_url(server.url)} answered HTTP {status} without asking for authorization: nothing to log in to"
            )
        if status in (401, 403):
            raise LoginFailed(f"{redact_url(server.url)} still answers HTTP {status} with the new token")
        return path
    finally:
        await listener.aclose()


def _safe_flow_error(exc: BaseException) -> str:
    """The SDK's flow errors without what could carry a secret: a token or registration
    response quoted in a validation error or an error body, a redirect's state."""
    text = str(exc)
    for prefix in ("Invalid registration response", "Invalid token response", "State parameter mismatch"):
        if text.startswith(prefix):
            return prefix
    if text.startswith("Token exchange failed"):
        return text.split(":", 1)[0]  # "Token exchange failed (400)": the body may quote the code
    return text.splitlines()[0][:300] if text else type(exc).__name__
