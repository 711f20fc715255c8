"""The OAuth token file (``kairox_mcp.auth.TokenFile`` / ``FileTokenStorage``) as outside input:
whatever is in it, reading either works or fails with :class:`TokenFileError` naming the file
(never another exception, never a value from the file); and the CLI's login/logout commands
in process."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kairox._host import build_plugin_host
from kairox_cli._main import build_cli
from kairox_mcp import cli as mcp_cli
from kairox_mcp.auth import FileTokenStorage, TokenFile, TokenFileError, _challenged, token_path
from kairox_mcp.auth_cli import login, logout
from kairox_testing import strategies as testing_strategies

URL = "http://127.0.0.1:1/mcp"
SECRET = "SECRET-c2VjcmV0"

json_values = testing_strategies.json_values(max_leaves=20)
documents = st.fixed_dictionaries(
    {},
    optional={
        "version": st.sampled_from([1, 2, "1", None]) | json_values,
        "server_url": st.just(URL) | json_values,
        "tokens": json_values
        | st.fixed_dictionaries(
            {"access_token": st.just(SECRET) | json_values},
            optional={"token_type": json_values, "expires_in": json_values, "refresh_token": json_values},
        ),
        "client_info": json_values | st.fixed_dictionaries({"client_id": json_values}),
        "expires_at": json_values,
    },
)


def read_all(path: Path) -> Any:
    storage = FileTokenStorage(path, URL)

    async def go() -> Any:
        return await storage.get_tokens(), await storage.get_client_info(), storage.expires_at()

    return anyio.run(go)


def check(path: Path, content: bytes) -> None:
    path.write_bytes(content)
    try:
        read_all(path)
    except TokenFileError as exc:
        assert str(path) in str(exc)
        assert SECRET not in str(exc)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=300))
def test_any_bytes_read_or_fail_naming_the_file(tmp_path: Path, content: bytes) -> None:
    check(tmp_path / "s.json", content)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=documents | json_values)
def test_any_json_reads_or_fails_naming_the_file_never_a_value(tmp_path: Path, document: Any) -> None:
    check(tmp_path / "s.json", json.dumps(document).encode())


def test_deeply_nested_document_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(TokenFileError, match=str(path)):
        read_all(path)


def test_a_bad_token_field_names_the_field_not_the_value(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"version": 1, "server_url": URL, "tokens": {"access_token": [SECRET]}}))
    with pytest.raises(TokenFileError) as info:
        read_all(path)
    assert "tokens: access_token" in str(info.value) and SECRET not in str(info.value)


def test_round_trip_is_private_and_bound_to_the_url(tmp_path: Path) -> None:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    path = tmp_path / "home" / "mcp-oauth" / "s.json"
    storage = FileTokenStorage(path, URL)
    token = OAuthToken(access_token=SECRET, expires_in=60, refresh_token="r", scope="mcp")

    async def go() -> None:
        await storage.set_client_info(OAuthClientInformationFull(client_id="c", redirect_uris=None))
        await storage.set_tokens(token)
        assert await storage.get_tokens() == token
        info = await storage.get_client_info()
        assert info is not None and info.client_id == "c"
        other = FileTokenStorage(path, "http://127.0.0.1:2/mcp")
        assert await other.get_tokens() is None and await other.get_client_info() is None
        assert not other.has_tokens()

    anyio.run(go)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    expires = storage.expires_at()
    assert expires is not None and expires > 0
    # no temp file left behind; the (empty) lock file of the read-modify-writes stays
    assert sorted(p.name for p in path.parent.iterdir()) == ["s.json", "s.json.lock"]
    assert path.with_name("s.json.lock").read_bytes() == b""
    assert TokenFile(path).delete() and not TokenFile(path).delete()


@given(name=st.text(min_size=1, max_size=40))
def test_token_path_stays_in_its_directory(name: str) -> None:
    home = Path("/kx")
    path = token_path(name, {"KAIROX_HOME": str(home)})
    assert path.parent == home / "mcp-oauth"
    assert path.name not in (".json", "..json") and "/" not in path.name


@given(status=st.sampled_from([200, 401, 403, 404, 500]), header=st.text(max_size=60))
def test_challenge_detection_never_raises(status: int, header: str) -> None:
    import httpx2

    try:
        response = httpx2.Response(status, headers={"WWW-Authenticate": header})
    except (UnicodeEncodeError, ValueError):
        return  # not a header httpx can carry
    result = _challenged(response)  # a server's header is outside input: never raises
    if status not in (401, 403):
        assert result is False
    if status == 401 and header.lower().startswith("basic"):
        assert result is False  # another scheme: not an OAuth challenge
    if status == 403 and "insufficient_scope" not in header:
        assert result is False


def test_challenges() -> None:
    import httpx2

    bearer = 'Bearer error="invalid_token", resource_metadata="http://127.0.0.1:1/.well-known/x"'
    assert _challenged(httpx2.Response(401, headers={"WWW-Authenticate": bearer}))
    assert _challenged(httpx2.Response(401))
    assert _challenged(httpx2.Response(403, headers={"WWW-Authenticate": 'Bearer error="insufficient_scope"'}))
    assert not _challenged(httpx2.Response(403, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'}))
    assert not _challenged(httpx2.Response(401, headers={"WWW-Authenticate": 'Basic realm="x"'}))


# -- the commands, in process -------------------------------------------------------------------
@pytest.fixture
def cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "kx"
    home.mkdir()
    monkeypatch.setenv("KAIROX_HOME", str(home))
    (home / "kairox.toml").write_text(
        f'[mcp_servers.remote]\ntype = "http"\nurl = "{URL}"\n\n[mcp_servers.local]\ncommand = "true"\n'
    )
    for command in (login, logout):  # until kairox_mcp.cli registers them itself
        monkeypatch.setitem(mcp_cli.mcp.commands, str(command.name), command)
    return home


def run(tmp_path: Path, *args: str) -> Any:
    host = build_plugin_host(env=dict(os.environ))
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return CliRunner().invoke(build_cli(host), ["-w", str(ws), *args], catch_exceptions=False)


def test_logout_deletes_the_token_file(tmp_path: Path, cli_home: Path) -> None:
    path = token_path("remote", {"KAIROX_HOME": str(cli_home)})
    path.parent.mkdir()
    path.write_text(json.dumps({"version": 1, "server_url": URL, "tokens": {"access_token": SECRET}}))
    result = run(tmp_path, "mcp", "logout", "remote")
    assert result.exit_code == 0 and "Logged out of remote" in result.output
    assert not path.exists() and SECRET not in result.output
    again = run(tmp_path, "mcp", "logout", "remote", "--json")
    assert json.loads(again.output)["removed"] is False


def test_login_refuses_unknown_and_stdio_servers(tmp_path: Path, cli_home: Path) -> None:
    unknown = run(tmp_path, "mcp", "login", "nope", "--no-browser")
    assert unknown.exit_code == 1 and "no MCP server named 'nope'" in unknown.output
    local = run(tmp_path, "mcp", "login", "local", "--no-browser")
    assert local.exit_code == 1 and "only HTTP servers log in" in local.output


def test_login_to_an_unreachable_server_says_so(tmp_path: Path, cli_home: Path) -> None:
    result = run(tmp_path, "mcp", "login", "remote", "--no-browser", "--timeout", "5")
    assert result.exit_code == 1 and "cannot reach http://127.0.0.1:1/mcp" in result.output


def test_login_help(tmp_path: Path, cli_home: Path) -> None:
    result = run(tmp_path, "mcp", "login", "--help")
    assert result.exit_code == 0 and "--no-browser" in result.output and "PKCE" in result.output


def test_sdk_flow_errors_lose_their_text_in_logs(caplog: pytest.LogCaptureFixture) -> None:
    """The SDK logs its flow errors with ``logger.exception``; a pydantic error's text quotes
    the token response. With the filter, only the exception's type is logged."""
    import logging

    from mcp.shared.auth import OAuthToken
    from pydantic import ValidationError

    from kairox_mcp.auth import quiet_sdk_auth_logs

    quiet_sdk_auth_logs()
    quiet_sdk_auth_logs()  # once is enough; twice installs nothing more
    log = logging.getLogger("mcp.client.auth.oauth2")
    assert len([f for f in log.filters if type(f).__name__ == "_NoFlowErrorDetails"]) == 1
    with caplog.at_level(logging.DEBUG, logger="mcp.client.auth.oauth2"):
        try:
            OAuthToken.model_validate({"access_token": [SECRET]})  # the error quotes its input
        except ValidationError:
            log.exception("Invalid refresh response")
    assert "Invalid refresh response (ValidationError)" in caplog.text
    assert SECRET not in caplog.text
