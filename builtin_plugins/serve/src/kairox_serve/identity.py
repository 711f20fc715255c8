"""Who calls: the principal of a request, from a JWT (``[serve.auth]``), the static token, or loopback.

With ``[serve.auth]`` the gateway is an OAuth 2.1 resource server (the MCP authorization
spec, 2025-11-25): it publishes its protected-resource metadata (RFC 9728) and accepts a
bearer JWT only when PyJWT verifies all of it:

- the signature, with a key of the issuer's JWKS (``jwks_url``, fetched by
  :class:`RemoteKeys`: bounded in size and time, cached, refetched for an unknown ``kid``
  at most once per cooldown; or ``jwks_file``, read once at start) chosen by the token's
  ``kid``, and only with that key's own
  asymmetric algorithm (never ``none``, never an HMAC: a public key is no secret);
- ``iss`` is ``issuer``; ``aud`` names the gateway's ``resource`` URL or ``audience``
  (RFC 8707: a token minted for another resource is not for this one);
- ``exp`` (required) and ``nbf``, with ``leeway`` seconds of clock skew;
- ``sub`` (required: it is the principal) and the ``required_scopes`` (``scope``, a
  space-separated string, or ``scp``, a list).

The static token (``--token-env``) is one user: its principal is :data:`TOKEN_PRINCIPAL`
(``"token"``). Without either, over loopback or stdio, the principal is
:data:`LOCAL_PRINCIPAL` (``"local"``).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs

from kairox import ConfigError, KairoxError
from kairox.files import Refused, Root, is_inside, read_user_file, resolve_path

from .config import AuthConfig, LimitRule, PrincipalRule, PrincipalsConfig, matches

__all__ = [
    "ASYMMETRIC",
    "LOCAL_PRINCIPAL",
    "TOKEN_PRINCIPAL",
    "BadToken",
    "Principal",
    "TokenVerifier",
    "metadata_path",
    "protected_resource_metadata",
]

#: the algorithms a token may be signed with: asymmetric only
ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "ES256K", "EdDSA"}
)
#: the most groups taken from a token's group claim, and the longest name kept
MAX_GROUPS = 256
MAX_NAME = 256
#: the largest JWKS read, from ``jwks_file`` or ``jwks_url`` (an issuer's key set of a few
#: dozen keys is tens of kilobytes)
MAX_JWKS_BYTES = 256 * 1024
#: seconds between two fetches of ``jwks_url`` for a ``kid`` the cached key set lacks
JWKS_COOLDOWN = 30.0
WELL_KNOWN = "/.well-known/oauth-protected-resource"


@attrs.frozen
class Principal:
    """Who a call runs as: ``name`` (a token's ``sub``; ``"token"``, ``"local"``), its
    groups and scopes (from a JWT), and ``via`` (``"jwt"``, ``"token"``, ``"local"``)."""

    name: str
    via: str
    groups: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()

    def matched_by(self, rule: PrincipalRule | LimitRule) -> bool:
        """Whether ``rule`` applies to this principal: its subject, a group or a scope is named."""
        return (
            self.is_one_of(rule.subjects)
            or bool(self.groups.intersection(rule.groups))
            or bool(self.scopes.intersection(rule.scopes))
        )

    def rules(self, config: PrincipalsConfig) -> list[PrincipalRule]:
        """The rules of ``config`` that apply to this principal."""
        return [rule for rule in config.rules if self.matched_by(rule)]

    def is_one_of(self, subjects: Sequence[str]) -> bool:
        """Whether a rule's ``subjects`` name this principal. ``"local"`` and ``"token"`` name
        the gateway's own principals only: a JWT whose ``sub`` is one of them is not taken
        for the stdio user or the static token's holder (whose rules may allow more)."""
        if self.name in RESERVED and self.via != self.name:
            return False
        return self.name in subjects

    def may_use_tool(self, config: PrincipalsConfig, names: Sequence[str]) -> bool:
        """Whether every rule that applies allows the tool ``names`` (exported name, id)."""
        rules = self.rules(config)
        if not rules:
            return config.unmatched == "allow"
        return all(matches(r.tools, names) and not matches(r.deny_tools, names) for r in rules)

    def may_use_skill(self, config: PrincipalsConfig, name: str) -> bool:
        rules = self.rules(config)
        if not rules:
            return config.unmatched == "allow"
        return all(matches(r.skills, (name,)) and not matches(r.deny_skills, (name,)) for r in rules)


LOCAL_PRINCIPAL = Principal("local", "local")
TOKEN_PRINCIPAL = Principal("token", "token")
#: the names of the gateway's own principals (their ``via`` is their name)
RESERVED = frozenset({LOCAL_PRINCIPAL.name, TOKEN_PRINCIPAL.name})


class BadToken(KairoxError):
    """A bearer token refused: ``status`` 401 (``error="invalid_token"``) or 403
    (``"insufficient_scope"``), ``str()`` says why."""

    def __init__(self, reason: str, *, status: int = 401, error: str = "invalid_token") -> None:
        # the reason may quote the token (its kid): one line of printable ASCII, so nothing the
        # sender wrote starts a log line or a header of the 401 that tells it why
        super().__init__(_printable(reason))
        self.status = status
        self.error = error


def metadata_path(resource: str) -> str:
    """The path of ``resource``'s protected-resource metadata (RFC 9728 section 3.1:
    the well-known prefix, then the resource's path)."""
    path = urlsplit(resource).path.rstrip("/")
    return WELL_KNOWN + path


def protected_resource_metadata(auth: AuthConfig, resource: str) -> dict[str, Any]:
    """The RFC 9728 document of the gateway as ``resource``."""
    return {
        "resource": resource,
        "authorization_servers": [auth.issuer],
        "bearer_methods_supported": ["header"],
        "scopes_supported": list(auth.required_scopes),
        "resource_signing_alg_values_supported": sorted(ASYMMETRIC),
    }


def _jwks_file(path: str, workspace: Path) -> str:
    """The JWKS file: read contained in the workspace when it is there, else as a user's file."""
    given = Path(os.path.expanduser(path))
    try:
        if is_inside(resolve_path(path, workspace), workspace.resolve()):
            raw = Root(workspace, label="the workspace").read_bytes(given, max_bytes=MAX_JWKS_BYTES)
        else:
            raw = read_user_file(given, max_bytes=MAX_JWKS_BYTES)
        return raw.decode("utf-8")
    except Refused as exc:
        raise ConfigError(f"{path}: {exc.reason}", path="serve.auth.jwks_file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}", path="serve.auth.jwks_file") from None


class TokenVerifier:
    """Verifies the JWTs of ``[serve.auth]`` for the gateway at ``resource``."""

    def __init__(self, auth: AuthConfig, resource: str, group_claim: str, workspace: Path) -> None:
        import jwt

        self.auth = auth
        self.resource = resource
        self.group_claim = group_claim
        self.audiences = [resource] + ([auth.audience] if auth.audience else [])
        self._remote: RemoteKeys | None = None
        self._keys: dict[str | None, jwt.PyJWK] = {}
        if auth.jwks_url is not None:
            self._remote = RemoteKeys(auth.jwks_url, lifespan=auth.jwks_cache, timeout=auth.jwks_timeout)
        else:
            assert auth.jwks_file is not None
            text = _jwks_file(auth.jwks_file, workspace)
            try:
                self._keys = _key_set(text)
            except ValueError as exc:
                raise ConfigError(f"{auth.jwks_file}: not a usable JWKS: {exc}", path="serve.auth.jwks_file") from None
            if not self._keys:
                raise ConfigError(
                    f"{auth.jwks_file}: no key of an asymmetric algorithm ({', '.join(sorted(ASYMMETRIC))})",
                    path="serve.auth.jwks_file",
                )

    @property
    def fetches(self) -> bool:
        """Whether :meth:`verify` may fetch the JWKS (``jwks_url``): then it blocks."""
        return self._remote is not None

    def _key(self, token: str) -> Any:
        """The JWKS key the token names (its ``kid``); blocking when the JWKS is fetched."""
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise BadToken(f"not a JWT: {exc}") from None
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise BadToken("the token's kid is not a string")
        return _pick(self._remote.keys(kid) if self._remote is not None else self._keys, kid)

    def verify(self, token: str) -> Principal:
        """The principal of a valid ``token``; :class:`BadToken` otherwise. Blocking (it may
        fetch the JWKS): call it on a worker thread."""
        import jwt

        key = self._key(token)
        algorithm = key.algorithm_name
        if algorithm not in ASYMMETRIC:
            raise BadToken(f"the key's algorithm {algorithm} is not an asymmetric one")
        try:
            # one algorithm, the key's own: the header's alg must be it (PyJWT checks), so
            # "none" and HS256-with-the-public-key are refused before any signature is checked
            claims = jwt.decode(
                token,
                key=key,
                algorithms=[algorithm],
                audience=self.audiences,
                issuer=self.auth.issuer,
                leeway=self.auth.leeway,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as exc:
            raise BadToken(f"{type(exc).__name__}: {exc}") from None
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject or len(subject) > MAX_NAME:
            raise BadToken("the token's sub is not a name of 1 to 256 characters")
        scopes = _scopes(claims)
        missing = [s for s in self.auth.required_scopes if s not in scopes]
        if missing:
            raise BadToken(f"the token lacks the scope(s) {' '.join(missing)}", status=403, error="insufficient_scope")
        return Principal(subject, "jwt", _strings(claims.get(self.group_claim)), scopes)

    def challenge(self, metadata_url: str, refusal: BadToken | None) -> bytes:
        """A ``WWW-Authenticate`` value: where the metadata is, and why the token was refused."""
        parts = [f'resource_metadata="{metadata_url}"']
        if refusal is not None:
            parts.append(f'error="{refusal.error}"')
            # RFC 6750 section 3: error_description is printable ASCII but " and backslash
            description = _printable(str(refusal)).replace("\\", "").replace('"', "'")[:200]
            parts.append(f'error_description="{description}"')
        if self.auth.required_scopes:
            parts.append(f'scope="{" ".join(self.auth.required_scopes)}"')
        return ("Bearer " + ", ".join(parts)).encode("latin-1", "replace")


def _pick(keys: Mapping[str | None, Any], kid: str | None) -> Any:
    """The key ``kid`` names; with no ``kid``, the key set's only key."""
    if kid is None and len(keys) == 1:
        return next(iter(keys.values()))
    if kid is None:
        raise BadToken("the token names no key (kid) and the JWKS has several")
    key = keys.get(kid)
    if key is None:
        raise BadToken(f"no key of the JWKS has kid {kid!r}")
    return key


def _key_set(text: str | bytes) -> dict[str | None, Any]:
    """The asymmetric keys of a JWKS document, by ``kid``; :class:`ValueError` if it is none."""
    import jwt

    try:
        keys = jwt.PyJWKSet.from_json(text if isinstance(text, str) else text.decode("utf-8")).keys
    except (jwt.PyJWTError, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from None
    return {key.key_id: key for key in keys if key.algorithm_name in ASYMMETRIC}


class RemoteKeys:
    """The issuer's JWKS at ``jwks_url``, as :class:`TokenVerifier` needs it.

    A fetch reads at most :data:`MAX_JWKS_BYTES`, unencoded, follows no redirect, and ends
    within about ``timeout`` seconds whatever the server's pace (PyJWT's ``PyJWKClient``
    reads the whole response, and its timeout is per read). The key set is kept for
    ``lifespan`` seconds; a ``kid`` it lacks fetches it again at most once per
    :data:`JWKS_COOLDOWN`, so tokens naming made-up keys cannot make the gateway hammer the
    issuer. A fetch that fails keeps the keys already held. Thread-safe: verification runs
    on worker threads, and one fetch runs at a time."""

    def __init__(self, url: str, *, lifespan: float, timeout: float) -> None:
        self.url = url
        self.lifespan = lifespan
        self.timeout = timeout
        self._lock = threading.Lock()
        self._keys: dict[str | None, Any] = {}
        self._fetched = -math.inf  # when the keys were fetched (monotonic)
        self._tried = -math.inf  # when a fetch was last started

    def keys(self, kid: str | None) -> dict[str | None, Any]:
        """The key set, fetched first when it is stale or lacks ``kid`` (after the cooldown)."""
        with self._lock:
            now = time.monotonic()
            stale = now - self._fetched > self.lifespan
            unknown = kid is not None and kid not in self._keys and now - self._tried >= JWKS_COOLDOWN
            if stale or unknown:
                self._tried = now
                try:
                    self._keys = self._fetch()
                    self._fetched = time.monotonic()
                except ValueError as exc:
                    if not self._keys:
                        raise BadToken(f"no key for it: the issuer's JWKS could not be read: {exc}") from None
            return self._keys

    def _fetch(self) -> dict[str | None, Any]:
        import httpx2

        deadline = time.monotonic() + self.timeout
        body = bytearray()
        try:
            with httpx2.Client(timeout=self.timeout, follow_redirects=False) as client:
                headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
                with client.stream("GET", self.url, headers=headers) as response:
                    if response.status_code != 200:
                        raise ValueError(f"HTTP {response.status_code}")
                    if response.headers.get("content-encoding", "identity").lower() != "identity":
                        raise ValueError("the response is encoded (asked for identity)")
                    for chunk in response.iter_raw():
                        body += chunk
                        if len(body) > MAX_JWKS_BYTES:
                            raise ValueError(f"larger than {MAX_JWKS_BYTES} bytes")
                        if time.monotonic() > deadline:
                            raise ValueError(f"not read within {self.timeout:g} s")
        except httpx2.HTTPError as exc:
            raise ValueError(f"{type(exc).__name__}: {exc}") from None
        keys = _key_set(bytes(body))
        if not keys:
            raise ValueError(f"no key of an asymmetric algorithm ({', '.join(sorted(ASYMMETRIC))})")
        return keys


def _printable(text: str) -> str:
    """``text`` with every character but printable ASCII as ``?``, at most 500 of them."""
    return "".join(c if " " <= c <= "~" else "?" for c in text[:500])


def _strings(value: Any) -> frozenset[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return frozenset()
    return frozenset(v for v in value[:MAX_GROUPS] if isinstance(v, str) and 0 < len(v) <= MAX_NAME)


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return _strings(scope.split()[:MAX_GROUPS])
    return _strings(claims.get("scp"))
