"""The ``[mcp_servers.NAME]`` entry: every field kairox reads, with Kairox and Codex names.

One server entry is a :class:`McpServerConfig`. Both spellings of a field are
accepted (``headers`` / ``http_headers``, ``startup_timeout`` /
``startup_timeout_sec``, ...); the ``*_s`` properties and :meth:`McpServerConfig.resolve_headers`
give the effective value. Transport plugins read the fields they need from here.

This module never imports ``mcp``.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

import attrs

from kairox import Capability, Domain
from kairox.errors import ConfigError
from kairox.ext import redact, redact_url

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT",
    "DEFAULT_TOOL_TIMEOUT",
    "HOST_REQUEST_MODES",
    "TRANSPORT_ALIASES",
    "McpServerConfig",
    "PROTOCOLS",
    "OAuthSettings",
    "ServerDefinition",
    "normalize_transport",
    "redact_config",
    "redact_url",
]

#: seconds a server may take to answer ``initialize`` (npx cold starts are slow)
DEFAULT_STARTUP_TIMEOUT = 30.0
#: seconds one ``tools/call`` may take
DEFAULT_TOOL_TIMEOUT = 60.0

#: names other tools use for our transports
TRANSPORT_ALIASES: dict[str, str] = {
    "http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamablehttp": "streamable_http",
    "streamableHttp": "streamable_http",
    "shttp": "streamable_http",
}

REMOTE_TRANSPORTS = frozenset({"sse", "streamable_http"})


def normalize_transport(name: str) -> str:
    """``http`` / ``streamable-http`` -> ``streamable_http``; other names unchanged."""
    return TRANSPORT_ALIASES.get(name, TRANSPORT_ALIASES.get(name.lower(), name))


def _positive(_inst: Any, attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None and not value > 0:
        raise ConfigError(f"expected a number > 0, got {value!r}", path=attribute.name)


#: what a server's sampling / elicitation requests get: the policy's ask, always, or never
HOST_REQUEST_MODES = ("ask", "allow", "deny")


def _host_request_mode(_inst: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if value not in HOST_REQUEST_MODES:
        raise ConfigError(f'expected "ask", "allow" or "deny", got {value!r}', path=attribute.name)


LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _log_level(_inst: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and value not in LOG_LEVELS:
        raise ConfigError(f"expected one of {', '.join(LOG_LEVELS)}, got {value!r}", path=attribute.name)


#: ``protocol``: how a connection settles its revision. "auto" does what the SDK's
#: ``Client(mode="auto")`` does (``server/discover``, else the ``initialize`` handshake);
#: "2025-11-25" always uses the handshake. SSE servers always use the handshake.
PROTOCOLS = ("auto", "2025-11-25")


def _protocol(_inst: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if value not in PROTOCOLS:
        raise ConfigError(f'expected "auto" or "2025-11-25", got {value!r}', path=attribute.name)


def _not_negative(_inst: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    if value < 0:
        raise ConfigError(f"expected a number >= 0, got {value!r}", path=attribute.name)


def _port(_inst: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if not 0 <= value <= 65535:
        raise ConfigError(f"expected a port number 0-65535, got {value!r}", path=attribute.name)


#: ``oauth.token_endpoint_auth_method``: how a pre-registered client authenticates at the token endpoint
TOKEN_ENDPOINT_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "private_key_jwt", "none")
#: ``oauth.grant``: how kairox gets a token (a browser login, or the client's own credentials)
GRANTS = ("authorization_code", "client_credentials", "identity_assertion")
#: ``oauth.signing_algorithm``: what PyJWT signs a ``private_key_jwt`` assertion with (asymmetric only)
SIGNING_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


def _auth_method(_inst: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and value not in TOKEN_ENDPOINT_AUTH_METHODS:
        raise ConfigError(
            f"expected one of {', '.join(TOKEN_ENDPOINT_AUTH_METHODS)}, got {value!r}", path=attribute.name
        )


def _one_of(choices: tuple[str, ...]) -> Any:
    def check(_inst: Any, attribute: attrs.Attribute[Any], value: str) -> None:
        if value not in choices:
            raise ConfigError(f"expected one of {', '.join(choices)}, got {value!r}", path=attribute.name)

    return check


def _issuer(_inst: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is None:
        return
    parts = urllib.parse.urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"expected the authorization server's http(s) issuer URL, got {value!r}", path=attribute.name)


def _key_file(_inst: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """A path inside ``$KAIROX_HOME`` (relative to it): the key is the user's own file,
    never one a workspace points at elsewhere on the machine."""
    if value is None:
        return
    parts = value.replace("\\", "/").split("/")
    if not value or value.startswith(("/", "~")) or ".." in parts or ":" in value:
        raise ConfigError(
            f"expected a path relative to $KAIROX_HOME (such as keys/agent.pem), got {value!r}", path=attribute.name
        )


def _metadata_url(_inst: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """A client ID metadata document's URL: https with a path (what the spec allows as a client_id)."""
    if value is None:
        return
    parts = urllib.parse.urlsplit(value)
    if parts.scheme != "https" or not parts.hostname or parts.path in ("", "/"):
        raise ConfigError(f"expected an https URL with a path, got {value!r}", path=attribute.name)


@attrs.frozen
class OAuthSettings:
    """``oauth = { ... }`` of an HTTP server entry: how ``kairox mcp login`` authorizes.

    Without ``client_id`` the client registers itself (dynamic client registration);
    ``redirect_port`` 0 picks a free port for the loopback redirect (a pre-registered
    client needs the port it was registered with)."""

    #: use OAuth when the server asks for it (``false``: treat a 401 as an error)
    enabled: bool = True
    #: a client registered beforehand with the authorization server
    client_id: str | None = None
    #: environment variable holding that client's secret (confidential clients)
    client_secret_env: str | None = None
    #: scopes to ask for (default: what the server's challenge or metadata names)
    scopes: list[str] = attrs.field(factory=list)
    #: port of the loopback redirect listener on 127.0.0.1 (0: any free port)
    redirect_port: int = attrs.field(default=0, validator=_port)
    #: how the pre-registered client authenticates at the token endpoint (default: from the
    #: authorization server's ``token_endpoint_auth_methods_supported``)
    token_endpoint_auth_method: str | None = attrs.field(default=None, validator=_auth_method)
    #: the URL of kairox's client ID metadata document, used as the client_id where the
    #: authorization server supports them (else dynamic client registration)
    client_metadata_url: str | None = attrs.field(default=None, validator=_metadata_url)
    #: ``authorization_code`` (``kairox mcp login`` in a browser) or ``client_credentials``
    #: (machine to machine: the configured client's own credentials, no browser, no login)
    grant: str = attrs.field(default="authorization_code", validator=_one_of(GRANTS))
    #: the issuer URL of the authorization server the client's credentials belong to
    #: (``client_credentials``: they are sent to that server only, whatever the MCP server names)
    issuer: str | None = attrs.field(default=None, validator=_issuer)
    #: ``private_key_jwt``: the client's private key (PEM), a path relative to ``$KAIROX_HOME``
    private_key_file: str | None = attrs.field(default=None, validator=_key_file)
    #: ``private_key_jwt``: the JWS algorithm of the client assertion, matching the key
    signing_algorithm: str = attrs.field(default="RS256", validator=_one_of(SIGNING_ALGORITHMS))
    #: ``identity_assertion``: the enterprise identity provider's token endpoint (RFC 8693 token exchange)
    idp_token_endpoint: str | None = attrs.field(default=None, validator=_issuer)
    #: ``identity_assertion``: kairox's client ID at the identity provider
    idp_client_id: str | None = None
    #: ``identity_assertion``: environment variable holding that client's secret (if it has one)
    idp_client_secret_env: str | None = None
    #: ``identity_assertion``: environment variable holding the user's ID token from the identity
    #: provider's single sign-on (what the token exchange trades for an ID-JAG)
    id_token_env: str | None = None

    def __attrs_post_init__(self) -> None:
        jwt = self.token_endpoint_auth_method == "private_key_jwt"
        if jwt and self.grant != "client_credentials":
            raise ConfigError(
                'private_key_jwt is for grant = "client_credentials" (the browser login authenticates '
                "with a client secret or none)",
                path="token_endpoint_auth_method",
            )
        if jwt and not self.private_key_file:
            raise ConfigError(
                "private_key_jwt needs the client's key: set oauth.private_key_file", path="private_key_file"
            )
        if self.private_key_file and not jwt:
            raise ConfigError(
                'private_key_file is used with token_endpoint_auth_method = "private_key_jwt"', path="private_key_file"
            )
        if self.grant == "client_credentials":
            if not self.client_id:
                raise ConfigError(
                    "the client_credentials grant needs the registered client's client_id", path="client_id"
                )
            if not self.issuer:
                raise ConfigError(
                    "the client_credentials grant needs the authorization server's issuer URL (the client's "
                    "credentials are sent to that server only)",
                    path="issuer",
                )
            if not jwt and not self.client_secret_env:
                raise ConfigError(
                    'the client_credentials grant needs client_secret_env or token_endpoint_auth_method = "private_key_jwt"',
                    path="client_secret_env",
                )
            if self.token_endpoint_auth_method == "none":
                raise ConfigError(
                    "the client_credentials grant authenticates the client: not none", path="token_endpoint_auth_method"
                )
        if self.grant == "identity_assertion":
            for field, why in (
                ("client_id", "the client registered with the MCP server's authorization server"),
                ("client_secret_env", "that client's secret (a confidential client)"),
                ("issuer", "the authorization server's issuer URL (the ID-JAG's audience)"),
                ("idp_token_endpoint", "the identity provider's token endpoint"),
                ("id_token_env", "the environment variable holding the ID token of your single sign-on"),
            ):
                if not getattr(self, field):
                    raise ConfigError(f"the identity_assertion grant needs {why}", path=field)
            if self.token_endpoint_auth_method not in (None, "client_secret_basic", "client_secret_post"):
                raise ConfigError(
                    "the identity_assertion grant authenticates with client_secret_basic or client_secret_post",
                    path="token_endpoint_auth_method",
                )


@attrs.frozen(repr=False)
class McpServerConfig:
    """One MCP server (``[mcp_servers.NAME]`` in ``kairox.toml``).

    ``type`` names the transport: ``stdio`` (default), ``sse``,
    ``streamable_http`` (aliases ``http``, ``streamable-http``) or any transport
    a plugin registers.
    """

    #: "" (left out): streamable_http for an entry with only a ``url`` (as Codex writes them), else stdio
    type: str = attrs.field(default="", converter=normalize_transport)
    # -- stdio ---------------------------------------------------------------
    command: str | None = None
    args: list[str] = attrs.field(factory=list)
    #: extra environment; a value of "" means "the same-named variable of the runtime's environment"
    env: dict[str, str] = attrs.field(factory=dict)
    #: names of variables passed through from the runtime's environment (Codex)
    env_vars: list[str] = attrs.field(factory=list)
    cwd: str | None = None
    #: pass the whole environment instead of the small base set
    inherit_env: bool = False
    # -- remote ----------------------------------------------------------------
    url: str | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    http_headers: dict[str, str] = attrs.field(factory=dict)  # Codex name
    #: header name -> environment variable holding its value (Codex)
    env_http_headers: dict[str, str] = attrs.field(factory=dict)
    #: environment variable holding a bearer token (Codex name)
    bearer_token_env_var: str | None = None
    #: environment variable holding a bearer token (Kairox name)
    api_key_env: str | None = None
    #: connect / request timeout of the HTTP client, seconds
    http_timeout: float = attrs.field(default=30.0, validator=_positive)
    #: how long an SSE stream may stay silent, seconds
    sse_read_timeout: float = attrs.field(default=300.0, validator=_positive)
    # -- lifecycle -----------------------------------------------------------------
    startup_timeout: float | None = attrs.field(default=None, validator=_positive)
    startup_timeout_sec: float | None = attrs.field(default=None, validator=_positive)  # Codex name
    tool_timeout: float | None = attrs.field(default=None, validator=_positive)
    tool_timeout_sec: float | None = attrs.field(default=None, validator=_positive)  # Codex name
    enabled: bool = True
    #: a required server that fails to start makes the MCP provider fail (``kairox status`` exits 1)
    required: bool = False
    #: restarts after a crash before the server stays failed (0: never restart)
    max_restarts: int = attrs.field(default=3, validator=_not_negative)
    #: first restart delay, seconds; doubles on each consecutive crash (capped at 30 s)
    restart_backoff: float = attrs.field(default=1.0, validator=_not_negative)
    # -- tools ---------------------------------------------------------------------
    enabled_tools: list[str] | None = None
    disabled_tools: list[str] = attrs.field(factory=list)
    #: canonical ids become ``<tool_prefix>.<tool>`` (default: the server's name)
    tool_prefix: str | None = None
    #: what the server's tools are (else, with ``trust_annotations``, their annotations; else system/execute)
    domain: Domain | None = None
    capability: Capability | None = None
    #: let the tools' MCP annotations (readOnlyHint, destructiveHint, openWorldHint) set their
    #: capability and domain; honoured only from the user's own config (never a workspace's or a bundle's)
    trust_annotations: bool = False
    # -- requests the server sends the client ---------------------------------------
    #: ``sampling/createMessage`` (the server wants to ask the model): "ask" passes the policy
    #: like a tool call that asks, "allow" answers without asking, "deny" refuses. "allow" is
    #: honoured only from the user's own config (a workspace's becomes "ask")
    sampling: str = attrs.field(default="ask", validator=_host_request_mode)
    #: ``elicitation/create`` (the server wants to ask the user), the same three modes
    elicitation: str = attrs.field(default="ask", validator=_host_request_mode)
    #: sent with ``logging/setLevel`` after initialize (to a server that declares logging):
    #: debug, info, notice, warning, error, critical, alert or emergency
    log_level: str | None = attrs.field(default=None, validator=_log_level)
    #: "auto" (``server/discover``, falling back to ``initialize``) or "2025-11-25" (the
    #: ``initialize`` handshake only); see :data:`PROTOCOLS`
    protocol: str = attrs.field(default="auto", validator=_protocol)
    # -- OAuth (HTTP servers) ------------------------------------------------------------
    #: ``kairox mcp login`` settings; tokens are stored under ``$KAIROX_HOME/mcp-oauth/``
    oauth: OAuthSettings | None = None

    def __attrs_post_init__(self) -> None:
        if not self.type:
            object.__setattr__(self, "type", "streamable_http" if self.url and not self.command else "stdio")
        if self.type == "stdio":
            if not self.command:
                raise ConfigError('a stdio server needs `command` (or set `type = "sse"` / `"streamable_http"`)')
            if self.url:
                raise ConfigError("`url` is for sse/streamable_http servers; a stdio server runs `command`")
        elif self.type in REMOTE_TRANSPORTS:
            if not self.url:
                raise ConfigError(f"a {self.type} server needs `url`")
            if self.command:
                raise ConfigError(f"`command` is for stdio servers; a {self.type} server connects to `url`")
            scheme = urllib.parse.urlsplit(self.url).scheme
            if scheme not in ("http", "https"):
                raise ConfigError(f"expected an http:// or https:// URL, got scheme {scheme!r}", path="url")
        if self.tool_prefix is not None and not self.tool_prefix.strip():
            raise ConfigError("expected a non-empty prefix", path="tool_prefix")

    def __repr__(self) -> str:  # never show env or header values (tracebacks, logs, test output)
        fields = ", ".join(f"{k}={v!r}" for k, v in redact_config(self).items())
        return f"McpServerConfig({fields})"

    # -- effective values ------------------------------------------------------------
    @property
    def transport(self) -> str:
        return self.type

    @property
    def oauth_settings(self) -> OAuthSettings:
        """``oauth``, or the defaults (dynamic registration, any free redirect port)."""
        return self.oauth or OAuthSettings()

    @property
    def startup_timeout_s(self) -> float:
        return self.startup_timeout or self.startup_timeout_sec or DEFAULT_STARTUP_TIMEOUT

    @property
    def tool_timeout_s(self) -> float:
        return self.tool_timeout or self.tool_timeout_sec or DEFAULT_TOOL_TIMEOUT

    def resolve_headers(self, env: Mapping[str, str]) -> dict[str, str]:
        """Every HTTP header to send: ``headers``, ``http_headers``, ``env_http_headers``
        (looked up in ``env``) and ``Authorization: Bearer`` from ``api_key_env`` /
        ``bearer_token_env_var``.

        Raises :class:`ConfigError` naming the variable (never its value) when a
        variable is unset.
        """
        out: dict[str, str] = {**self.headers, **self.http_headers}
        for header, var in self.env_http_headers.items():
            value = env.get(var)
            if value is None:
                raise ConfigError(
                    f"environment variable {var} (for header {header}) is not set", path="env_http_headers"
                )
            out[header] = value
        for field in ("api_key_env", "bearer_token_env_var"):
            var = getattr(self, field)
            if not var:
                continue
            token = env.get(var)
            if not token:
                raise ConfigError(f"environment variable {var} (the bearer token) is not set", path=field)
            out = {k: v for k, v in out.items() if k.lower() != "authorization"}
            out["Authorization"] = f"Bearer {token}"
        return out

    def tool_enabled(self, name: str) -> bool:
        """``enabled_tools`` (when set) is an allow-list; ``disabled_tools`` always wins."""
        if name in self.disabled_tools:
            return False
        return self.enabled_tools is None or name in self.enabled_tools


@attrs.frozen
class ServerDefinition:
    """A configured server and where it came from."""

    name: str
    config: McpServerConfig
    #: the file that declared it ("" when added in code)
    source: str = ""
    #: "kairox.toml", ".mcp.json", "philont", "plugin:<name>" or "code"
    origin: str = "kairox.toml"


def redact_config(config: McpServerConfig) -> dict[str, Any]:
    """The entry as a dict safe to print (``kairox mcp list``): env and header values,
    secret-looking keys and URL secrets are hidden; defaults are left out."""
    data: dict[str, Any] = {}
    for a in attrs.fields(McpServerConfig):
        value = getattr(config, a.name)
        factory = getattr(a.default, "factory", None)
        default = factory() if callable(factory) else a.default
        if value != default:
            data[a.name] = value
    data["type"] = config.type
    if config.url:
        data["url"] = redact_url(config.url)
    for key in ("domain", "capability"):
        if data.get(key) is not None:
            data[key] = str(data[key])
    if data.get("oauth") is not None:
        data["oauth"] = attrs.asdict(data["oauth"])
    out: dict[str, Any] = redact(data)
    return out
