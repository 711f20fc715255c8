"""``[serve.auth]``, ``[serve.principals]`` and ``[serve.audit]`` against ``kairox serve --http`` as a
real process: a local identity provider built here (an RSA key made with ``cryptography``, its
JWKS in a file and served on 127.0.0.1), tokens it signs, forged ones, raw HTTP for the
refusals and the SDK's client for the calls."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from mcp.shared.exceptions import MCPError
from serve_helpers import ACCEPT, INIT, assert_names_file_and_field, connect, make_workspace, serve_http
from test_stdio import Answers, text_of

from kairox_serve.config import AuthConfig
from kairox_serve.identity import MAX_JWKS_BYTES, BadToken, TokenVerifier

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]

ISSUER = "https://idp.test.example/"
KID = "test-key-1"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Idp:
    """A local identity provider: an RSA signing key and its JWKS (plus an EC key of a stranger)."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.stranger = ec.generate_private_key(ec.SECP256R1())
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        self.jwks = {"keys": [{**jwk, "kid": KID, "alg": "RS256", "use": "sig"}]}
        self.public_pem = self.key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def claims(self, audience: str, **extra: Any) -> dict[str, Any]:
        now = int(time.time())
        return {"iss": ISSUER, "aud": audience, "sub": "alice", "iat": now, "exp": now + 600, "scope": "mcp", **extra}

    def token(self, audience: str, **extra: Any) -> str:
        return jwt.encode(self.claims(audience, **extra), self.key, algorithm="RS256", headers={"kid": KID})


def _forged(header: dict[str, Any], claims: dict[str, Any], sign: Any) -> str:
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    return f"{signing_input}.{_b64(sign(signing_input.encode()))}"


def bad_tokens(idp: Idp, audience: str) -> dict[str, tuple[str, int, str]]:
    """Each attack: (token, the status it must get, the error its challenge must name)."""
    valid = idp.token(audience)
    head, _payload, signature = valid.split(".")
    as_admin = _b64(json.dumps(idp.claims(audience, sub="admin", scope="mcp admin")).encode())
    return {
        "expired": (
            idp.token(audience, exp=int(time.time()) - 3600, iat=int(time.time()) - 7200),
            401,
            "invalid_token",
        ),
        "foreign issuer": (idp.token(audience, iss="https://evil.example/"), 401, "invalid_token"),
        "wrong audience": (idp.token(audience, aud="https://other-resource.example/mcp"), 401, "invalid_token"),
        # the payload changed, the signature kept: an elevated subject and scope
        "tampered payload": (f"{head}.{as_admin}.{signature}", 401, "invalid_token"),
        # signed by a key that is not the issuer's, under the issuer's kid
        "stranger's key": (
            jwt.encode(idp.claims(audience), idp.stranger, algorithm="ES256", headers={"kid": KID}),
            401,
            "invalid_token",
        ),
        "alg none": (
            _forged({"alg": "none", "typ": "JWT", "kid": KID}, idp.claims(audience), lambda _m: b""),
            401,
            "invalid_token",
        ),
        # the classic confusion: HMAC keyed with the (public) RSA key
        "HS256 with the public key": (
            _forged(
                {"alg": "HS256", "typ": "JWT", "kid": KID},
                idp.claims(audience),
                lambda m: hmac.new(idp.public_pem, m, hashlib.sha256).digest(),
            ),
            401,
            "invalid_token",
        ),
        "no exp": (
            jwt.encode(
                {k: v for k, v in idp.claims(audience).items() if k != "exp"},
                idp.key,
                algorithm="RS256",
                headers={"kid": KID},
            ),
            401,
            "invalid_token",
        ),
        "missing scope": (idp.token(audience, scope="read"), 403, "insufficient_scope"),
    }


PRINCIPALS = """
[serve.principals]
group_claim = "groups"
[[serve.principals.rules]]
subjects = ["bob"]
deny_tools = ["wb_echo"]
[[serve.principals.rules]]
groups = ["no-skills"]
skills = []
"""


def auth_config(jwks: str, audit: Path, *, source: str = "jwks_file") -> str:
    return (
        f'\n[serve.auth]\nissuer = "{ISSUER}"\n{source} = "{jwks}"\nrequired_scopes = ["mcp"]\n'
        f'\n[serve.audit]\nfile = "{audit}"\n{PRINCIPALS}'
    )


@pytest.fixture(scope="module")
def idp() -> Idp:
    return Idp()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, idp: Idp) -> Iterator[tuple[str, Path]]:
    """``kairox serve --http`` with ``[serve.auth]`` (a JWKS file of the user's), the principals'
    rules and an audit file; yields (endpoint URL, audit file)."""
    tmp = tmp_path_factory.mktemp("identity")
    jwks = tmp / "jwks.json"
    jwks.write_text(json.dumps(idp.jwks), encoding="utf-8")
    audit = tmp / "audit.jsonl"
    ws = make_workspace(tmp, user_config=auth_config(str(jwks), audit))
    with serve_http(ws) as (url, _proc):
        yield url, audit


async def test_protected_resource_metadata(gateway: tuple[str, Path]) -> None:
    url, _ = gateway
    base = url.removesuffix("/mcp")
    async with httpx2.AsyncClient(timeout=30) as http:
        for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
            response = await http.get(base + path)
            assert response.status_code == 200, response.text
            document = response.json()
            assert document["resource"] == url
            assert document["authorization_servers"] == [ISSUER]
            assert document["scopes_supported"] == ["mcp"]
        # without a token: 401, and where to learn how to get one (MCP authorization, RFC 9728)
        response = await http.post(url, json=INIT, headers=ACCEPT)
        assert response.status_code == 401
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        assert f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"' in challenge


@pytest.mark.parametrize(
    "attack",
    [
        "expired",
        "foreign issuer",
        "wrong audience",
        "tampered payload",
        "stranger's key",
        "alg none",
        "HS256 with the public key",
        "no exp",
        "missing scope",
    ],
)
async def test_forged_and_unfit_tokens_are_refused(gateway: tuple[str, Path], idp: Idp, attack: str) -> None:
    url, _audit = gateway
    token, status, error = bad_tokens(idp, url)[attack]
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {token}"})
    assert response.status_code == status, (attack, response.text)
    challenge = response.headers["www-authenticate"]
    assert f'error="{error}"' in challenge and "resource_metadata=" in challenge
    assert "mcp-session-id" not in response.headers  # no MCP session was made for it


async def test_a_valid_token_calls_as_its_subject(gateway: tuple[str, Path], idp: Idp) -> None:
    url, audit = gateway
    async with connect(url, token=idp.token(url), mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"wb_echo", "fs_read"} <= names
        result = await client.call_tool("wb_echo", {"message": "secret-argument-value"})
        assert text_of(result) == "secret-argument-value"
    lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    mine = [r for r in lines if r["principal"] == "alice" and r["name"] == "wb_echo"]
    assert mine, lines
    record = mine[-1]
    assert {"time", "principal", "via", "tool", "decision", "decided_by", "duration_ms", "outcome"} <= set(record)
    assert record["via"] == "jwt" and record["tool"] == "wb.echo" and record["call_id"]
    assert (record["decision"], record["decided_by"], record["outcome"]) == ("allow", "policy", "ok")
    canonical = json.dumps({"message": "secret-argument-value"}, sort_keys=True, separators=(",", ":"))
    assert record["arguments_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
    # the arguments themselves are nowhere in the audit file
    assert "secret-argument-value" not in audit.read_text(encoding="utf-8")


async def test_a_principal_denied_a_tool_can_neither_see_nor_call_it(gateway: tuple[str, Path], idp: Idp) -> None:
    url, audit = gateway
    async with connect(url, token=idp.token(url, sub="bob"), mode="legacy") as bob:
        names = {t.name for t in (await bob.list_tools()).tools}
        assert "wb_echo" not in names and "fs_read" in names
        with pytest.raises(Exception, match="principal 'bob' may not call wb_echo"):
            await bob.call_tool("wb_echo", {"message": "bob was here"})
        # the workspace policy still decides under the rules: wb.env stays denied for bob
        assert (await bob.call_tool("wb_env", {})).is_error
    async with connect(url, token=idp.token(url, sub="carol"), mode="legacy") as carol:
        assert "wb_echo" in {t.name for t in (await carol.list_tools()).tools}
        assert text_of(await carol.call_tool("wb_echo", {"message": "hi"})) == "hi"
    refused = [
        json.loads(line)
        for line in audit.read_text(encoding="utf-8").splitlines()
        if '"principal":"bob"' in line and '"wb.echo"' in line
    ]
    assert refused and (refused[-1]["decision"], refused[-1]["decided_by"]) == ("deny", "principals")
    assert refused[-1]["outcome"] == "denied"


async def test_an_approval_names_the_principal_and_who_decided(gateway: tuple[str, Path], idp: Idp) -> None:
    """wb.cwd asks: the question names the caller, and the audit says the client decided."""
    url, audit = gateway
    for decision, outcome in (("once", "ok"), ("deny", "denied")):
        answers = Answers(decision)
        async with connect(url, token=idp.token(url, sub="frank"), mode="legacy", elicitation_callback=answers) as c:
            await c.call_tool("wb_cwd", {})
        assert len(answers.asked) == 1 and answers.asked[0].endswith("called as: frank")
        records = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
        record = [r for r in records if r["principal"] == "frank"][-1]
        assert (record["tool"], record["decided_by"], record["outcome"]) == ("wb.cwd", "client", outcome)
        assert record["decision"] == ("allow" if decision == "once" else "deny")


async def test_a_group_rule_narrows_skills(gateway: tuple[str, Path], idp: Idp) -> None:
    url, _ = gateway
    async with connect(url, token=idp.token(url, sub="dave", groups=["no-skills"]), mode="legacy") as dave:
        assert [p.name for p in (await dave.list_prompts()).prompts] == []
        with pytest.raises(Exception, match="greet"):
            await dave.get_prompt("greet", {"who": "x"})
    async with connect(url, token=idp.token(url, sub="erin"), mode="legacy") as erin:
        assert [p.name for p in (await erin.list_prompts()).prompts] == ["greet"]


async def test_an_mcp_session_is_its_principals_own(gateway: tuple[str, Path], idp: Idp) -> None:
    """Bob, holding alice's session id (seen in a log, a proxy), runs nothing in her session."""
    url, _ = gateway
    async with httpx2.AsyncClient(timeout=30) as http:
        alice = {**ACCEPT, "Authorization": f"Bearer {idp.token(url)}"}
        response = await http.post(url, json=INIT, headers=alice)
        session = response.headers["mcp-session-id"]
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(url, json=done, headers={**alice, "mcp-session-id": session})
        bob = {**ACCEPT, "Authorization": f"Bearer {idp.token(url, sub='bob')}", "mcp-session-id": session}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fs_read", "arguments": {}}}
        response = await http.post(url, json=call, headers=bob)
        assert response.status_code == 403 and "belongs to another principal" in response.text, response.text


@contextlib.contextmanager
def jwks_served(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` serving on a free 127.0.0.1 port, on a thread; yields its JWKS URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    finally:
        server.shutdown()
        server.server_close()


class _JwksHandler(http.server.BaseHTTPRequestHandler):
    body = b""
    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


async def test_jwks_from_a_url(tmp_path: Path, idp: Idp) -> None:
    """The JWKS served on 127.0.0.1: fetched once and cached, a valid token works, a stranger's does not."""

    class Handler(_JwksHandler):
        body = json.dumps(idp.jwks).encode()
        hits = 0

    with jwks_served(Handler) as jwks_url:
        ws = make_workspace(tmp_path, user_config=auth_config(jwks_url, tmp_path / "audit.jsonl", source="jwks_url"))
        with serve_http(ws) as (url, _proc):
            async with connect(url, token=idp.token(url), mode="legacy") as client:
                assert text_of(await client.call_tool("wb_echo", {"message": "via url"})) == "via url"
            token, status, _ = bad_tokens(idp, url)["stranger's key"]
            async with httpx2.AsyncClient(timeout=30) as http_client:
                response = await http_client.post(
                    url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {token}"}
                )
            assert response.status_code == status
        assert Handler.hits == 1  # cached: one fetch for every request


def _logs(folder: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in folder.glob("serve-*.log"))


async def test_a_kid_cannot_reach_the_challenge_header_or_the_log_nor_refetch_the_jwks(
    tmp_path: Path, idp: Idp
) -> None:
    """The attack, unauthenticated: tokens whose kid the JWKS lacks, one carrying CR LF and a
    forged log line. Each is a 401 with a one-line challenge; the log gets no forged line; the
    JWKS is fetched again at most once (the refetch cooldown), not once per token."""

    class Handler(_JwksHandler):
        body = json.dumps(idp.jwks).encode()
        hits = 0

    forged = "kairox serve: FORGED granted admin"
    with jwks_served(Handler) as jwks_url:
        ws = make_workspace(tmp_path, user_config=auth_config(jwks_url, tmp_path / "audit.jsonl", source="jwks_url"))
        with serve_http(ws, verbose=True) as (url, _proc):
            kids = [f"k{i}" for i in range(20)] + [f"x\r\nSet-Cookie: pwned=1\r\n\n{forged}", "\x00\x7f\u2028"]
            async with httpx2.AsyncClient(timeout=30) as http_client:
                for kid in kids:
                    token = jwt.encode(idp.claims(url), idp.key, algorithm="RS256", headers={"kid": kid})
                    response = await http_client.post(
                        url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {token}"}
                    )
                    assert response.status_code == 401, (kid, response.status_code, response.text)
                    challenge = response.headers["www-authenticate"]
                    assert "pwned" not in response.headers.get("set-cookie", "")
                    assert all(" " <= c <= "~" for c in challenge), challenge
        log = _logs(tmp_path)
        assert "refused a token" in log  # the refusals are logged ...
        assert not any(line.startswith(forged) for line in log.splitlines())  # ... each on its own line
        assert Handler.hits <= 2


async def test_a_jwt_whose_sub_is_local_is_not_the_stdio_user(tmp_path: Path, idp: Idp) -> None:
    """The attack: the config lets only the stdio user ("local") see anything (unmatched =
    "deny"); an IdP account whose sub is "local" must not be taken for it."""
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(idp.jwks), encoding="utf-8")
    config = (
        f'\n[serve.auth]\nissuer = "{ISSUER}"\njwks_file = "{jwks}"\nrequired_scopes = ["mcp"]\n'
        '\n[serve.principals]\nunmatched = "deny"\n[[serve.principals.rules]]\nsubjects = ["local", "token"]\n'
    )
    ws = make_workspace(tmp_path, user_config=config)
    with serve_http(ws) as (url, _proc):
        for sub in ("local", "token", "alice"):
            async with connect(url, token=idp.token(url, sub=sub), mode="legacy") as client:
                assert (await client.list_tools()).tools == [], sub
                with pytest.raises(MCPError, match="may not call"):
                    await client.call_tool("wb_echo", {"message": "hi"})


def test_static_token_and_auth_together_are_refused(tmp_path: Path, idp: Idp) -> None:
    from kairox_testing import KairoxHarness

    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(idp.jwks), encoding="utf-8")
    ws = make_workspace(tmp_path, user_config=auth_config(str(jwks), tmp_path / "audit.jsonl"))
    harness = KairoxHarness(ws.root, ws.home, env=ws.env(MCP_TOKEN="s3cret-token-0123456789abcdef"))
    both = harness.cli("serve", "--http", "--token-env", "MCP_TOKEN", load_entrypoints=True)
    assert both.exit_code != 0
    assert "[serve.auth] and --token-env MCP_TOKEN" in both.stderr


@pytest.mark.parametrize(
    ("section", "error"),
    [
        (
            '[serve.auth]\nissuer = "https://i.example/"\n',
            "serve.auth.jwks_url: set exactly one of jwks_url and jwks_file",
        ),
        (
            '[serve.auth]\nissuer = "https://i.example/"\njwks_url = "https://i.example/k"\njwks_file = "/k.json"\n',
            "serve.auth.jwks_url: set exactly one",
        ),
        (
            '[serve.auth]\nissuer = "https://i.example/"\njwks_file = "k.json"\n',
            "serve.auth.jwks_file: expected an absolute",
        ),
        (
            '[serve.auth]\nissuer = "ftp://i.example/"\njwks_file = "/k.json"\n',
            "serve.auth.issuer: expected an http(s) URL",
        ),
        ("[[serve.principals.rules]]\ntools = []\n", "serve.principals.rules[0].subjects: a rule needs"),
        ('[serve.principals]\nunmatched = "maybe"\n', "serve.principals.unmatched"),
        ('[serve.audit]\nfile = "/tmp/a.jsonl"\nmax_line = 10\n', "serve.audit.max_line"),
    ],
)
async def test_a_bad_section_names_its_file_and_field(tmp_path: Path, section: str, error: str) -> None:
    await assert_names_file_and_field(tmp_path, section, error)


@pytest.mark.parametrize("key", ["auth", "principals", "audit"])
async def test_a_workspace_cannot_choose_the_callers(tmp_path: Path, key: str) -> None:
    """A trusted workspace's [serve.principals] with unmatched = "allow" would undo the user's
    "deny"; its [serve.auth] would let its own identity provider's tokens in. Refused."""
    from kairox import Runtime
    from kairox_serve.runtime import BrokenServeConfig, check_serve_config

    tables = {
        "auth": '[serve.auth]\nissuer = "https://evil.example/"\njwks_file = "/tmp/evil-jwks.json"\n',
        "principals": '[serve.principals]\nunmatched = "allow"\n',
        "audit": '[serve.audit]\nfile = "/tmp/elsewhere.jsonl"\n',
    }
    ws = make_workspace(tmp_path, serve=tables[key], user_config='\n[serve.principals]\nunmatched = "deny"\n')
    async with Runtime.open(ws.root, start=False, home=ws.home) as rt:
        with pytest.raises(BrokenServeConfig, match=rf"kairox.toml: serve.{key}: is the user's to set"):
            check_serve_config(rt)


@pytest.mark.parametrize("link", ["kairox.toml", ".kairox"])
async def test_a_workspace_cannot_choose_the_callers_through_a_link_inside_it(tmp_path: Path, link: str) -> None:
    """The attack: the workspace's kairox.toml (or its .kairox folder) is a link to another file
    (folder) inside the workspace, so the file the config names is not kairox.toml itself; its
    [serve.principals] unmatched = "allow" must still be refused, not undo the user's "deny"."""
    from kairox import Runtime
    from kairox_serve.runtime import BrokenServeConfig, check_serve_config, serve_config
    from kairox_testing import trust_workspace

    ws = make_workspace(tmp_path, user_config='\n[serve.principals]\nunmatched = "deny"\n')
    widen = '\n[serve.principals]\nunmatched = "allow"\n'
    if link == "kairox.toml":
        real = ws.root / "settings.toml"
        real.write_text((ws.root / "kairox.toml").read_text() + widen)
        (ws.root / "kairox.toml").unlink()
        (ws.root / "kairox.toml").symlink_to("settings.toml")
    else:
        (ws.root / ".kairox").rename(ws.root / "conf")
        (ws.root / "conf" / "kairox.toml").write_text(widen)
        (ws.root / ".kairox").symlink_to("conf", target_is_directory=True)
    trust_workspace(ws.root, ws.home, env=ws.env())  # trusted as it is: its servers are fine
    async with Runtime.open(ws.root, start=False, home=ws.home) as rt:
        # without the check the workspace's table applies: the user's "deny" undone
        assert serve_config(rt).principals.unmatched == "allow"
        with pytest.raises(BrokenServeConfig, match=r"serve.principals: is the user's to set"):
            check_serve_config(rt)


class _HostileJwks(http.server.BaseHTTPRequestHandler):
    """Serves a valid JWKS in a hostile way: ``pad`` bytes of JSON whitespace before it, or
    ``drip`` seconds between chunks of ten bytes."""

    body = b""
    pad = 0
    drip = 0.0

    def do_GET(self) -> None:
        body = b" " * self.pad + self.body
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            for start in range(0, len(body), 10 if self.drip else len(body)):
                self.wfile.write(body[start : start + (10 if self.drip else len(body))])
                self.wfile.flush()
                time.sleep(self.drip)
        except OSError:  # the gateway hung up: what it should do
            pass

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("pad", "drip", "why"),
    [(4 * MAX_JWKS_BYTES, 0.0, "larger than"), (0, 0.1, "not read within")],
    ids=["huge", "dripped"],
)
def test_a_hostile_jwks_endpoint_costs_bounded_memory_and_time(idp: Idp, pad: int, drip: float, why: str) -> None:
    """The attack: the JWKS URL answers with a valid key set behind a megabyte of padding, or
    ten bytes at a time for seconds. PyJWKClient read all of either (its timeout is per read)
    and accepted the key; the gateway's fetch stops at MAX_JWKS_BYTES or at jwks_timeout and
    refuses the token, naming why."""

    class Handler(_HostileJwks):
        body = json.dumps(idp.jwks).encode()

    Handler.pad, Handler.drip = pad, drip
    with jwks_served(Handler) as url:
        auth = AuthConfig(issuer=ISSUER, jwks_url=url, jwks_timeout=0.5)
        verifier = TokenVerifier(auth, "https://gw.test.example/mcp", "groups", Path("/"))
        with pytest.raises(BadToken, match=why):
            verifier.verify(idp.token("https://gw.test.example/mcp"))


def test_a_fetched_jwks_verifies_and_an_unknown_kid_refetches_once_per_cooldown(idp: Idp) -> None:
    """The same endpoint, served plainly: the token verifies; tokens naming unknown keys are
    refused, and within the cooldown after a fetch fetch nothing more."""

    class Handler(_JwksHandler):
        body = json.dumps(idp.jwks).encode()
        hits = 0

    with jwks_served(Handler) as url:
        verifier = TokenVerifier(AuthConfig(issuer=ISSUER, jwks_url=url), "https://gw.test.example/mcp", "g", Path("/"))
        assert verifier.verify(idp.token("https://gw.test.example/mcp")).name == "alice"
        for kid in ("made-up-1", "made-up-2", "made-up-3"):
            token = jwt.encode(
                idp.claims("https://gw.test.example/mcp"), idp.key, algorithm="RS256", headers={"kid": kid}
            )
            with pytest.raises(BadToken, match="no key of the JWKS has kid"):
                verifier.verify(token)
        assert Handler.hits == 1  # JWKS_COOLDOWN seconds have not passed since the first fetch
