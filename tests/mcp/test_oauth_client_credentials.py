"""``oauth.grant = "client_credentials"`` (machine to machine, SEP-1046): the runtime gets its own
token with the configured client's secret (``client_secret_basic``/``_post``) or a
``private_key_jwt`` assertion signed with the user's key, no browser, no login; and
``grant = "identity_assertion"`` (SEP-990, enterprise-managed authorization): the single
sign-on's ID token exchanged for an ID-JAG, presented with the jwt-bearer grant. Against a
real local identity provider + authorization server + protected MCP server
(``tests/fixtures/mcp_servers/cc_server.py``)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import peers
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mcp_helpers import open_runtime
from test_oauth import _fixture_on

from kairox._types import ServerState
from kairox.errors import ConfigError, KairoxError
from kairox.ext import structure
from kairox_mcp import manager_of
from kairox_mcp.auth import LoginFailed, login, token_path
from kairox_mcp.config import McpServerConfig, OAuthSettings

pytestmark = pytest.mark.integration

WAIT = 20.0
SECRET = "cc-secret-" + "s3cr3t-value-never-shown"
ID_TOKEN = "id-token-" + "of-the-single-sign-on-never-shown"


@contextlib.contextmanager
def cc_server(tmp_path: Path, *args: str, secret: str = SECRET) -> Iterator[str]:
    """The fixture with the client ``machine`` (its secret and the identity provider's ID
    token in the fixture's environment, never its argv)."""
    port = peers.free_port()
    argv = [*peers.fixture_server("cc_server"), "--port", str(port), "--client-id", "machine", *args]
    saved = {k: os.environ.get(k) for k in ("CC_CLIENT_SECRET", "CC_ID_TOKEN")}
    os.environ.update({"CC_CLIENT_SECRET": secret, "CC_ID_TOKEN": ID_TOKEN})
    try:
        with _fixture_on(port, argv):
            yield f"http://127.0.0.1:{port}"
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def stats(base: str) -> dict[str, Any]:
    data: dict[str, Any] = httpx2.get(f"{base}/admin/stats", timeout=10).json()
    return data


def envs(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KAIROX_HOME": str(tmp_path / "kx"), **extra}


def entry(base: str, **oauth: Any) -> dict[str, Any]:
    settings = {"grant": "client_credentials", "client_id": "machine", "issuer": base, **oauth}
    return {"type": "http", "url": f"{base}/mcp", "startup_timeout": WAIT, "oauth": settings}


def key_pair(tmp_path: Path) -> tuple[str, Path]:
    """An EC P-256 key: its private PEM (for $KAIROX_HOME/keys/) and the public key's file."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = tmp_path / "public.pem"
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return private, public


def install_key(tmp_path: Path, pem: str) -> None:
    keys = tmp_path / "kx" / "keys"
    keys.mkdir(parents=True, exist_ok=True)
    (keys / "machine.pem").write_text(pem)


@pytest.mark.anyio
@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
async def test_runtime_gets_its_own_token_with_the_secret(tmp_path: Path, method: str, no_leftovers: None) -> None:
    env = envs(tmp_path, MACHINE_SECRET=SECRET)
    oauth = {"client_secret_env": "MACHINE_SECRET", "token_endpoint_auth_method": method}
    with cc_server(tmp_path) as base:
        async with open_runtime(tmp_path, {"s": entry(base, **oauth)}, env=env) as rt:
            assert manager_of(rt).server("s").state is ServerState.READY
            assert (await rt.call_tool("s.whoami", {})).text == "machine"
            assert stats(base)["tokens"] == [method]
            path = token_path("s", env)
            saved = json.loads(path.read_text())
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            token = saved["tokens"]["access_token"]
            assert stats(base)["seen"][-1] == hashlib.sha256(token.encode()).hexdigest()
            # the server forgets the token: the runtime asks for a new one by itself
            httpx2.post(f"{base}/admin/revoke", timeout=10).raise_for_status()
            assert (await rt.call_tool("s.whoami", {})).text == "machine"
            assert stats(base)["tokens"] == [method, method]
            assert json.loads(path.read_text())["tokens"]["access_token"] != token
        # a new runtime uses the stored token: no token request
        async with open_runtime(tmp_path, {"s": entry(base, **oauth)}, env=env) as rt:
            assert (await rt.call_tool("s.whoami", {})).text == "machine"
            assert len(stats(base)["tokens"]) == 2


@pytest.mark.anyio
async def test_private_key_jwt_signs_with_the_users_key(tmp_path: Path, no_leftovers: None) -> None:
    private, public = key_pair(tmp_path)
    install_key(tmp_path, private)
    env = envs(tmp_path)
    oauth = {
        "token_endpoint_auth_method": "private_key_jwt",
        "private_key_file": "keys/machine.pem",
        "signing_algorithm": "ES256",
    }
    with cc_server(tmp_path, "--public-key", str(public), "--alg", "ES256") as base:
        async with open_runtime(tmp_path, {"s": entry(base, **oauth)}, env=env) as rt:
            assert (await rt.call_tool("s.whoami", {})).text == "machine"
        assert stats(base)["tokens"] == ["private_key_jwt"]
        # kairox mcp login: a new token now, no browser
        config: McpServerConfig = structure(entry(base, **oauth), McpServerConfig)
        await login("s", config, env, show_url=lambda _u: pytest.fail("no browser"), timeout=WAIT)
        assert stats(base)["tokens"] == ["private_key_jwt", "private_key_jwt"]

        # another key (not the registered one) is refused: the reason, not the answer's text
        (tmp_path / "other").mkdir()
        other, _ = key_pair(tmp_path / "other")
        install_key(tmp_path, other)
        with pytest.raises(LoginFailed, match="token request failed") as info:
            await login("s", config, env, show_url=lambda _u: None, timeout=WAIT)
        assert "BEGIN" not in str(info.value)


@pytest.mark.anyio
async def test_key_outside_kairox_home_is_never_read(tmp_path: Path, no_leftovers: None) -> None:
    """The attack: an entry (a trusted workspace's, say) points ``private_key_file`` at another
    key of this machine (here through a link in $KAIROX_HOME). Nothing is read or signed: the
    authorization server receives no token request, the refusal names the setting."""
    private, public = key_pair(tmp_path)
    elsewhere = tmp_path / "ssh" / "id_ecdsa"
    elsewhere.parent.mkdir()
    elsewhere.write_text(private)
    (tmp_path / "kx").mkdir()
    (tmp_path / "kx" / "link.pem").symlink_to(elsewhere)
    env = envs(tmp_path)
    jwt_oauth = {"token_endpoint_auth_method": "private_key_jwt", "signing_algorithm": "ES256"}
    for bad in (str(elsewhere), "../ssh/id_ecdsa", "~/ssh/id_ecdsa"):
        with pytest.raises(ConfigError, match="private_key_file"):
            OAuthSettings(**entry("http://x", private_key_file=bad, **jwt_oauth)["oauth"])
    with cc_server(tmp_path, "--public-key", str(public), "--alg", "ES256") as base:
        oauth = {**jwt_oauth, "private_key_file": "link.pem"}
        async with open_runtime(tmp_path, {"s": entry(base, **oauth)}, env=env) as rt:
            server = manager_of(rt).server("s")
            assert server.state is ServerState.FAILED
            assert "oauth.private_key_file link.pem" in server.detail
            assert "BEGIN" not in server.detail
        assert stats(base)["tokens"] == [] and stats(base)["refused"] == 0


def test_config_refuses_what_cannot_work() -> None:
    """Fail closed: each half-configured grant is refused naming its field."""
    cases = {
        "token_endpoint_auth_method": {"token_endpoint_auth_method": "private_key_jwt", "private_key_file": "k.pem"},
        "issuer": {"grant": "client_credentials", "client_id": "m", "client_secret_env": "X"},
        "client_id": {"grant": "client_credentials", "issuer": "https://as", "client_secret_env": "X"},
        "client_secret_env": {"grant": "client_credentials", "client_id": "m", "issuer": "https://as"},
        "private_key_file": {
            "grant": "client_credentials",
            "client_id": "m",
            "issuer": "https://as",
            "token_endpoint_auth_method": "private_key_jwt",
        },
        "idp_token_endpoint": {
            "grant": "identity_assertion",
            "client_id": "m",
            "client_secret_env": "X",
            "issuer": "https://as",
            "id_token_env": "T",
        },
        "id_token_env": {
            "grant": "identity_assertion",
            "client_id": "m",
            "client_secret_env": "X",
            "issuer": "https://as",
            "idp_token_endpoint": "https://idp/token",
        },
        "grant": {"grant": "password"},
        "signing_algorithm": {"signing_algorithm": "HS256"},
    }
    for field, settings in cases.items():
        with pytest.raises(ConfigError) as info:
            OAuthSettings(**settings)
        assert info.value.path == field or field in str(info.value), (field, str(info.value))


class RecordedCli:
    """The real CLI (a subprocess, -vvv) on a fresh workspace and ``KAIROX_HOME`` (``home``) under
    ``tmp``, with ``secrets`` in its environment; ``outputs`` keeps every stdout and stderr. A
    secret (given here or to one run) never reaches a kairox argv."""

    def __init__(self, tmp: Path, **secrets: str) -> None:
        self.home = tmp / "kx"
        self.home.mkdir()
        (tmp / "ws").mkdir()
        self.env = {**os.environ, "KAIROX_HOME": str(self.home), "PYTHONUNBUFFERED": "1", **secrets}
        self.secrets = list(secrets.values())
        self.argv = [*peers.fixture_server("oauth_cli"), "-vvv", "-w", str(tmp / "ws")]
        self.outputs: list[str] = []

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        argv = [*self.argv, *args]
        assert not any(secret in " ".join(argv) for secret in [*self.secrets, *extra.values()])
        done = subprocess.run(argv, capture_output=True, text=True, env={**self.env, **extra}, timeout=60)
        self.outputs.extend([done.stdout, done.stderr])
        return done


def test_no_secret_in_any_output(tmp_path: Path, no_leftovers: None) -> None:
    """The real CLI (a subprocess, -vvv): status, a tool call, a login with the right secret and
    one with a wrong one against an authorization server that quotes what it was given. The
    secret (given in the environment), the access token and what the server quoted appear on no
    stdout or stderr, and no kairox process gets the secret in its argv."""
    wrong = "wrong-" + "secret-quoted-back-by-the-server"
    cli = RecordedCli(tmp_path, MACHINE_SECRET=SECRET)
    run, outputs = cli.run, cli.outputs
    with cc_server(tmp_path, "--echo-errors") as base:
        (cli.home / "kairox.toml").write_text(
            f'[mcp_servers.s]\ntype = "http"\nurl = "{base}/mcp"\ntrust_annotations = true\n'
            f'oauth = {{ grant = "client_credentials", client_id = "machine", issuer = "{base}", '
            'client_secret_env = "MACHINE_SECRET" }\n'
        )
        assert "ready" in run("mcp", "status").stdout
        call = run("tools", "call", "s.whoami")
        assert call.returncode == 0 and "machine" in call.stdout
        login_ok = run("mcp", "login", "s")
        assert login_ok.returncode == 0, outputs
        token = json.loads(token_path("s", cli.env).read_text())["tokens"]["access_token"]
        failed = run("mcp", "login", "s", MACHINE_SECRET=wrong)
        assert failed.returncode != 0 and "token request failed" in failed.stderr, outputs
        status = run("mcp", "status", MACHINE_SECRET=wrong)
        assert stats(base)["refused"] >= 1
    text = "\n".join(outputs)
    assert SECRET not in text and wrong not in text and token not in text
    assert "machine" in text  # the outputs were read (a call answered)
    assert status.returncode in (0, 1)


def test_settings_without_a_secret_variable_name_it(tmp_path: Path) -> None:
    """An unset secret variable is refused naming the variable, before anything is sent."""
    import anyio

    config: McpServerConfig = structure(
        entry("http://127.0.0.1:9", client_secret_env="MACHINE_SECRET"), McpServerConfig
    )
    with pytest.raises(KairoxError, match="MACHINE_SECRET"):
        anyio.run(lambda: login("s", config, envs(tmp_path), show_url=lambda _u: None, timeout=1))


def assertion_entry(base: str) -> dict[str, Any]:
    server = entry(
        base,
        grant="identity_assertion",
        client_secret_env="MACHINE_SECRET",
        idp_token_endpoint=f"{base}/idp/token",
        idp_client_id="kairox",
        id_token_env="SSO_ID_TOKEN",
    )
    server["oauth"]["issuer"] = f"{base}/"  # exactly as its metadata says (the SDK compares strictly)
    return server


@pytest.mark.anyio
async def test_identity_assertion_trades_the_sso_id_token(tmp_path: Path, no_leftovers: None) -> None:
    env = envs(tmp_path, MACHINE_SECRET=SECRET, SSO_ID_TOKEN=ID_TOKEN)
    with cc_server(tmp_path, "--identity-assertion") as base:
        async with open_runtime(tmp_path, {"s": assertion_entry(base)}, env=env) as rt:
            assert (await rt.call_tool("s.whoami", {})).text == "machine"
        assert stats(base)["exchanges"] == 1
        assert stats(base)["tokens"] == ["jwt_bearer+client_secret_basic"]
        saved = json.loads(token_path("s", env).read_text())
        assert saved["tokens"]["access_token"].startswith("cc-")


def test_identity_assertion_no_secret_in_any_output(tmp_path: Path, no_leftovers: None) -> None:
    """The real CLI (-vvv): a call with the right ID token, then a login with a wrong one that
    the identity provider quotes back. Neither ID token, the client secret nor the access token
    appears on any stdout or stderr; the refusal names the identity provider and the status."""
    wrong = "wrong-id-token-" + "quoted-back-by-the-idp"
    cli = RecordedCli(tmp_path, MACHINE_SECRET=SECRET, SSO_ID_TOKEN=ID_TOKEN)
    run, outputs = cli.run, cli.outputs
    with cc_server(tmp_path, "--identity-assertion", "--echo-errors") as base:
        oauth = assertion_entry(base)["oauth"]
        inline = ", ".join(f"{k} = {json.dumps(v)}" for k, v in oauth.items())
        (cli.home / "kairox.toml").write_text(
            f'[mcp_servers.s]\ntype = "http"\nurl = "{base}/mcp"\ntrust_annotations = true\noauth = {{ {inline} }}\n'
        )
        call = run("tools", "call", "s.whoami")
        assert call.returncode == 0 and "machine" in call.stdout, outputs
        token = json.loads(token_path("s", cli.env).read_text())["tokens"]["access_token"]
        failed = run("mcp", "login", "s", SSO_ID_TOKEN=wrong)
        assert failed.returncode != 0 and "refused the token exchange (HTTP 400)" in failed.stderr, outputs
        assert stats(base)["refused"] == 1
    text = "\n".join(outputs)
    for secret in (ID_TOKEN, wrong, SECRET, token):
        assert secret not in text
