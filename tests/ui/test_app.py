"""``kairox ui`` as a process, over HTTP: the command line, redaction, the API's answers."""

from __future__ import annotations

import json
import subprocess
import sys

import peers
from ui_helpers import UiSetup

SECRET = "sk-live-0123456789abcdef"


def test_hooks_import_no_web_stack() -> None:
    code = (
        "import sys, kairox_ui.hooks; "
        "bad = [m for m in ('starlette', 'uvicorn', 'kairox_ui.app', 'kairox_catalog.catalog') if m in sys.modules]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_both_commands_are_registered() -> None:
    result = subprocess.run(
        [*peers.KAIROX_TEST_GRACES, "--help"], capture_output=True, text=True, timeout=60, check=True
    )
    assert " ui " in result.stdout and " watch " in result.stdout


def test_a_host_other_machines_reach_needs_the_flag(ui: UiSetup) -> None:
    result = ui.cli("ui", "--no-browser", "--host", "0.0.0.0", "--port", "0")
    assert result.returncode == 2 and "--allow-remote" in result.stderr
    assert result.stdout == ""


def test_secrets_of_the_config_appear_in_no_answer(ui: UiSetup) -> None:
    argv = peers.fixture_server("crash_on_start")
    ui.write(
        "kairox.toml",
        f"[mcp_servers.leaky]\ncommand = {json.dumps(argv[0])}\n"
        f'args = [{json.dumps(argv[1])}, "--token", "{SECRET}", "--api-key={SECRET}"]\n'
        f'env = {{ SERVICE_KEY = "{SECRET}" }}\n\n'
        f'[mcp_servers.remote]\ntype = "streamable_http"\nurl = "http://user:{SECRET}@127.0.0.1:9/mcp?token={SECRET}"\n'
        f'headers = {{ Authorization = "Bearer {SECRET}" }}\n',
    )
    server = ui.start()
    answers = [server.request(path)[1] for path in ("/api/status", "/api/plugins", "/api/tools", "/api/events")]
    assert "leaky" in answers[0] and "crash_on_start.py" in answers[0]  # untrusted, with what it would run
    ui.trust()
    status, _ = server.request("/api/reload", method="POST")
    assert status == 200
    for _ in range(200):
        data = server.json("/api/status")
        if data["generation"] == 1 and {s["name"]: s["state"] for s in data["servers"]}.get("leaky") == "failed":
            break
        subprocess.run(["sleep", "0.1"], check=True)
    answers += [server.request(path)[1] for path in ("/api/status", "/api/plugins", "/api/tools", "/api/events")]
    # before trust, the pending entry's command line is shown as it will run, as `kairox trust`
    # shows it (masking a value in it could hide a command: test_what_is_pending_trust_is_shown_...);
    # the URL's password and query secret stay hidden there too
    untrusted = json.loads(answers[0])
    runs = [line for item in untrusted["trust"]["pending"] for line in item["runs"]]
    assert [SECRET in line for line in runs] == [True]
    untrusted["trust"]["pending"] = [{**item, "runs": []} for item in untrusted["trust"]["pending"]]
    answers[0] = json.dumps(untrusted)
    for text in answers:
        assert SECRET not in text
    assert "<redacted>" in answers[0]
    assert SECRET not in server.stderr()


def test_bad_request_bodies_are_400_naming_the_field(ui: UiSetup) -> None:
    ui.write(".kairox/skills/hello.md", "---\nname: hello\ndescription: hi\nscope: workspace\n---\nHello.\n")
    server = ui.start()
    status, text = server.request("/api/skills/hello/enabled", method="POST", body={"scope": "moon", "enabled": True})
    assert status == 400 and json.loads(text)["field"] == "scope"
    status, text = server.request("/api/skills/hello/enabled", method="POST", body=[1, 2])
    assert status == 400 and "JSON object" in json.loads(text)["error"]
    status, text = server.request("/api/skills/nope/enabled", method="POST", body={"enabled": False})
    assert status == 404
    status, text = server.request("/api/approvals/none", method="POST", body={"answer": "allow_once"})
    assert status == 404


def test_every_page_is_the_shell_with_a_strict_policy(ui: UiSetup) -> None:
    import urllib.request

    server = ui.start()
    pages = {"/": "status", "/marketplace": "marketplace", "/skills": "skills", "/plugins": "plugins"}
    pages |= {"/tools": "tools", "/events": "trace"}
    for path, name in pages.items():
        with urllib.request.urlopen(server.base + path, timeout=30) as response:
            body = response.read().decode()
            csp = response.headers["content-security-policy"]
        assert '<script type="module" src="/static/app.js">' in body and f'data-page="{name}"' in body
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp


def test_the_printed_url_carries_the_token_in_its_fragment_only(ui: UiSetup) -> None:
    import re

    server = ui.start()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/#token=[A-Za-z0-9_-]{40,}", server.url), server.url
    assert "?" not in server.url and server.token and server.token not in server.base


def test_the_api_needs_the_header_and_the_stream_its_query_token(ui: UiSetup) -> None:
    import urllib.request

    server = ui.start()
    cookie = {"Cookie": f"kairox_ui_{server.base.rsplit(':', 1)[1]}={server.token}"}
    for path in ("/api/status", "/api/skills", "/api/events", "/api/approvals"):
        assert server.request(path, token=False)[0] == 403, path
        assert server.request(path, token=False, headers=cookie)[0] == 403, path  # a cookie is no token
        assert server.request(f"{path}?token={server.token}", token=False)[0] == 403, path  # nor the URL
        assert server.request(path)[0] == 200, path
    status, _ = server.request("/api/tools/call", method="POST", body={"name": "fs.read"}, token=False)
    assert status == 403
    assert server.request("/api/stream", token=False)[0] == 403
    assert server.request("/api/stream?token=wrong", token=False)[0] == 403
    assert server.request("/api/stream", token=False, headers=cookie)[0] == 403
    req = urllib.request.Request(f"{server.base}/api/stream?token={server.token}")
    with urllib.request.urlopen(req, timeout=30) as response:
        assert response.status == 200 and response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["referrer-policy"] == "no-referrer"
        assert response.readline().startswith(b"event: status")
        assert "set-cookie" not in response.headers


def test_the_shell_needs_no_token_and_no_response_sets_a_cookie(ui: UiSetup) -> None:
    import urllib.request

    server = ui.start()
    for path in ("/", "/skills", "/static/app.js", "/static/dom.js", "/static/style.css"):
        with urllib.request.urlopen(server.base + path, timeout=30) as response:
            assert response.status == 200 and "set-cookie" not in response.headers, path
            assert server.token not in response.read().decode(), path

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(f"{server.base}/skills?token={server.token}", timeout=30)
        raise AssertionError("a legacy ?token= link is redirected")
    except urllib.error.HTTPError as exc:
        assert exc.code == 303 and exc.headers["location"] == f"/skills#token={server.token}"
        assert "set-cookie" not in exc.headers
    assert server.request("/?token=wrong", token=False)[0] == 403


def test_config_errors_read_as_kairox_status_prints_them_with_secret_values_masked(ui: UiSetup) -> None:
    argv = peers.fixture_server("well_behaved")
    ui.write(
        "kairox.toml",
        f"[mcp_servers.clock]\ncommand = {json.dumps(argv[0])}\nargs = [{json.dumps(argv[1])}]\n"
        'env = { CLOCK_API_KEY = "${CLOCK_API_KEY}" }\n\n'
        f'[mcp_servers.other]\ncommand = {json.dumps(argv[0])}\nargs = [{json.dumps(argv[1])}, "--api-key", "{SECRET}"]\n'
        f'env = {{ SERVICE_KEY = "{SECRET}" }}\ntool_timeout = "{SECRET}"\n',
        where="home",
    )
    server = ui.start()
    status, text = server.request("/api/status")
    assert status == 200, text
    errors = json.loads(text)["config_errors"]
    printed = ui.cli("status").stdout + ui.cli("status").stderr
    assert any("mcp_servers.other.tool_timeout" in e and "<redacted>" in e for e in errors), errors
    clock = next(e for e in errors if "CLOCK_API_KEY" in e)
    assert "environment variable CLOCK_API_KEY is not set" in clock and "<redacted> variable" not in clock
    assert "environment variable CLOCK_API_KEY is not set" in printed
    assert SECRET not in text
    # kairox status too, as text and as JSON (it printed the value in tool_timeout's error)
    as_json = ui.cli("status", "--json")
    assert "expected a number, got '<redacted>'" in printed and "mcp_servers.other.tool_timeout" in as_json.stdout
    assert SECRET not in printed + as_json.stdout + as_json.stderr
    # the server's row too: the kernel's hint is prose, not a value to hide
    detail = next(s["detail"] for s in json.loads(text)["servers"] if s["name"] == "clock")
    assert "(write ${CLOCK_API_KEY:-default} for a fallback)" in detail, detail


def test_what_is_pending_trust_is_shown_as_it_will_run(ui: UiSetup) -> None:
    """The attack on the trust display: a workspace whose server's command line carries an
    argument that redaction would hide (``--token 'Bearer $(id)'``) and an env value that is a
    reference (``${SECRET_TOKEN}``). Masking the config's secret values over the whole status
    hid both from the page and from ``kairox status``, so the user was shown something else than
    what runs; both now show the command line whole, as ``kairox trust`` does."""
    argv = ["sh", "-c", "true", "attack", "${SECRET_TOKEN}", "--token", "Bearer $(id)"]
    ui.write(
        "kairox.toml",
        f"[mcp_servers.x]\ncommand = {json.dumps(argv[0])}\nargs = {json.dumps(argv[1:])}\n"
        'env = { STOLEN = "${SECRET_TOKEN}" }\n',
    )
    line = "sh -c true attack '${SECRET_TOKEN}' --token 'Bearer $(id)'"
    server = ui.start()
    status, text = server.request("/api/status")
    assert status == 200, text
    assert [p["runs"] for p in json.loads(text)["trust"]["pending"]] == [[line]]
    as_json = json.loads(ui.cli("status", "--json").stdout)
    assert [p["commands"] for p in as_json["trust"]["pending"]] == [[line]]
    assert [p["env_names"] for p in as_json["trust"]["pending"]] == [["SECRET_TOKEN"]]
