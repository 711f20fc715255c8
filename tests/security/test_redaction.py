"""Secrets in URLs and command lines never reach what kairox prints (config show, trust listings)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox._secrets import redact_args
from kairox.ext import redact, redact_url
from kairox_testing import KairoxHarness

secrets = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", min_size=12, max_size=40)
words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
secret_names = st.sampled_from(["token", "api_key", "api-key", "apikey", "password", "secret", "auth", "X_API_TOKEN"])


@given(secret=secrets, user=words, host=words, param=secret_names, other=words)
def test_a_url_password_or_secret_query_value_never_survives(
    secret: str, user: str, host: str, param: str, other: str
) -> None:
    for url in (
        f"https://{user}:{secret}@{host}.example/mcp",
        f"https://{host}.example/mcp?{param}={secret}&{other}=1",
        f"http://{host}:8080/sse?{other}=x&{param}={secret}",
    ):
        assert secret not in redact_url(url)
        assert secret not in redact_args(f"server --url {url} --verbose")
        assert secret not in json.dumps(redact({"url": url}))


@given(secret=secrets, name=secret_names, cmd=words)
def test_a_secret_looking_argument_never_survives(secret: str, name: str, cmd: str) -> None:
    for line in (f"{cmd} --{name}={secret}", f"{cmd} --{name} {secret} --x", f"{name.upper()}={secret} {cmd}"):
        out = redact_args(line)
        assert secret not in out and "<redacted>" in out


@given(arg=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-./", max_size=30))
def test_plain_arguments_are_left_as_they_are(arg: str) -> None:
    text = f"mcp-server-git --repository {arg}"
    if not any(w in text.lower() for w in ("token", "secret", "password", "passwd", "key", "auth", "credential")):
        assert redact_args(text) == text


def test_config_show_hides_url_and_argument_secrets(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    kairox_harness.write_config(
        "[mcp_servers.remote]\n"
        'type = "http"\n'
        'url = "https://me:URLPASSWORD@mcp.example/mcp?api_key=QUERYSECRET&region=eu"\n'
        "[mcp_servers.local]\n"
        'command = "server"\n'
        'args = ["--token=ARGSECRET", "--region", "eu"]\n',
        where="user",
    )
    for args in (("config", "show"), ("config", "show", "--json")):
        result = kairox_harness.cli(*args, load_entrypoints=True)
        assert result.exit_code == 0, result.output
        for secret in ("URLPASSWORD", "QUERYSECRET", "ARGSECRET"):
            assert secret not in result.output
        assert "region=eu" in result.output and "<redacted>" in result.output


def test_a_secret_flag_and_its_value_as_two_arguments_are_redacted_as_a_pair() -> None:
    """``args = ["--token", "X"]`` hides X: a flag and its value are redacted as a pair, not
    each element alone."""
    from kairox.ext import redact

    shown = redact({"args": ["serve", "--token", "ARGTOK11", "--password=ARGPW12", "--verbose", "--api-key", "K9"]})
    assert shown["args"] == [
        "serve",
        "--token",
        "<redacted>",
        "--password=<redacted>",
        "--verbose",
        "--api-key",
        "<redacted>",
    ]
    assert redact({"args": ["--token", "--verbose"]})["args"] == ["--token", "--verbose"]  # a flag is no value


def test_an_oauth_code_in_a_url_is_redacted() -> None:
    from kairox.ext import redact_url

    assert "SECRETCODE" not in redact_url("http://localhost:3000/callback?code=SECRETCODE&state=s")
    assert "state=s" in redact_url("http://localhost:3000/callback?code=SECRETCODE&state=s")


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("MCP error -32600: nope Bearer hdrsecret-HHH echoed", "hdrsecret-HHH"),
        ("Authorization: Bearer abc123xyz", "abc123xyz"),
        ("x-api-key: Basic Zm9vOmJhcg==", "Zm9vOmJhcg=="),
        ("password: hunter2", "hunter2"),
        ('api_key="q1w2e3"', "q1w2e3"),
        ('{"token": "jsonsecret"}', "jsonsecret"),
        ("auth failed TOKEN=lspsecret-JJJ", "lspsecret-JJJ"),
    ],
)
def test_what_servers_echo_back_is_redacted(text: str, secret: str) -> None:
    # reviewers found these in LSP stderr and MCP error messages shown by `kairox status`
    shown = redact_args(text)
    assert secret not in shown and "<redacted>" in shown


def test_ordinary_words_stay() -> None:
    for text in ("the token expired", "normal text: fine", "basic usage", "Authorization failed"):
        assert redact_args(text) == text


def test_the_sse_message_endpoint_s_session_id_is_redacted() -> None:
    """The legacy SSE transport's endpoint carries the session in its query: whoever has
    ``session_id`` can post into the session, so logs and diagnostics never show it."""
    url = "http://127.0.0.1:8000/messages/?session_id=9f1c2d3e4f"
    assert "9f1c2d3e4f" not in redact_url(url) and "session_id=" in redact_url(url)
    assert "9f1c2d3e4f" not in redact(f"[http] POST {url} -> 401")
    # the words in kairox's own messages stay readable
    assert redact("HTTP 404 for its Mcp-Session-Id: expired") == "HTTP 404 for its Mcp-Session-Id: expired"


@pytest.mark.anyio
async def test_a_server_that_echoes_its_env_and_escapes_on_its_way_out_shows_neither(
    kairox_harness: KairoxHarness, tmp_path: Path
) -> None:
    """A value kairox hands a server (``env``, headers) is hidden wherever the server echoes
    it, under any name (``key=...`` looks like nothing secret); its escape sequences are shown,
    not obeyed, in the failure kairox reports (``kairox status``, a gateway's error result)."""
    import sys

    script = tmp_path / "echoes.py"
    script.write_text(
        "import os, sys\n"
        "sys.stderr.write('key=' + os.environ['SETTING'] + '\\n')\n"
        "sys.stderr.write('\\x1b]0;PWNED-TITLE\\x07\\x1b[31mred\\n')\n"
        "sys.exit(3)\n",
        encoding="utf-8",
    )
    kairox_harness.write_config(
        f"[mcp_servers.echoes]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(script))}]\n"
        'env = { SETTING = "sekrit-env-value-XYZ" }\nstartup_timeout = 20\nmax_restarts = 0\n',
        where="user",
    )
    async with kairox_harness.open(load_entrypoints=True) as rt:
        [status] = [s for s in rt.status().servers if s.name == "echoes"]
    shown = "\n".join([status.detail, *status.log_tail])
    assert "key=<redacted>" in status.log_tail, shown  # the line is there, its value is not
    assert "sekrit-env-value-XYZ" not in shown


def test_a_failure_summary_shows_a_servers_escapes_and_hides_what_it_was_given() -> None:
    """What an MCP failure says (the error a call gets, a gateway's error result for a remote
    client) quotes the server's stderr with its escape sequences shown, not obeyed, and
    without the values kairox gave it."""
    from kairox_mcp.transport import Diagnostics

    diag = Diagnostics(exit_code=3, error="the server said sekrit-env-value-XYZ")
    diag.stderr.hide(["sekrit-env-value-XYZ", "on"])  # too short a value is left alone
    diag.stderr.append("key=sekrit-env-value-XYZ")
    diag.stderr.append("\x1b]0;PWNED-TITLE\x07\x1b[31mred \u202eon")
    summary = diag.summary()
    assert "sekrit-env-value-XYZ" not in summary and summary.count("<redacted>") == 2, summary
    assert "\x1b" not in summary and "\x07" not in summary and "\u202e" not in summary
    assert "\\x1b]0;PWNED-TITLE\\x07\\x1b[31mred \\u202eon" in summary
