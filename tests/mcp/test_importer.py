"""``kairox_mcp.importer``: the JSONC reader, each client's variables, secrets, each format's file."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kairox._compat import tomllib
from kairox.errors import ConfigError
from kairox.ext import expand_env
from kairox_mcp.importer import (
    Input,
    JsoncError,
    _has_reference,
    _loads_toml,
    _Scope,
    _variables,
    escape_literal,
    input_variable,
    loads_jsonc,
    looks_like_token,
    read_sources,
    source_files,
    strip_jsonc,
    translate,
    write_servers,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "client_configs"
#: every fake secret the fixtures hold: none may reach an output or a written file
FIXTURE_SECRETS = (
    "kx-fake-claude-user-secret-0001",
    "kxfakeLOCALsecret0002",
    "kxfakeCURSORtoken0003abcdef",
    "kx-fake-codex-secret-0004",
    "kxfakeZEDtoken0005abcdef",
    "kxfakeDESKTOPsecret0006abc",
)


def copy_fixtures(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The fixture tree under ``tmp_path``: (workspace, env with HOME and XDG_CONFIG_HOME)."""
    root = tmp_path / "clients"
    shutil.copytree(FIXTURES, root)
    workspace = root / "workspace"
    claude = root / "home" / ".claude.json"
    claude.write_text(claude.read_text().replace("__WORKSPACE__", str(workspace)))
    return workspace, {"HOME": str(root / "home"), "XDG_CONFIG_HOME": str(root / "xdg")}


# -- JSONC --------------------------------------------------------------------------------

TRICKY = st.lists(st.sampled_from([*'ab /*,]}[{"\\\n\t:', "é", "//", "/*", "*/"]), max_size=8).map("".join)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**9), 10**9)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TRICKY
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TRICKY, children, max_size=4),
    max_leaves=16,
)
COMMENT = st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]), max_size=10)


def _gap(data: st.DataObject) -> tuple[str, str]:
    """Whitespace or a comment between two tokens: (as written, as stripped)."""
    kind = data.draw(st.sampled_from(["", " ", "\n", "line", "block", "block-nl"]))
    if kind == "line":
        text = "//" + data.draw(COMMENT) + "\n"
        return text, " " * (len(text) - 1) + "\n"
    if kind in ("block", "block-nl"):
        body = data.draw(COMMENT.filter(lambda t: "*/" not in t))
        text = "/*" + body + ("\n" if kind == "block-nl" else "") + "*/"
        return text, "".join("\n" if c == "\n" else " " for c in text)
    return kind, kind


def _render(value: Any, data: st.DataObject, src: list[str], exp: list[str]) -> None:
    """``value`` as JSONC with comments and trailing commas drawn at random (``src``) and
    what stripping it must give (``exp``)."""

    def put(text: str, stripped: str | None = None) -> None:
        src.append(text)
        exp.append(text if stripped is None else stripped)

    def gap() -> None:
        put(*_gap(data))

    if isinstance(value, (dict, list)):
        opener, closer = ("{", "}") if isinstance(value, dict) else ("[", "]")
        items: list[Any] = list(value.items()) if isinstance(value, dict) else list(value)
        put(opener)
        gap()
        for i, item in enumerate(items):
            if i:
                put(",")
                gap()
            if isinstance(value, dict):
                key, child = item
                put(json.dumps(key))
                gap()
                put(":")
                gap()
                _render(child, data, src, exp)
            else:
                _render(item, data, src, exp)
            gap()
        trailing: bool = data.draw(st.booleans())
        if items and trailing:
            put(",", " ")
            gap()
        put(closer)
        return
    put(json.dumps(value))


@given(JSON_VALUES, st.sampled_from([None, 0, 2]))
def test_plain_json_is_left_exactly_as_it_is(value: Any, indent: int | None) -> None:
    text = json.dumps(value, indent=indent)
    assert strip_jsonc(text) == text
    assert loads_jsonc(text) == value


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(JSON_VALUES, st.data())
def test_comments_and_trailing_commas_are_blanked_exactly_and_strings_kept(value: Any, data: st.DataObject) -> None:
    src: list[str] = []
    exp: list[str] = []
    before, before_stripped = _gap(data)
    src.append(before)
    exp.append(before_stripped)
    _render(value, data, src, exp)
    text = "".join(src)
    assert strip_jsonc(text) == "".join(exp)  # same length, same newlines, strings untouched
    assert loads_jsonc(text) == value


def test_strings_holding_comment_markers_are_untouched() -> None:
    text = '{"url": "https://x.example/a//b", "note": "/* no */", "q": "say \\"// hi\\"", } // end'
    assert loads_jsonc(text) == {"url": "https://x.example/a//b", "note": "/* no */", "q": 'say "// hi"'}


def test_a_comma_that_is_not_trailing_is_an_error_still() -> None:
    with pytest.raises(JsoncError, match="line 1"):
        loads_jsonc("[,1]")
    with pytest.raises(JsoncError):
        loads_jsonc('{"a": 1,,}')


def test_errors_name_the_line_and_column_of_the_original() -> None:
    with pytest.raises(JsoncError, match="line 3 column 10"):
        loads_jsonc('{\n  /* a\n  */ "a" 1}')
    with pytest.raises(JsoncError, match="unterminated /\\* comment at line 2 column 1"):
        loads_jsonc("{}\n/* never closed")


def test_a_byte_order_mark_is_ignored() -> None:
    assert loads_jsonc('\ufeff{"a": [1,],}') == {"a": [1]}


# -- variables ------------------------------------------------------------------------------

NAMES = st.from_regex(r"[A-Z_][A-Z0-9_]{0,6}", fullmatch=True)
LITERAL = st.lists(st.sampled_from([*"ab -:/{}$.", "${", "$${", "é"]), max_size=6).map("".join)


def _scope(tmp: Path | None = None, **kw: Any) -> _Scope:
    return _Scope(server="srv", file="f.json", workspace=tmp or Path("/ws/project"), **kw)


@given(st.text())
def test_a_literal_string_reads_back_unchanged(text: str) -> None:
    assert expand_env(escape_literal(text), {}) == text
    assert translate(text, "literal", _scope(), "x") == escape_literal(text)


def _no_dollar_before_variables(parts: list[Any]) -> bool:
    return all(
        not (isinstance(a, str) and a.endswith("$") and not isinstance(b, str)) for a, b in itertools.pairwise(parts)
    )


def _parts(variable: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    return st.lists(st.one_of(LITERAL, variable), max_size=6).filter(_no_dollar_before_variables)


@given(_parts(st.tuples(NAMES, st.none() | st.text(alphabet="ab-./", max_size=5))), st.data())
def test_claude_variables_expand_as_claude_code_expands_them(parts: list[Any], data: st.DataObject) -> None:
    source, expected = "", ""
    env: dict[str, str] = {}
    for part in parts:
        if isinstance(part, str):
            if "${" in part.replace("$${", ""):  # a literal ${...} would be a variable in the source
                part = part.replace("${", "$ {")
            source += part
            expected += part
            continue
        name, default = part
        source += "${" + name + (f":-{default}" if default is not None else "") + "}"
        value = env.setdefault(name, data.draw(st.text(alphabet="xyz$}{", min_size=1, max_size=4)))
        expected += value
    try:
        written = translate(source, "claude", _scope(), "x")
    except ConfigError:  # only for text that cannot be written exactly
        assert "$" in source
        return
    assert expand_env(written, env) == expected


VSCODE_VARIABLE = st.one_of(
    st.tuples(st.just("env"), NAMES),
    st.tuples(st.just("input"), st.sampled_from(["api-key", "region", "token"])),
    st.sampled_from(["workspaceFolder", "workspaceFolderBasename", "userHome", "pathSeparator", "/"]),
)


@given(_parts(VSCODE_VARIABLE), st.data())
def test_vscode_and_cursor_variables_expand_to_what_the_server_got(parts: list[Any], data: st.DataObject) -> None:
    inputs = {
        "api-key": Input("api-key", "API key", password=True),
        "region": Input("region", "Region", default="eu"),
        "token": Input("token"),
    }
    scope = _scope(inputs=inputs)
    source, expected = "", ""
    env: dict[str, str] = {"HOME": "/home/ada"}
    for part in parts:
        if isinstance(part, str):
            part = part.replace("${", "$ {")  # a literal ${...} would be a variable in the source
            source += part
            expected += part
        elif isinstance(part, tuple) and part[0] == "env":
            source += "${env:" + part[1] + "}"
            expected += env.setdefault(part[1], data.draw(st.text(alphabet="xyz$}{", min_size=1, max_size=4)))
        elif isinstance(part, tuple):
            source += "${input:" + part[1] + "}"
            expected += env.setdefault(input_variable(part[1]), data.draw(st.text(alphabet="uvw", min_size=1)))
        else:
            source += "${" + part + "}"
            expected += {
                "workspaceFolder": ".",
                "workspaceFolderBasename": "project",
                "userHome": "/home/ada",
                "pathSeparator": os.sep,
                "/": os.sep,
            }[part]
    try:
        written = translate(source, "vscode", scope, "x")
    except ConfigError:
        assert "$" in source
        return
    assert expand_env(written, env) == expected
    used = {i.id for i in scope.used_inputs}
    assert used == {p[1] for p in parts if isinstance(p, tuple) and p[0] == "input"}


@given(_parts(st.tuples(NAMES, st.booleans())), st.data())
def test_gemini_variables_expand_as_gemini_cli_expands_them(parts: list[Any], data: st.DataObject) -> None:
    source, expected = "", ""
    env: dict[str, str] = {}
    for i, part in enumerate(parts):
        if isinstance(part, str):
            part = part.replace("$", "")  # any $ would start a variable in the source
            source += part
            expected += part
            continue
        name, braced = part
        following = ""
        for later in parts[i + 1 :]:
            if not isinstance(later, str):
                break
            following += later.replace("$", "")
            if following:
                break
        if following[:1].isalnum() or following[:1] == "_":
            braced = True  # $NAME followed by a letter would be a longer name
        source += "${" + name + "}" if braced else "$" + name
        expected += env.setdefault(name, data.draw(st.text(alphabet="xyz$}{", min_size=1, max_size=4)))
    written = translate(source, "gemini", _scope(), "x")
    assert expand_env(written, env) == expected


def test_unsupported_variables_name_the_file_and_field() -> None:
    for text in ("${config:editor.tabSize}", "${command:pick}", "${file:/etc/x}", "${input:missing}"):
        with pytest.raises(ConfigError) as info:
            translate(text, "vscode", _scope(), "servers.a.args[0]")
        assert str(info.value).startswith("f.json: servers.a.args[0]: ")


def test_a_dollar_right_before_a_variable_is_refused_not_mangled() -> None:
    with pytest.raises(ConfigError, match="cannot be written exactly"):
        translate("cost: $${PRICE}", "claude", _scope(), "x")


def test_workspace_folder_is_the_path_when_the_server_has_its_own_cwd() -> None:
    assert translate("${workspaceFolder}/x", "vscode", _scope(workspace_token="/ws/project"), "x") == "/ws/project/x"


# -- secrets -------------------------------------------------------------------------------


def test_token_shapes() -> None:
    assert looks_like_token("gh" + "p_" + "A1b2C3d4E5f6G7h8I9j0")
    assert looks_like_token("sk-" + "proj-abcdef0123456789")
    assert looks_like_token("a1B2c3D4e5F6g7H8i9J0k1")
    for plain in ("production", "info", "/usr/local/bin/thing-2024", "https://example.com/a1b2c3d4e5f6g7h8i9", "1"):
        assert not looks_like_token(plain)


def _one(tmp_path: Path, kind_file: str, text: str, env: dict[str, str] | None = None) -> Any:
    home = tmp_path / "home"
    path = home / kind_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return read_sources(tmp_path / "ws", {"HOME": str(home), **(env or {})}, platform="linux")


def test_every_kind_of_literal_secret_becomes_a_variable(tmp_path: Path) -> None:
    secret = "kxSECRETvalue0123456789"
    doc = {
        "mcpServers": {
            "a": {"command": "srv", "args": ["--token", secret, f"--api-key={secret}"], "env": {"MY_PAT": secret}},
            "b": {"url": f"https://user:{secret}@b.example/mcp?key={secret}&x=1", "headers": {"X-Api-Key": secret}},
            "c": {"url": "https://c.example/mcp", "headers": {"Authorization": f"Bearer {secret}"}},
        }
    }
    plan = _one(tmp_path, ".cursor/mcp.json", json.dumps(doc))
    assert not plan.errors
    dumped = json.dumps([s.values for s in plan.servers])
    assert secret not in dumped
    assert secret not in json.dumps(plan.to_dict())
    a, b, c = plan.servers
    assert a.values["args"] == ["--token", "${A_TOKEN}", "--api-key=${A_API_KEY}"]
    assert a.values["env"] == {"MY_PAT": "${MY_PAT}"}
    assert b.values["url"] == "https://user:${B_PASSWORD}@b.example/mcp?key=${B_KEY}&x=1"
    assert b.values["headers"] == {"X-Api-Key": "${B_X_API_KEY}"}
    assert c.values["headers"] == {"Authorization": "Bearer ${C_TOKEN}"}
    assert {v.kind for v in a.variables} == {"secret"}


#: where a secret sits in an argument: the redaction's notion of its value ends at ``}``
_SECRET_SPOTS = st.sampled_from(["TOKEN={}", "--api-key={}", "password:{}", "{}", "Bearer {}"])


@settings(max_examples=60)
@given(st.lists(st.tuples(_SECRET_SPOTS, st.sampled_from(["api-key", "org"])), min_size=1, max_size=4))
def test_vscode_inputs_inside_arguments_are_read_back_exactly(
    tmp_path_factory: pytest.TempPathFactory, spots: list[tuple[str, str]]
) -> None:
    """``"-e", "TOKEN=${input:api-key}"``: the argument reads back as VS Code would pass it,
    and the only variables asked for are the inputs used (no stray ``}``, no extra secret)."""
    args: list[str] = []
    for shape, input_id in spots:
        if shape == "{}":  # a value after a secret-looking flag
            args += ["--token", "${input:" + input_id + "}"]
        else:
            args.append(shape.replace("{}", "${input:" + input_id + "}"))
    doc = {
        "inputs": [
            {"type": "promptString", "id": "api-key", "description": "API key", "password": True},
            {"type": "promptString", "id": "org", "description": "Org"},
        ],
        "servers": {"s": {"command": "docker", "args": args}},
    }
    plan = _one(tmp_path_factory.mktemp("vscode"), ".config/Code/User/mcp.json", json.dumps(doc))
    assert not plan.errors
    [server] = plan.servers
    values = {"API_KEY": "kx-key", "ORG": "acme"}
    expanded = [expand_env(a, values) for a in server.values["args"]]
    assert expanded == [a.replace("${input:api-key}", "kx-key").replace("${input:org}", "acme") for a in args]
    assert {v.name for v in server.variables} == {input_variable(i) for _, i in spots}


def test_two_different_secrets_never_share_a_variable(tmp_path: Path) -> None:
    doc = {
        "mcpServers": {
            "one": {"command": "x", "env": {"GITHUB_TOKEN": "kxFIRSTsecret0000000001"}},
            "two": {"command": "x", "env": {"GITHUB_TOKEN": "kxSECONDsecret000000002"}},
            "three": {"command": "x", "env": {"GITHUB_TOKEN": "kxFIRSTsecret0000000001"}},
        }
    }
    plan = _one(tmp_path, ".cursor/mcp.json", json.dumps(doc))
    assert [s.values["env"]["GITHUB_TOKEN"] for s in plan.servers] == [
        "${GITHUB_TOKEN}",
        "${TWO_GITHUB_TOKEN}",
        "${GITHUB_TOKEN}",
    ]


def test_plain_values_stay_literal(tmp_path: Path) -> None:
    doc = {"mcpServers": {"a": {"command": "x", "env": {"LOG_LEVEL": "debug", "GIT_AUTHOR_NAME": "Ada"}}}}
    (server,) = _one(tmp_path, ".cursor/mcp.json", json.dumps(doc)).servers
    assert server.values["env"] == {"LOG_LEVEL": "debug", "GIT_AUTHOR_NAME": "Ada"}
    assert server.variables == ()


# -- where the files are -----------------------------------------------------------------------


def _paths(workspace: Path, env: dict[str, str], platform: str = "linux") -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for s in source_files(workspace, env, platform=platform):
        out.setdefault(s.kind, []).append(str(s.path))
    return out


def test_paths_follow_home_xdg_codex_home_and_the_platform() -> None:
    ws = Path("/ws")
    paths = _paths(ws, {"HOME": "/h"})
    assert paths["claude-desktop"] == ["/h/.config/Claude/claude_desktop_config.json"]
    assert paths["claude-code"] == ["/ws/.mcp.json", "/h/.claude.json", "/h/.claude.json"]
    assert paths["codex"] == ["/ws/.codex/config.toml", "/h/.codex/config.toml"]
    assert paths["zed"] == ["/ws/.zed/settings.json", "/h/.config/zed/settings.json"]
    assert paths["windsurf"] == ["/h/.codeium/windsurf/mcp_config.json"]
    paths = _paths(ws, {"HOME": "/h", "XDG_CONFIG_HOME": "/x", "CODEX_HOME": "/c", "CLAUDE_CONFIG_DIR": "/cc"})
    assert paths["claude-desktop"] == ["/x/Claude/claude_desktop_config.json"]
    assert paths["vscode"] == ["/ws/.vscode/mcp.json", "/x/Code/User/mcp.json"]
    assert paths["codex"][1] == "/c/config.toml"
    assert paths["claude-code"][1] == "/cc/.claude.json"
    mac = _paths(ws, {"HOME": "/h"}, platform="darwin")
    assert mac["claude-desktop"] == ["/h/Library/Application Support/Claude/claude_desktop_config.json"]


def test_macos_reads_the_claude_desktop_file_there(tmp_path: Path) -> None:
    workspace, env = copy_fixtures(tmp_path)
    plan = read_sources(workspace, env, kinds=("claude-desktop",), platform="darwin")
    assert [s.name for s in plan.servers] == ["desk-mac"]


# -- one fixture per client format -----------------------------------------------------------------


@pytest.fixture
def fixture_plan(tmp_path: Path) -> Any:
    workspace, env = copy_fixtures(tmp_path)
    return read_sources(workspace, env, platform="linux")


def _values(plan: Any) -> dict[str, dict[str, Any]]:
    return {s.name: s.values for s in plan.servers}


def test_claude_code_files(fixture_plan: Any) -> None:
    v = _values(fixture_plan)
    assert v["cc-files"]["args"][-1] == "${PROJECT_DIR:-.}"
    assert v["cc-remote"] == {
        "type": "streamable_http",
        "url": "https://cc.example.com/mcp",
        "headers": {"Authorization": "Bearer ${CC_TOKEN}"},
    }
    assert v["cc-legacy"]["type"] == "sse"
    assert v["cc-local"]["url"] == "https://local.example.com/mcp?api_key=${CC_LOCAL_API_KEY}"  # projects[WS]
    assert v["cc-user"]["env"] == {"TZ": "UTC", "TIME_API_KEY": "${TIME_API_KEY}"}
    assert "not-this-project" not in v


def test_cursor_files(fixture_plan: Any) -> None:
    v = _values(fixture_plan)
    assert v["cursor-db"]["command"] == "./bin/db-mcp"
    assert v["cursor-db"]["args"] == ["--root", ".", "--name", "workspace", "--cache", "${HOME}" + os.sep + ".cache"]
    assert v["cursor-db"]["env"] == {"DB_URL": "${DATABASE_URL}", "LOG_LEVEL": "info"}
    assert v["cursor-remote"]["headers"] == {
        "Authorization": "Bearer ${CURSOR_REMOTE_TOKEN}",
        "Accept": "application/json",
    }
    skipped = {(s.name, s.kind): s.reason for s in fixture_plan.skipped}
    assert "imported from" in skipped[("cc-files", "cursor")]  # the workspace's .mcp.json came first


def test_vscode_files_jsonc_inputs_and_a_broken_entry(fixture_plan: Any) -> None:
    v = _values(fixture_plan)
    assert v["vs-perplexity"]["env"] == {"PERPLEXITY_API_KEY": "${PERPLEXITY_KEY}"}
    assert v["vs-perplexity"]["args"][-1] == "${REGION:-eu}"
    assert v["vs-remote"]["headers"] == {"X-Note": "see /* not a comment */ and // neither"}
    assert v["vs-user"]["command"] == "uvx"
    (perplexity,) = [s for s in fixture_plan.servers if s.name == "vs-perplexity"]
    kinds = {x.name: x.kind for x in perplexity.variables}
    assert kinds == {"PERPLEXITY_KEY": "secret", "REGION": "input"}
    assert any("envFile" in n for n in perplexity.notes)
    errors = [str(e) for e in fixture_plan.errors]
    assert any(
        e.endswith(".vscode/mcp.json: servers.vs-broken.command: expected a string, got a number") for e in errors
    )


def test_codex_files(fixture_plan: Any) -> None:
    v = _values(fixture_plan)
    assert v["codex-docs"] == {
        "type": "streamable_http",
        "url": "https://codex.example.com/mcp",
        "enabled_tools": ["search", "fetch"],
        "headers": {"Authorization": "Bearer ${CODEX_DOCS_TOKEN}"},
        "startup_timeout": 20,
        "tool_timeout": 120,
    }
    git = v["codex-git"]
    assert git["env"] == {"GIT_AUTHOR_NAME": "Ada", "GITHUB_TOKEN": "${GITHUB_TOKEN}"}
    assert (git["env_vars"], git["cwd"], git["startup_timeout"], git["required"]) == (
        ["SSH_AUTH_SOCK"],
        "/tmp",
        15,
        True,
    )
    assert git["disabled_tools"] == ["git_reset"]
    assert v["codex-http"]["headers"] == {"X-Region": "eu", "X-Api-Key": "${CODEX_OTHER_KEY}"}
    # the variables the headers read are listed as the source's own
    http_vars = {(x.name, x.kind) for s in fixture_plan.servers if s.name == "codex-http" for x in s.variables}
    assert ("CODEX_OTHER_KEY", "reference") in http_vars
    assert v["codex-http"]["enabled"] is False
    errors = [str(e) for e in fixture_plan.errors]
    assert any("mcp_servers.codex-bad.tool_timeout_sec: expected a number, got a string" in e for e in errors)


def test_codex_keys_kairox_does_not_take_over_are_noted_with_their_field(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".codex").mkdir(parents=True)
    (workspace / ".codex" / "config.toml").write_text(
        '[mcp_servers.t]\nurl = "https://t.example/mcp"\nsupports_parallel_tool_calls = true\n'
        'env_http_headers = { "X-Org" = "ORG_ID" }\nstartup_timeout_ms = 2500\n'
        '[mcp_servers.t.tools.search]\napproval_mode = "approve"\n'
    )
    plan = read_sources(workspace, {"HOME": str(tmp_path / "home")}, kinds=("codex",), platform="linux")
    [server] = plan.servers
    assert server.values["headers"] == {"X-Org": "${ORG_ID}"} and server.values["startup_timeout"] == 2.5
    assert server.notes == (
        "`supports_parallel_tool_calls`: not taken over: kairox decides which calls run at once",
        "`tools`: not taken over: kairox's policy decides each call (per-tool approval_mode)",
    )


def test_gemini_files(fixture_plan: Any) -> None:
    v = _values(fixture_plan)
    assert v["gem-http"] == {
        "type": "streamable_http",
        "url": "https://gem.example.com/mcp",
        "headers": {"Authorization": "Bearer ${GEMINI_MCP_TOKEN}"},
        "tool_timeout": 30,
        "enabled_tools": ["lookup"],
    }
    assert v["gem-sse"] == {"type": "sse", "url": "https://gem.example.com/sse", "disabled_tools": ["delete"]}
    assert v["gem-stdio"]["env"] == {"API_KEY": "${GEM_KEY}"}
    assert v["gem-user"]["args"] == ["server.js", "--port=${PORT}"]


def test_zed_files(fixture_plan: Any) -> None:
    v = _values(fixture_plan)
    assert v["zed-custom"]["args"] == ["arg-1", "literal $${NOT_A_VAR}"]  # Zed expands nothing
    assert v["zed-old"] == {
        "type": "stdio",
        "command": "/usr/bin/old-mcp",
        "args": ["--stdio"],
        "env": {"OLD_MODE": "1"},
    }
    assert v["zed-remote"]["headers"] == {"Authorization": "Bearer ${ZED_REMOTE_TOKEN}"}
    assert any(s.name == "zed-ext" and "extension" in s.reason for s in fixture_plan.skipped)


def test_claude_desktop_and_windsurf_files(fixture_plan: Any) -> None:
    v = _values(fixture_plan)
    assert v["desk-fs"]["args"][-2:] == ["--api-key", "${DESK_FS_API_KEY}"]
    assert v["wind-remote"] == {
        "type": "streamable_http",
        "url": "https://wind.example.com/mcp",
        "headers": {"Authorization": "Bearer ${WIND_TOKEN}"},
    }
    assert v["wind-local"]["enabled"] is False
    assert v["wind-local"]["disabled_tools"] == ["nuke"]
    errors = [str(e) for e in fixture_plan.errors]
    assert any("mcpServers.wind-file.args[0]: ${file:/etc/secret} cannot be expressed" in e for e in errors)


def test_no_fixture_secret_is_in_the_plan(fixture_plan: Any) -> None:
    text = json.dumps(fixture_plan.to_dict()) + json.dumps([s.values for s in fixture_plan.servers])
    for secret in FIXTURE_SECRETS:
        assert secret not in text


def test_a_broken_file_never_stops_the_others(tmp_path: Path) -> None:
    workspace, env = copy_fixtures(tmp_path)
    (workspace / ".cursor" / "mcp.json").write_text('{"mcpServers": {"x": {"command": "a"},,}')
    (workspace / ".codex" / "config.toml").write_text("[mcp_servers.x\n")
    (Path(env["HOME"]) / ".gemini" / "settings.json").write_text('{"mcpServers": []}')
    plan = read_sources(workspace, env, platform="linux")
    errors = [str(e) for e in plan.errors]
    assert any(e.startswith(str(workspace / ".cursor" / "mcp.json") + ": invalid JSON: ") for e in errors)
    assert any(e.startswith(str(workspace / ".codex" / "config.toml") + ": invalid TOML") for e in errors)
    assert any(e.endswith("settings.json: mcpServers: expected an object of servers by name") for e in errors)
    names = {s.name for s in plan.servers}
    assert {"cc-remote", "vs-remote", "codex-git", "desk-fs", "wind-remote"} <= names


def test_user_scope_leaves_workspace_files_to_the_workspace(tmp_path: Path) -> None:
    workspace, env = copy_fixtures(tmp_path)
    plan = read_sources(workspace, env, platform="linux", user_scope=True)
    names = {s.name for s in plan.servers}
    assert "cursor-remote" in names and "cc-local" in names  # the user's own files
    assert "cursor-db" not in names and "vs-remote" not in names
    assert any(s.name == "cursor-db" and "--scope workspace" in s.reason for s in plan.skipped)


def test_only_the_kinds_asked_for(tmp_path: Path) -> None:
    workspace, env = copy_fixtures(tmp_path)
    plan = read_sources(workspace, env, kinds=("codex", "windsurf"), platform="linux")
    assert {s.kind for s in plan.servers} == {"codex", "windsurf"}


# -- writing -------------------------------------------------------------------------------------


def test_writing_keeps_comments_and_the_mode_and_refuses_a_duplicate(tmp_path: Path) -> None:
    workspace, env = copy_fixtures(tmp_path)
    plan = read_sources(workspace, env, kinds=("codex",), platform="linux")
    target = tmp_path / "kairox.toml"
    original = '# my settings\n[policy]  # keep me\napproval = "on_request"\n\n[mcp_servers.mine]\ncommand = "x"\n'
    target.write_text(original)
    target.chmod(0o600)
    write_servers(target, plan.servers)
    text = target.read_text()
    assert text.startswith(original.rstrip("\n"))
    assert "# imported from codex: " in text
    assert (target.stat().st_mode & 0o777) == 0o600
    data = tomllib.loads(text)
    assert data["mcp_servers"]["codex-docs"]["headers"] == {"Authorization": "Bearer ${CODEX_DOCS_TOKEN}"}
    assert data["mcp_servers"]["codex-git"]["env"]["GITHUB_TOKEN"] == "${GITHUB_TOKEN}"
    with pytest.raises(ConfigError, match="already declared"):
        write_servers(target, plan.servers[:1])
    assert target.read_text() == text
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".kairox.toml") or p.suffix == ".tmp"]


# -- what kairox.toml accepts of what the import (or a hand-copied Codex entry) writes -----------


@pytest.mark.parametrize("spelling", ["http", "streamable-http", "streamable_http"])
def test_kairox_toml_accepts_the_http_spellings(spelling: str) -> None:
    from kairox.ext import structure
    from kairox_mcp import McpServerConfig

    config: McpServerConfig = structure(
        {"type": spelling, "url": "https://x.example/mcp"}, McpServerConfig, path="a", file="k.toml"
    )
    assert config.type == "streamable_http"


def test_kairox_toml_accepts_a_codex_url_only_entry() -> None:
    from kairox.ext import structure
    from kairox_mcp import McpServerConfig

    config: McpServerConfig = structure(
        {"url": "https://x.example/mcp"}, McpServerConfig, path="mcp_servers.a", file="k.toml"
    )
    assert config.type == "streamable_http"


def test_an_error_never_shows_the_value_of_an_env_or_header_entry(tmp_path: Path) -> None:
    doc = {
        "mcpServers": {
            "a": {"command": "x", "env": {"API_TOKEN": 98765432109876543210}},
            "b": {"url": "https://b.example/mcp", "headers": {"Authorization": ["Bearer", "kxLISTsecret000000001"]}},
        }
    }
    plan = _one(tmp_path, ".cursor/mcp.json", json.dumps(doc))
    errors = [str(e) for e in plan.errors]
    assert errors == [
        f"{tmp_path / 'home' / '.cursor' / 'mcp.json'}: mcpServers.a.env.API_TOKEN: expected a string, got a number",
        f"{tmp_path / 'home' / '.cursor' / 'mcp.json'}: mcpServers.b.headers.Authorization: expected a string, got a list",
    ]
    assert "98765432109876543210" not in "".join(errors) and "kxLISTsecret" not in "".join(errors)


# -- variables are found in linear time, where the old patterns found them --------------------

_OLD_KAIROX_VAR = re.compile(r"\$(?=\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\})")
_OLD_REFERENCE = re.compile(r"(?<!\$)\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}")
_OLD_BRACED = re.compile(r"\$\{([^}]*)\}")
_OLD_GEMINI = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([^}]*)\})")
_VARIABLE_TEXT = st.lists(st.sampled_from([*"${}:-AB_1 x", "${", "$${", "${A:-"]), max_size=12).map("".join)


def _found(matches: Iterable[re.Match[str]]) -> list[tuple[tuple[int, int], str | None, str | None]]:
    # Gemini's `$NAME` after the last `}` has an empty group 2 where the old pattern had None
    return [(m.span(), m.group(1), (m.group(2) or None) if m.re.groups > 1 else None) for m in matches]


@settings(max_examples=1000)
@given(_VARIABLE_TEXT)
def test_variables_are_found_where_the_old_patterns_found_them(text: str) -> None:
    assert escape_literal(text) == _OLD_KAIROX_VAR.sub("$$", text)
    assert _has_reference(text) == bool(_OLD_REFERENCE.search(text))
    assert _found(_variables(text, "claude")) == _found(_OLD_BRACED.finditer(text))
    assert _found(_variables(text, "gemini")) == _found(_OLD_GEMINI.finditer(text))


@pytest.mark.timeout(10)
def test_unclosed_variables_are_read_in_linear_time() -> None:
    # each unclosed `${` or `${A:-` was read to the end of the text again (and each `$` of
    # `${A:-${A:-...}` by the escape's lookahead even when closed): hours at 1 MB
    unclosed = "${A:-" * 200_000
    assert escape_literal(unclosed) == unclosed
    assert escape_literal(unclosed + "}") == unclosed.replace("$", "$$") + "}"
    assert not _has_reference(unclosed)
    for syntax in ("claude", "vscode", "gemini"):
        assert translate(unclosed, syntax, _scope(), "x") == unclosed
    assert translate("${" * 500_000 + "$HOME", "gemini", _scope(), "x") == "${" * 500_000 + "${HOME}"


def test_a_codex_key_of_many_parts_is_refused_naming_the_line() -> None:
    # checked before tomlkit reads the file, as kairox.toml is before tomllib reads it
    with pytest.raises(ValueError, match="line 2: a dotted key of more than 64 parts"):
        _loads_toml("[mcp_servers.a]\n" + ".".join(["a"] * 100_000) + " = 1\n")


def test_servers_under_another_clients_key_are_named_not_dropped(tmp_path: Path) -> None:
    # VS Code's `servers` in a Cursor file: Cursor reads only `mcpServers`, so nothing is
    # imported, but the plan says which servers it leaves and why
    doc = {"servers": {"gh": {"type": "stdio", "command": "python", "args": ["servers/github.py"]}}}
    plan = _one(tmp_path, ".cursor/mcp.json", json.dumps(doc))
    assert plan.servers == []
    (error,) = plan.errors
    assert (error.file, error.path) == (str(tmp_path / "home" / ".cursor" / "mcp.json"), "servers")
    assert "`mcpServers`" in error.message
    # a key of that name holding no server tables is someone else's business
    assert not _one(tmp_path / "b", ".cursor/mcp.json", json.dumps({"servers": {"x": 1}, "mcpServers": {}})).errors
