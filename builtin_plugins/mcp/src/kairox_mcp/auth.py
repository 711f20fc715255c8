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

A client that authorizes as itself needs no one at a browser: ``oauth.grant =
"client_credentials"`` (SEP-1046: a client secret or a ``private_key_jwt`` assertion signed
with the user's key) and ``"identity_assertion"`` (SEP-990: the single sign-on's ID token
exchanged for an ID-JAG) run the SDK's providers for them in the runtime itself
(:func:`_machine_provider`); ``kairox mcp login`` of such a server fetches a new token at once.

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
from kairox.ext import redact_url, terminal_safe, user_home
from kairox.files import atomic_write_text, lock_path, locked

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
    from pydantic import BaseModel

    from .config import McpServerConfig
    from .transport import Diagnostics

__all__ = [
    "CALLBACK_PATH",
    "CredentialsError",
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


class CredentialsError(LoginFailed):
    """The configured credentials of a grant without a browser (``client_credentials``,
    ``identity_assertion``) cannot be used: an unset variable, an unreadable key, a token
    request refused. Names the setting, never a value."""


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
    """One server's token file: ``{"version", "server_url", "tokens", "expires_at", "client_info",
    "scope", "challenge"}``: ``scope`` is what the last login asked for (a token response may
    leave the granted scope out: then it is that one, RFC 6749 5.1), ``challenge`` the
    ``WWW-Authenticate`` of a ``403 insufficient_scope`` the runtime got since (the next login
    asks for both: scope step-up)."""

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
        for field in ("scope", "challenge"):
            if data.get(field) is not None and not isinstance(data[field], str):
                raise self._error(field, "expected a string or null")
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
        client_metadata_url=server.oauth_settings.client_metadata_url,
    )
    # The SDK loads stored tokens without their expiry (it knows only ``expires_in``);
    # the file records when they expire, so an expired token is refreshed before use.
    expires = storage.expires_at()
    if expires is not None:
        provider.context.token_expiry_time = expires - EXPIRY_MARGIN
    return provider


#: the largest private key file read (a PEM key is a few KiB)
MAX_KEY_BYTES = 64 * 1024


def _private_key(server: McpServerConfig, env: Mapping[str, str]) -> str:
    """``oauth.private_key_file``, read contained in ``$KAIROX_HOME`` (the user's own files:
    a workspace's entry can name no other file of this machine)."""
    from kairox.files import Refused, Root

    oauth = server.oauth_settings
    assert oauth.private_key_file
    try:
        data = Root(user_home(env), label="$KAIROX_HOME").read_bytes(oauth.private_key_file, max_bytes=MAX_KEY_BYTES)
    except (Refused, OSError) as exc:
        reason = exc.reason if isinstance(exc, Refused) else (exc.strerror or type(exc).__name__)
        raise CredentialsError(f"oauth.private_key_file {oauth.private_key_file}: {reason}") from None
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise CredentialsError(f"oauth.private_key_file {oauth.private_key_file}: not a PEM file") from None


def _machine_provider(server: McpServerConfig, storage: FileTokenStorage, env: Mapping[str, str]) -> Any:
    """The SDK's provider for a grant without a browser, its credentials sent only to
    ``oauth.issuer``: ``client_credentials`` with a client secret (``client_secret_basic`` or
    ``_post``) or an assertion signed with the user's key (``private_key_jwt``, RFC 7523);
    ``identity_assertion`` (:func:`_identity_assertion_provider`). Raises
    :class:`CredentialsError`."""
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    oauth = server.oauth_settings
    assert server.url and oauth.client_id and oauth.issuer
    scope = " ".join(oauth.scopes) if oauth.scopes else None
    provider: Any
    if oauth.grant == "identity_assertion":
        return _identity_assertion_provider(server, storage, env, scope)
    if oauth.token_endpoint_auth_method == "private_key_jwt":
        signer = SignedJWTParameters(
            issuer=oauth.client_id,
            subject=oauth.client_id,
            signing_key=_private_key(server, env),
            signing_algorithm=oauth.signing_algorithm,
        ).create_assertion_provider()

        async def assertion(audience: str) -> str:
            try:
                return await signer(audience)
            except Exception as exc:  # PyJWT's and cryptography's errors: a wrong key or algorithm
                raise CredentialsError(
                    f"oauth.private_key_file {oauth.private_key_file} cannot sign {oauth.signing_algorithm} "
                    f"assertions ({type(exc).__name__})"
                ) from None

        provider = PrivateKeyJWTOAuthProvider(
            server.url, storage, oauth.client_id, assertion, scope=scope, issuer=oauth.issuer
        )
    else:
        assert oauth.client_secret_env
        secret = _secret(env, oauth.client_secret_env, "client_secret_env")
        method = oauth.token_endpoint_auth_method or "client_secret_basic"
        provider = ClientCredentialsOAuthProvider(
            server.url,
            storage,
            oauth.client_id,
            secret,
            "client_secret_post" if method == "client_secret_post" else "client_secret_basic",
            scope=scope,
            issuer=oauth.issuer,
        )
    expires = storage.expires_at()
    if expires is not None:
        provider.context.token_expiry_time = expires - EXPIRY_MARGIN
    return provider


def _secret(env: Mapping[str, str], var: str, field: str) -> str:
    value = env.get(var)
    if not value:
        raise CredentialsError(f"environment variable {var} (oauth.{field}) is not set")
    return value


#: RFC 8693 token exchange and the ID-JAG token type (SEP-990, enterprise-managed authorization)
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
#: the largest identity provider answer read
MAX_EXCHANGE_BYTES = 64 * 1024


def _identity_assertion_provider(
    server: McpServerConfig, storage: FileTokenStorage, env: Mapping[str, str], scope: str | None
) -> Any:
    """``grant = "identity_assertion"`` (SEP-990, enterprise-managed authorization): the user's
    ID token from the identity provider's single sign-on is exchanged there (RFC 8693) for an
    ID-JAG, which the SDK's ``IdentityAssertionOAuthProvider`` presents to the configured
    authorization server (RFC 7523 jwt-bearer). The SDK leaves the first leg to the deployment:
    it is this one request."""
    import httpx2
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    oauth = server.oauth_settings
    assert server.url and oauth.client_id and oauth.issuer and oauth.client_secret_env
    assert oauth.idp_token_endpoint and oauth.id_token_env
    secret = _secret(env, oauth.client_secret_env, "client_secret_env")
    id_token = _secret(env, oauth.id_token_env, "id_token_env")
    idp_secret = (
        _secret(env, oauth.idp_client_secret_env, "idp_client_secret_env") if oauth.idp_client_secret_env else None
    )
    endpoint = oauth.idp_token_endpoint

    async def fetch_id_jag(audience: str, resource: str) -> str:
        data = {
            "grant_type": TOKEN_EXCHANGE,
            "subject_token": id_token,
            "subject_token_type": ID_TOKEN_TYPE,
            "requested_token_type": ID_JAG_TYPE,
            "audience": audience,
            "resource": resource,
        }
        if oauth.idp_client_id:
            data["client_id"] = oauth.idp_client_id
        if scope:
            data["scope"] = scope
        auth = (oauth.idp_client_id or "", idp_secret) if idp_secret else None
        where = f"the identity provider ({redact_url(endpoint)})"
        try:
            async with httpx2.AsyncClient(timeout=server.http_timeout) as http:  # redirects not followed
                async with http.stream("POST", endpoint, data=data, auth=auth) as response:
                    body = b""
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > MAX_EXCHANGE_BYTES:
                            raise CredentialsError(f"{where} answered more than {MAX_EXCHANGE_BYTES:,} bytes")
        except httpx2.HTTPError as exc:
            raise CredentialsError(f"cannot reach {where}: {type(exc).__name__}") from None
        if response.status_code != 200:
            raise CredentialsError(f"{where} refused the token exchange (HTTP {response.status_code})")
        try:
            answer = json.loads(body)
        except (ValueError, RecursionError):
            answer = None
        jag = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(jag, str) or not jag or answer.get("issued_token_type") != ID_JAG_TYPE:
            raise CredentialsError(f"{where} answered the token exchange without an ID-JAG")
        return jag

    post = oauth.token_endpoint_auth_method == "client_secret_post"
    return IdentityAssertionOAuthProvider(
        server.url,
        storage,
        oauth.client_id,
        secret,
        oauth.issuer,
        fetch_id_jag,
        scope=scope,
        token_endpoint_auth_method="client_secret_post" if post else "client_secret_basic",
    )


def _machine_auth(provider: Any, grant: str) -> Any:
    """The :func:`_machine_provider` as an ``httpx2.Auth`` whose flow errors say what failed
    without what the authorization server answered (which may quote a secret)."""

    def translate(exc: Exception) -> None:
        from mcp.client.auth import OAuthFlowError

        if isinstance(exc, OAuthFlowError):  # OAuthTokenError too
            raise CredentialsError(f"the {grant} token request failed: {_safe_flow_error(exc)}") from None

    return _relay_auth(provider, translate)


def _relay_auth(provider: Any, on_error: Callable[[Exception], None] | None = None) -> Any:
    """``provider``'s auth flow (an ``httpx2.Auth`` of the SDK's) relayed step by step as an
    ``httpx2.Auth`` that keeps its errors (``errors``, :meth:`raise_first`): inside an SDK
    session an error in a request's auth flow reaches the caller only as a failed request.
    ``on_error`` sees an error first and may raise another in its place."""
    import httpx2

    class Relay(httpx2.Auth):
        requires_response_body = True

        def __init__(self) -> None:
            self.errors: list[BaseException] = []

        async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
            flow = provider.async_auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            except Exception as exc:
                try:
                    if on_error is not None:
                        on_error(exc)
                except Exception as replaced:
                    self.errors.append(replaced)
                    raise
                self.errors.append(exc)
                raise
            finally:
                await flow.aclose()

        def raise_first(self) -> None:
            if self.errors:
                raise self.errors[0]

    return Relay()


def _challenged(response: httpx2.Response) -> bool:
    """A 401 with ``WWW-Authenticate: Bearer`` or a 403 ``insufficient_scope``."""
    header = response.headers.get("www-authenticate", "")
    if response.status_code == 401:
        return header.strip().lower().startswith("bearer") or not header
    return response.status_code == 403 and "insufficient_scope" in header


#: the longest ``WWW-Authenticate`` kept for the next login (what a server says is bounded)
MAX_CHALLENGE = 4096


def _step_up_needed(name: str, storage: FileTokenStorage, response: httpx2.Response) -> str:
    """A ``403 insufficient_scope``: its challenge recorded for the next login, which asks for
    the scopes granted so far and the ones challenged (SEP-2350); the message to show."""
    from mcp.client.auth.utils import extract_scope_from_www_auth

    header = response.headers.get("www-authenticate", "")[:MAX_CHALLENGE]
    storage.update(challenge=header)
    scope = extract_scope_from_www_auth(response)
    why = f"the server asks for scope {terminal_safe(scope[:200])}" if scope else "the server asks for more scope"
    logger.info("MCP server %s: %s", name, why)
    return needs_authorization_message(name, why)


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
    if server.oauth_settings.grant != "authorization_code":
        # machine to machine: no one to ask, the runtime gets (and renews) its own token
        machine: httpx2.Auth = _machine_auth(_machine_provider(server, storage, env), server.oauth_settings.grant)
        return machine

    async def no_redirect(_url: str) -> None:  # pragma: no cover - the flow never gets this far
        raise NeedsAuthorization(needs_authorization_message(name))

    provider = _make_provider(server, storage, f"http://127.0.0.1{CALLBACK_PATH}", no_redirect, None)
    ctx = provider.context
    # what the provider loads on its first flow, loaded now: the fast path below needs it
    ctx.current_tokens = storage.load_tokens()
    ctx.client_info = storage.load_client_info()

    class RuntimeAuth(httpx2.Auth):
        requires_response_body = True

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
                if response.status_code == 403:  # a refresh keeps the scope: only a login widens it
                    on_needed(_step_up_needed(name, storage, response))
                    return
                first = 1  # the token was rejected: straight to the refresh
            for attempt in range(first, 2):
                if attempt == 1:
                    if not ctx.can_refresh_token():
                        break
                    # rejected before its recorded expiry (revoked, or the clock disagrees): refresh once
                    ctx.token_expiry_time = 1.0  # in the past (0 would mean "never expires")
                    request.headers.pop("Authorization", None)
                # the provider's flow up to the authenticated request's response, which it never
                # sees when it is a challenge (that would start the interactive flow)
                flow = provider.async_auth_flow(request)
                try:
                    outgoing = await flow.__anext__()
                    while True:
                        response = yield outgoing
                        if outgoing is request and _challenged(response):
                            break
                        outgoing = await flow.asend(response)
                except StopAsyncIteration:
                    pass
                finally:
                    await flow.aclose()
                if response is None or not _challenged(response):
                    return
                if response.status_code == 403:
                    on_needed(_step_up_needed(name, storage, response))
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
        # with a secret: settled from the authorization server's metadata (_settle_auth_method)
        token_endpoint_auth_method=oauth.token_endpoint_auth_method or ("client_secret_basic" if secret else "none"),
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
    opens it. Raises :class:`LoginFailed`.

    The server is asked what the runtime asks (a session of its revision that lists the
    tools), so whichever request it protects starts the flow. After a ``403
    insufficient_scope`` the runtime recorded, that challenge starts it instead (scope
    step-up); a server that challenges again for a scope the last login asked for is not
    authorized again (the retry limit: a new login cannot help)."""
    import anyio
    import httpx2
    from mcp.shared.auth import AuthorizationCodeResult

    if not server.url:
        raise LoginFailed(f"MCP server {name} has no url: only HTTP servers log in")
    quiet_sdk_auth_logs()
    path = token_path(name, env)
    storage = FileTokenStorage(path, server.url)
    storage.check()
    oauth = server.oauth_settings
    if oauth.grant != "authorization_code":
        return await _machine_login(server, storage, env, path)
    stored = storage.read() or {}
    challenge = stored.get("challenge") if stored.get("tokens") else None
    if challenge:
        _check_step_up(name, storage, challenge, stored.get("scope"))
    listener = await _listen_for(storage, oauth.redirect_port)
    try:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        redirect_uri = f"http://127.0.0.1:{port}{CALLBACK_PATH}"
        if oauth.client_id:
            _seed_client_info(server, storage, redirect_uri, env)
        else:
            await _forget_registration_unless(storage, redirect_uri)
        authorized: list[bool] = []
        provider: Any = None

        async def redirect_handler(url: str) -> None:
            # the authorization server's metadata is known now, the token request not yet made
            await _settle_auth_method(server, provider.context, storage)
            show_url(url)
            if open_browser is not None:
                open_browser(url)

        async def callback_handler() -> AuthorizationCodeResult:
            with anyio.fail_after(timeout):
                params = await _serve_one_callback(listener)
            if "code" not in params:
                error = params.get("error", "no code in the redirect")
                desc = params.get("error_description")
                raise LoginFailed(f"the authorization server refused: {error}" + (f" ({desc})" if desc else ""))
            authorized.append(True)
            return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

        provider = _make_provider(server, storage, redirect_uri, redirect_handler, callback_handler)
        # Force the flow even with stored tokens: a login is asked for because they do not work.
        provider.context.token_expiry_time = None
        # what was asked for before, kept: a step-up asks for it and the challenged scope (SEP-2350)
        from mcp.client.auth.utils import union_scopes

        provider.context.client_metadata.scope = union_scopes(
            provider.context.client_metadata.scope, stored.get("scope")
        )
        recorder = _relay_auth(provider)
        timeouts = httpx2.Timeout(server.http_timeout, read=timeout + server.http_timeout)
        refused: str | None = None
        try:
            async with httpx2.AsyncClient(auth=recorder, timeout=timeouts) as client:
                if challenge:
                    refused = await _replay_challenge(provider, server, challenge, timeouts)
                elif server.type == "sse":
                    refused = await _probe_sse(client, server)
                else:
                    refused = await _probe_session(client, server)
            recorder.raise_first()
        except Exception as exc:
            raise _login_error(_first_leaf(exc), timeout, server.url) from None
        if not authorized:
            if storage.has_tokens() and refused is None:
                return path  # the stored tokens work (or were refreshed): nothing to do
            raise LoginFailed(
                f"{redact_url(server.url)} answered without asking for authorization: nothing to log in to"
                if refused is None
                else f"{redact_url(server.url)} refused without an OAuth challenge: {refused}"
            )
        storage.update(challenge=None, scope=provider.context.client_metadata.scope)
        if refused is not None:
            raise LoginFailed(f"{redact_url(server.url)} still refuses with the new token: {refused}")
        return path
    finally:
        await listener.aclose()


async def _machine_login(
    server: McpServerConfig, storage: FileTokenStorage, env: Mapping[str, str], path: Path
) -> Path:
    """``kairox mcp login`` of a grant without a browser: a new token now (the runtime gets one
    itself; this checks the credentials). Raises :class:`LoginFailed`."""
    import httpx2

    assert server.url
    storage.update(tokens=None, expires_at=None)  # a login asks for a new token
    provider = _machine_provider(server, storage, env)
    recorder = _machine_auth(provider, server.oauth_settings.grant)
    try:
        async with httpx2.AsyncClient(auth=recorder, timeout=server.http_timeout) as client:
            refused = await (_probe_sse(client, server) if server.type == "sse" else _probe_session(client, server))
        recorder.raise_first()
    except Exception as exc:
        raise _login_error(_first_leaf(exc), server.http_timeout, server.url) from None
    if not storage.has_tokens():
        raise LoginFailed(
            f"{redact_url(server.url)} answered without asking for authorization: nothing to log in to"
            if refused is None
            else f"{redact_url(server.url)} refused without an OAuth challenge: {refused}"
        )
    if refused is not None:
        raise LoginFailed(f"{redact_url(server.url)} still refuses with the new token: {refused}")
    return path


def _first_leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups (a task group's, the SDK's)."""
    while isinstance(getattr(exc, "exceptions", None), (list, tuple)) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def _login_error(exc: BaseException, timeout: float, url: str) -> BaseException:
    """What ``kairox mcp login`` says of an error of the flow (never a secret); another
    error as it is."""
    import httpx2
    from mcp.client.auth import OAuthFlowError

    if isinstance(exc, TimeoutError):
        return LoginFailed(f"no answer from the browser within {timeout:g} s")
    if isinstance(exc, LoginFailed):
        return exc
    if isinstance(exc, OAuthFlowError):
        return LoginFailed(f"the OAuth flow failed: {_safe_flow_error(exc)}")
    if isinstance(exc, httpx2.HTTPError):
        return LoginFailed(f"cannot reach {redact_url(url)}: {type(exc).__name__}")
    return exc


def _check_step_up(name: str, storage: FileTokenStorage, challenge: str, asked: str | None) -> None:
    """The retry limit of scope step-up: a challenge for scopes the last login already asked
    for is not answered with another authorization (the server would refuse again; the
    suite's ``auth/scope-retry-limit``). The challenge is dropped, so the next login starts
    afresh."""
    import httpx2
    from mcp.client.auth.utils import extract_scope_from_www_auth

    wanted = extract_scope_from_www_auth(httpx2.Response(403, headers={"www-authenticate": challenge}))
    if wanted and asked and set(wanted.split()) <= set(asked.split()):
        storage.update(challenge=None)
        raise LoginFailed(
            f"MCP server {name} asks again for scope {terminal_safe(wanted[:200])}, which the last login "
            "asked for and the server refuses: not authorizing again (run the login again to start afresh)"
        )


def _initialize_body() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "kairox", "version": "0"},
        },
    }


_JSON_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def _probe_sse(client: httpx2.AsyncClient, server: McpServerConfig) -> str | None:
    """The legacy SSE transport protects its event stream's ``GET`` (a POST there is 405):
    that GET, closed at once. ``None``, or why the server refused."""
    assert server.url
    async with client.stream("GET", server.url, headers={**_JSON_HEADERS, "Accept": "text/event-stream"}) as response:
        status = response.status_code
    return f"HTTP {status}" if status in (401, 403) else None


async def _probe_session(client: httpx2.AsyncClient, server: McpServerConfig) -> str | None:
    """What the runtime does first, through the SDK's client: a session of the entry's
    revision (``protocol``: the handshake, or discovery first) that lists the tools, so a
    server that leaves ``initialize`` open and protects the rest, or speaks only 2026-07-28,
    challenges here as it would the runtime. ``None``, or why the server refused."""
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client

    assert server.url
    statuses: list[int] = []

    async def note(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    client.event_hooks["response"].append(note)
    mode = "legacy" if server.protocol == "2025-11-25" else "auto"
    try:
        transport = streamable_http_client(server.url, http_client=client)
        async with Client(transport, mode=mode) as session:
            await session.list_tools()
    except Exception as exc:  # the server's answer, not a crash: the caller decides
        if not statuses:
            raise  # no answer at all: the server cannot be reached
        refused = next((s for s in reversed(statuses) if s in (401, 403)), None)
        if refused is not None:
            return f"HTTP {refused}"
        logger.debug("kairox mcp login: the probe session ended: %s", type(exc).__name__)
    return None


async def _replay_challenge(
    provider: Any, server: McpServerConfig, challenge: str, timeouts: httpx2.Timeout
) -> str | None:
    """Scope step-up: the provider's flow answering the ``403 insufficient_scope`` the runtime
    recorded (as though the request had just got it), then that request again with the new
    token. ``None``, or why the server refused."""
    import httpx2

    assert server.url
    async with httpx2.AsyncClient(timeout=timeouts) as plain:
        request = plain.build_request("POST", server.url, json=_initialize_body(), headers=_JSON_HEADERS)
        flow = provider.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            response = httpx2.Response(403, headers={"www-authenticate": challenge}, request=outgoing)
            while True:
                outgoing = await flow.asend(response)
                response = await plain.send(outgoing)
        except StopAsyncIteration:
            pass
        finally:
            await flow.aclose()
        session = response.headers.get("mcp-session-id")
        if session:
            await plain.request("DELETE", server.url, headers={"mcp-session-id": session})
    return f"HTTP {response.status_code}" if _challenged(response) else None


async def _settle_auth_method(server: McpServerConfig, context: Any, storage: FileTokenStorage) -> None:
    """A pre-registered confidential client's token endpoint auth method: the configured one,
    else the best the authorization server's metadata supports (``client_secret_basic``, the
    default of RFC 8414 when it lists none, else ``client_secret_post``)."""
    oauth = server.oauth_settings
    info = context.client_info
    if not oauth.client_id or info is None or info.client_id != oauth.client_id or not info.client_secret:
        return
    method = oauth.token_endpoint_auth_method
    if method is None:
        metadata = context.oauth_metadata
        supported = (metadata.token_endpoint_auth_methods_supported if metadata is not None else None) or [
            "client_secret_basic"
        ]
        method = next(
            (m for m in ("client_secret_basic", "client_secret_post") if m in supported), "client_secret_basic"
        )
    if info.token_endpoint_auth_method != method:
        context.client_info = info.model_copy(update={"token_endpoint_auth_method": method})
        await storage.set_client_info(context.client_info)


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
