"""The ``[serve]`` section of ``kairox.toml``: what ``kairox serve`` exposes and advertises.

.. code-block:: toml

    [serve]
    name = "kairox"                 # the server name MCP clients see
    version = "1.0.0"               # the version they see (default: kairox-serve's)
    instructions = "Use fs_read ..."  # sent in the initialize result
    tools = ["*"]                   # exported names or canonical ids (fnmatch globs) to expose
    deny_tools = ["shell_*"]        # never exposed; a deny wins over every allow
    prompts = true                  # enabled skills as MCP prompts
    resources = true                # the skills' files as MCP resources
    skills = ["*"]                  # which skills (globs on the skill name)
    deny_skills = []
    max_listens = 1024              # open subscriptions/listen streams, all clients together
    max_listens_per_session = 8     # ... of one client session (stdio; where a session is known)
    max_held_calls = 64             # 2026-07-28 calls held while their backend waits for the client
    held_call_timeout = 300         # seconds a held call waits for its client's retry, then is cancelled
    header_timeout = 10             # --http: seconds a connection has to send a request's headers
    body_timeout = 30               # --http: seconds a request has to send its body, after its headers
    max_connections = 256           # --http: open connections (the oldest waiting for headers makes room)
    max_sessions = 256              # --http: live MCP sessions (stateful, handshake era)
    session_idle_timeout = 1800     # --http: seconds a session with no request in flight lives on

    [serve.auth]                    # --http: OAuth 2.1 resource server (instead of --token-env)
    issuer = "https://idp.example.com/"
    jwks_url = "https://idp.example.com/.well-known/jwks.json"   # or jwks_file = "/etc/kairox/jwks.json"
    audience = "kairox-gateway"     # accepted besides `resource` (RFC 8707)
    resource = "https://gw.example.com/mcp"  # this gateway's public URL (default: http://HOST:PORT/mcp)
    required_scopes = ["mcp"]

    [serve.principals]              # what each principal may see and call (narrowing only)
    group_claim = "groups"
    unmatched = "allow"             # "deny": a principal no rule matches sees nothing
    [[serve.principals.rules]]
    groups = ["contractors"]        # or subjects = [...], scopes = [...]
    deny_tools = ["shell_*"]

    [serve.audit]                   # one JSON line per call
    file = "/var/log/kairox/audit.jsonl"   # or "-": standard output (--http only)
    arguments = false               # true: the arguments themselves, not their SHA-256

    [serve.limits]                  # per principal, per replica (all replicas with [serve.state])
    rate = 60                       # calls ...
    per = 60                        # ... per this many seconds (a token bucket)
    burst = 10                      # calls at once beyond the rate (default: rate)
    concurrent = 8                  # calls in flight at once
    [[serve.limits.rules]]          # the first rule that matches a principal sets its limits
    subjects = ["ci-bot"]           # or groups = [...], scopes = [...]
    rate = 600

    [serve.state]                   # what replicas share (--http --stateless behind a load balancer)
    redis = "redis://:PASSWORD@redis.internal:6379/0"   # limits counted, held calls found there (redis-py)
    prefix = "kairox:"              # the keys' prefix (several gateways on one Redis)
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import attrs

from kairox import ConfigError
from kairox.files import glob_match

__all__ = [
    "AuditConfig",
    "AuthConfig",
    "LimitRule",
    "LimitsConfig",
    "PrincipalRule",
    "PrincipalsConfig",
    "ServeConfig",
    "StateConfig",
    "matches",
]

#: a glob longer than this is refused (a config typo, or a pattern built to be slow)
MAX_PATTERN = 256


def _name(_inst: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value.strip():
        raise ConfigError("must not be empty", path=attribute.name)
    if len(value) > 128:
        raise ConfigError("is longer than 128 characters", path=attribute.name)


def _patterns(_inst: Any, attribute: attrs.Attribute[Any], value: list[str]) -> None:
    for i, pattern in enumerate(value):
        if not pattern:
            raise ConfigError("an empty pattern matches nothing", path=f"{attribute.name}[{i}]")
        if len(pattern) > MAX_PATTERN:
            raise ConfigError(f"a pattern is at most {MAX_PATTERN} characters", path=f"{attribute.name}[{i}]")


#: the most any count limit of ``[serve]`` may allow (listen streams, held calls, connections, sessions)
MAX_LISTENS = 100_000


def _count(_inst: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError("expected a whole number", path=attribute.name)
    if not 1 <= value <= MAX_LISTENS:
        raise ConfigError(f"must be between 1 and {MAX_LISTENS} (got {value})", path=attribute.name)


#: the longest a held call may wait for its client (a day)
MAX_HELD_TIMEOUT = 86_400.0


def _seconds(most: float) -> Any:
    """A validator of a number of seconds, more than 0 and at most ``most``."""

    def check(_inst: Any, attribute: attrs.Attribute[Any], value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError("expected a number of seconds", path=attribute.name)
        if not 0 < value <= most:  # NaN fails this too
            raise ConfigError(f"must be more than 0 and at most {most:g} seconds (got {value:g})", path=attribute.name)

    return check


_timeout = _seconds(MAX_HELD_TIMEOUT)
#: the longest a client may take to send a request's headers or body (an hour)
MAX_READ_TIMEOUT = 3_600.0
_read_timeout = _seconds(MAX_READ_TIMEOUT)


def _url(_inst: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is None:
        return
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc or parts.fragment or len(value) > 2048:
        raise ConfigError(f"expected an http(s) URL without a fragment (got {value[:80]!r})", path=attribute.name)


def _absolute_file(_inst: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is None or (value == "-" and attribute.name == "file"):
        return
    if not value.strip() or not os.path.isabs(os.path.expanduser(value)):
        raise ConfigError(f"expected an absolute path (or ~/...), got {value!r}", path=attribute.name)


def _names(_inst: Any, attribute: attrs.Attribute[Any], value: list[str]) -> None:
    for i, name in enumerate(value):
        if not name or len(name) > 256 or any(c.isspace() for c in name):
            raise ConfigError(
                "expected a non-empty name of at most 256 characters, no spaces", path=f"{attribute.name}[{i}]"
            )


#: the most clock skew ``leeway`` may allow (seconds)
MAX_LEEWAY = 300.0


@attrs.frozen
class AuthConfig:
    """``[serve.auth]``: the gateway as an OAuth 2.1 resource server. Tokens are JWTs from
    ``issuer``, signed by a key of the JWKS at ``jwks_url`` or in ``jwks_file`` (one of the
    two), whose ``aud`` names ``resource`` (the gateway's URL, RFC 8707) or ``audience``,
    and whose scopes include ``required_scopes``."""

    issuer: str = attrs.field(validator=_url)
    jwks_url: str | None = attrs.field(default=None, validator=_url)
    jwks_file: str | None = attrs.field(default=None, validator=_absolute_file)
    audience: str | None = None
    resource: str | None = attrs.field(default=None, validator=_url)
    required_scopes: list[str] = attrs.field(factory=list, validator=_names)
    #: seconds of clock skew allowed on ``exp`` and ``nbf``
    leeway: float = attrs.field(default=30.0, validator=_seconds(MAX_LEEWAY))
    #: seconds a JWKS fetched from ``jwks_url`` is kept, and a fetch may take
    jwks_cache: float = attrs.field(default=300.0, validator=_seconds(86_400.0))
    jwks_timeout: float = attrs.field(default=5.0, validator=_seconds(60.0))

    def __attrs_post_init__(self) -> None:
        if (self.jwks_url is None) == (self.jwks_file is None):
            raise ConfigError("set exactly one of jwks_url and jwks_file", path="jwks_url")
        if self.audience is not None and not self.audience.strip():
            raise ConfigError("must not be empty", path="audience")


@attrs.frozen
class PrincipalRule:
    """A rule of ``[serve.principals]``: it applies to a principal whose subject is one of
    ``subjects``, or who is in one of ``groups``, or holds one of ``scopes``; what it
    allows (``tools``, ``skills``) minus what it denies (``deny_tools``, ``deny_skills``)
    is all that principal may see and call of what ``[serve]`` exposes."""

    subjects: list[str] = attrs.field(factory=list, validator=_names)
    groups: list[str] = attrs.field(factory=list, validator=_names)
    scopes: list[str] = attrs.field(factory=list, validator=_names)
    tools: list[str] = attrs.field(factory=lambda: ["*"], validator=_patterns)
    deny_tools: list[str] = attrs.field(factory=list, validator=_patterns)
    skills: list[str] = attrs.field(factory=lambda: ["*"], validator=_patterns)
    deny_skills: list[str] = attrs.field(factory=list, validator=_patterns)

    def __attrs_post_init__(self) -> None:
        if not (self.subjects or self.groups or self.scopes):
            raise ConfigError("a rule needs subjects, groups or scopes to match", path="subjects")


@attrs.frozen
class PrincipalsConfig:
    """``[serve.principals]``: every rule that matches a principal narrows what it may see
    and call (they all must allow a tool); ``unmatched`` says what a principal no rule
    matches gets: ``"allow"`` what ``[serve]`` exposes, ``"deny"`` nothing."""

    group_claim: str = attrs.field(default="groups", validator=_name)
    unmatched: str = attrs.field(default="allow", validator=attrs.validators.in_(("allow", "deny")))
    rules: list[PrincipalRule] = attrs.field(factory=list)

    @property
    def narrows(self) -> bool:
        """Whether any principal may see less than ``[serve]`` exposes."""
        return bool(self.rules) or self.unmatched == "deny"


#: the longest audit line (bytes) ``max_line`` may allow
MAX_AUDIT_LINE = 1_048_576


@attrs.frozen
class AuditConfig:
    """``[serve.audit]``: one JSON line per tool call to ``file`` (``"-"``: standard
    output), arguments as their SHA-256 unless ``arguments``; a line is at most
    ``max_line`` bytes (longer fields are cut, and the line says so)."""

    file: str = attrs.field(validator=_absolute_file)
    arguments: bool = False
    max_line: int = attrs.field(
        default=16_384, validator=attrs.validators.and_(attrs.validators.ge(1024), attrs.validators.le(MAX_AUDIT_LINE))
    )


def _optional_count(_inst: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None:
        _count(_inst, attribute, value)


#: the longest window ``per`` may name (a day)
MAX_PER = 86_400.0


def _optional_per(_inst: Any, attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None:
        _seconds(MAX_PER)(_inst, attribute, value)


@attrs.frozen
class LimitRule:
    """A rule of ``[serve.limits]``: it applies to a principal whose subject is one of
    ``subjects``, or who is in one of ``groups``, or holds one of ``scopes`` (as a rule of
    ``[serve.principals]`` does), and sets that principal's ``rate``, ``per``, ``burst`` and
    ``concurrent`` in place of the section's (those it leaves out stay the section's)."""

    subjects: list[str] = attrs.field(factory=list, validator=_names)
    groups: list[str] = attrs.field(factory=list, validator=_names)
    scopes: list[str] = attrs.field(factory=list, validator=_names)
    rate: int | None = attrs.field(default=None, validator=_optional_count)
    per: float | None = attrs.field(default=None, validator=_optional_per)
    burst: int | None = attrs.field(default=None, validator=_optional_count)
    concurrent: int | None = attrs.field(default=None, validator=_optional_count)

    def __attrs_post_init__(self) -> None:
        if not (self.subjects or self.groups or self.scopes):
            raise ConfigError("a rule needs subjects, groups or scopes to match", path="subjects")
        if self.rate is None and self.per is None and self.burst is None and self.concurrent is None:
            raise ConfigError("a rule sets none of rate, per, burst and concurrent", path="rate")


@attrs.frozen
class LimitsConfig:
    """``[serve.limits]``: how much each principal may call (counted in this process, or in
    ``[serve.state]``'s Redis).
    ``rate`` calls per ``per`` seconds (a token bucket of ``burst`` calls, default
    ``rate``) and ``concurrent`` calls in flight at once; unset, that limit does not
    apply. The first of ``rules`` that matches a principal sets its own. At most
    ``max_principals`` principals are counted at once: the least recently seen one
    without a call in flight is forgotten first (its bucket starts full again)."""

    rate: int | None = attrs.field(default=None, validator=_optional_count)
    per: float = attrs.field(default=60.0, validator=_seconds(MAX_PER))
    burst: int | None = attrs.field(default=None, validator=_optional_count)
    concurrent: int | None = attrs.field(default=None, validator=_optional_count)
    max_principals: int = attrs.field(default=10_000, validator=_count)
    rules: list[LimitRule] = attrs.field(factory=list)

    def __attrs_post_init__(self) -> None:
        if self.burst is not None and self.rate is None:
            raise ConfigError("burst needs a rate", path="burst")
        for i, rule in enumerate(self.rules):
            if rule.rate is None and self.rate is None and (rule.burst is not None or rule.per is not None):
                raise ConfigError("burst and per need a rate (the rule's or the section's)", path=f"rules[{i}].rate")
        if self.rate is None and self.concurrent is None and not self.rules:
            # an empty table is more likely a typo than a wish for no limits
            raise ConfigError("sets no limit: give rate, concurrent or rules", path="rate")


#: the URL schemes redis-py's ``from_url`` reads (TCP, TLS, a Unix socket)
REDIS_SCHEMES = ("redis", "rediss", "unix")


def _redis_url(_inst: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    # the value is never echoed: it may hold a password (the config's own display hides the
    # URL's password, an error message must not print it either)
    if not isinstance(value, str) or len(value) > 2048:
        raise ConfigError("expected a redis:// URL of at most 2048 characters", path=attribute.name)
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise ConfigError("is not a URL (not shown: it may hold a password)", path=attribute.name) from None
    if parts.scheme not in REDIS_SCHEMES or (parts.scheme != "unix" and not parts.hostname):
        raise ConfigError(
            "expected redis://[user:password@]host[:port][/db], rediss://... or unix:///path "
            "(the value is not shown: it may hold a password)",
            path=attribute.name,
        )


def _prefix(_inst: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value or len(value) > 64 or any(c.isspace() or c in "{}" for c in value):
        raise ConfigError("expected 1 to 64 characters, no blanks or braces", path=attribute.name)


@attrs.frozen
class StateConfig:
    """``[serve.state]``: what the replicas of one gateway share. ``redis``: the URL of a
    Redis server (it may hold a password: the config's display hides it) where
    ``[serve.limits]`` counts every replica's calls and held calls are found across
    replicas (a retry relayed to the replica that holds its call); ``prefix`` starts each
    key (several gateways may share one Redis); ``lease``: seconds a replica's call in
    flight, and the replica itself, count without a renewal (a dead one's lapse then)."""

    redis: str = attrs.field(validator=_redis_url, repr=False)
    prefix: str = attrs.field(default="kairox:", validator=_prefix)
    #: seconds a replica's count of a call in flight lives without being renewed (a replica
    #: that dies gives its slots back after this long)
    lease: float = attrs.field(default=30.0, validator=_seconds(3_600.0))


@attrs.frozen
class ServeConfig:
    """What the gateway exposes (``tools``/``deny_tools``, ``prompts``, ``resources``,
    ``skills``/``deny_skills``), what it calls itself (``name``, ``version``,
    ``instructions``), how many ``subscriptions/listen`` streams it keeps open
    (``max_listens`` in all, ``max_listens_per_session`` for one client session), and how
    many 2026-07-28 calls it holds while their backend waits for the client's answer
    (``max_held_calls``), for how long (``held_call_timeout``, seconds).

    Over HTTP: how long a connection may take to send a request's headers
    (``header_timeout``) and body (``body_timeout``), how many connections are open at
    once (``max_connections``), how many MCP sessions live at once (``max_sessions``) and
    how long one lives without a request (``session_idle_timeout``); see
    :mod:`kairox_serve.frontdoor`."""

    name: str = attrs.field(default="kairox", validator=_name)
    version: str = ""
    instructions: str | None = None
    tools: list[str] = attrs.field(factory=lambda: ["*"], validator=_patterns)
    deny_tools: list[str] = attrs.field(factory=list, validator=_patterns)
    prompts: bool = True
    resources: bool = True
    skills: list[str] = attrs.field(factory=lambda: ["*"], validator=_patterns)
    deny_skills: list[str] = attrs.field(factory=list, validator=_patterns)
    max_listens: int = attrs.field(default=1024, validator=_count)
    max_listens_per_session: int = attrs.field(default=8, validator=_count)
    max_held_calls: int = attrs.field(default=64, validator=_count)
    held_call_timeout: float = attrs.field(default=300.0, validator=_timeout)
    header_timeout: float = attrs.field(default=10.0, validator=_read_timeout)
    body_timeout: float = attrs.field(default=30.0, validator=_read_timeout)
    max_connections: int = attrs.field(default=256, validator=_count)
    max_sessions: int = attrs.field(default=256, validator=_count)
    session_idle_timeout: float = attrs.field(default=1800.0, validator=_timeout)
    auth: AuthConfig | None = None
    principals: PrincipalsConfig = attrs.field(factory=PrincipalsConfig)
    audit: AuditConfig | None = None
    limits: LimitsConfig | None = None
    state: StateConfig | None = None

    def exposes_tool(self, exported_name: str, tool_id: str) -> bool:
        """Whether a tool is exposed: some ``tools`` glob matches its exported name or
        canonical id, and no ``deny_tools`` glob matches either."""
        names = (exported_name, tool_id)
        return matches(self.tools, names) and not matches(self.deny_tools, names)

    def exposes_skill(self, name: str) -> bool:
        """Whether the skill ``name`` is a prompt (and its files resources)."""
        return matches(self.skills, (name,)) and not matches(self.deny_skills, (name,))


def matches(patterns: Iterable[str], names: Iterable[str]) -> bool:
    """Whether any glob of ``patterns`` matches any of ``names`` (case-sensitive fnmatch)."""
    wanted = list(names)
    return any(glob_match(name, pattern) for pattern in patterns for name in wanted)
