"""A Codex plugin's MCP servers read with Codex's server schema (``[mcp_servers.NAME]``):
headers from values and from variables, the bearer token variable, timeouts, tool filters and
a ``cwd`` relative to the plugin root reach the server; every other key is reported naming the
file and field. The headers and the tool filters are checked against real servers."""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plugin_helpers import real, write_plugin
from shared_helpers import serve_asgi

from kairox import ApprovalAnswer
from kairox.errors import ConfigError
from kairox_manifests.errors import ManifestError
from kairox_manifests.formats import CodexFormat
from kairox_manifests.trust import bundle_item
from kairox_mcp import codex_server, manager_of
from kairox_testing import Approvals, KairoxHarness

BUNDLES = Path(__file__).resolve().parent.parent / "fixtures" / "bundles"
MCP_SERVERS = Path(__file__).resolve().parent.parent / "fixtures" / "mcp_servers"
FIXTURE = BUNDLES / "codex" / "codex-servers"


@pytest.fixture
def kairox_plugins() -> list[object]:
    import kairox_manifests.hooks
    import kairox_mcp.hooks
    import kairox_stdio.hooks
    import kairox_streamable_http.hooks

    return [kairox_manifests.hooks, kairox_mcp.hooks, kairox_stdio.hooks, kairox_streamable_http.hooks]


@pytest.fixture
def kairox_env(kairox_env: dict[str, str]) -> dict[str, str]:
    kairox_env.update(TRACKER_WORKSPACE="ws-7", TRACKER_TOKEN="tok-s3cret")
    return kairox_env


def _probe(root: Path) -> Any:
    m = CodexFormat().probe(root)
    assert m is not None
    return m


# -- reading ------------------------------------------------------------------------------------


def test_every_codex_key_is_taken_over_or_reported_with_file_and_field() -> None:
    m = _probe(FIXTURE)
    mcp_json = str(real(FIXTURE) / ".mcp.json")
    tracker = m.contribution("mcp_server/tracker")
    assert tracker.schema == "kairox"
    assert tracker.config == {
        "type": "streamable_http",
        "url": "https://tracker.example.com/mcp",
        "headers": {
            "X-Client": "kairox-tests",
            "X-Workspace": "${TRACKER_WORKSPACE}",
            "Authorization": "Bearer ${TRACKER_TOKEN}",
        },
        "oauth": {"client_id": "kairox-tests", "scopes": ["issues:read"]},
        "startup_timeout": 12,
        "tool_timeout": 45,
    }
    catalog = m.contribution("mcp_server/catalog")
    assert catalog.config == {
        "type": "stdio",
        "command": "catalog-server",
        "args": ["--stdio"],
        "env": {"CATALOG_MODE": "offline"},
        "env_vars": ["LANG", "CATALOG_HOME"],
        "cwd": str(real(FIXTURE) / "servers"),  # Codex: relative to the plugin root
        "startup_timeout": 20,
        "enabled": False,
        "required": True,
        "enabled_tools": ["search", "fetch"],
        "disabled_tools": ["fetch"],
    }
    assert {(p.file, p.path) for p in m.problems} == {
        (mcp_json, "mcpServers.tracker.oauth.callbackPort"),
        (mcp_json, "mcpServers.tracker.supports_parallel_tool_calls"),
        (mcp_json, "mcpServers.tracker.default_tools_approval_mode"),
        (mcp_json, "mcpServers.catalog.tools"),
        (mcp_json, "mcpServers.catalog.alwaysAllow"),
    }


def test_a_cwd_that_leaves_the_plugin_is_refused_naming_the_field(tmp_path: Path) -> None:
    root = write_plugin(
        tmp_path / "p",
        {
            ".codex-plugin/plugin.json": {"name": "p"},
            ".mcp.json": {"mcpServers": {"s": {"command": "x", "cwd": "../"}}},
        },
    )
    with pytest.raises(ManifestError) as info:
        CodexFormat().probe(root)
    assert (info.value.file, info.value.path) == (str(real(root) / ".mcp.json"), "mcpServers.s.cwd")


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"url": "https://x.example/mcp", "bearer_token": "abc"}, "bearer_token"),
        ({"command": "x", "http_headers": {"A": "b"}}, "http_headers"),
        ({"url": "https://x.example/mcp", "env": {"A": "b"}}, "env"),
        ({"url": "https://x.example/mcp", "env_http_headers": {"A": "not a name"}}, "env_http_headers.A"),
        ({"command": "x", "startup_timeout_sec": "soon"}, "startup_timeout_sec"),
        ({"command": "x", "enabled_tools": ["a", 3]}, "enabled_tools[1]"),
        ({"args": ["x"]}, ""),
    ],
)
def test_what_codex_refuses_fails_the_plugin_naming_file_and_field(
    tmp_path: Path, entry: dict[str, Any], field: str
) -> None:
    root = write_plugin(tmp_path / "p", {".codex-plugin/plugin.json": {"name": "p", "mcpServers": {"s": entry}}})
    with pytest.raises(ManifestError) as info:
        CodexFormat().probe(root)
    assert info.value.file == str(root / ".codex-plugin" / "plugin.json")
    assert info.value.path == ("mcpServers.s." + field if field else "mcpServers.s")


def test_trust_names_the_variables_the_headers_read(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    root = workspace / "plugins" / "codex-servers"
    shutil.copytree(FIXTURE, root)
    item = bundle_item(_probe(root), workspace, env={})
    assert {"TRACKER_WORKSPACE", "TRACKER_TOKEN", "LANG", "CATALOG_HOME"} <= set(item.env_names)


# -- against real servers -------------------------------------------------------------------------


class _Recorder:
    """ASGI middleware noting the headers of every request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.headers: list[dict[str, str]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.headers.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)


@contextlib.asynccontextmanager
async def _recorded_server() -> AsyncIterator[tuple[int, _Recorder]]:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("recorded", version="1")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    recorder = _Recorder(server.streamable_http_app())
    async with serve_asgi(recorder) as port:
        yield port, recorder


@pytest.mark.anyio
@pytest.mark.integration
async def test_headers_from_values_and_from_variables_reach_the_server(kairox_harness: KairoxHarness) -> None:
    async with _recorded_server() as (port, recorder):
        entry = {
            "url": f"http://127.0.0.1:{port}/mcp",
            "http_headers": {"X-Client": "kairox-tests"},
            "env_http_headers": {"X-Workspace": "TRACKER_WORKSPACE"},
            "bearer_token_env_var": "TRACKER_TOKEN",
            "tool_timeout_sec": 9,
        }
        write_plugin(
            kairox_harness.home / "plugins" / "hdr",
            {".codex-plugin/plugin.json": {"name": "hdr"}, ".mcp.json": {"mcpServers": {"rec": entry}}},
        )
        async with kairox_harness.open(approver=Approvals(ApprovalAnswer.ALLOW_ONCE)) as rt:
            assert (await rt.call_tool("hdr.rec.add", {"a": 2, "b": 3})).text == "5"
            assert manager_of(rt).server("hdr:rec").config.tool_timeout_s == 9
            assert "tok-s3cret" not in repr(manager_of(rt).status())
    assert recorder.headers
    for headers in recorder.headers:
        assert headers["x-client"] == "kairox-tests"
        assert headers["x-workspace"] == "ws-7"
        assert headers["authorization"] == "Bearer tok-s3cret"


@pytest.mark.anyio
@pytest.mark.integration
async def test_tool_filters_and_a_relative_cwd_reach_a_real_server(kairox_harness: KairoxHarness) -> None:
    root = kairox_harness.home / "plugins" / "names"
    (root / "servers").mkdir(parents=True)
    for name in ("named_tools.py", "_raw.py"):
        shutil.copy(MCP_SERVERS / name, root / "servers" / name)
    entry = {
        "command": sys.executable,
        "args": ["named_tools.py", "codex", "alpha", "beta", "gamma"],  # found only in ./servers
        "cwd": "./servers",
        "enabled_tools": ["alpha", "beta"],
        "disabled_tools": ["beta"],
        "startup_timeout_sec": 25,
    }
    write_plugin(root, {".codex-plugin/plugin.json": {"name": "names"}, ".mcp.json": {"mcpServers": {"n": entry}}})
    async with kairox_harness.open(approver=Approvals(ApprovalAnswer.ALLOW_ONCE)) as rt:
        assert {t.id for t in rt.tools.by_provider("mcp:names:n")} == {"names.n.alpha"}
        assert (await rt.call_tool("names.n.alpha", {})).text == "codex:alpha"
        assert manager_of(rt).server("names:n").config.startup_timeout_s == 25


# -- any mapping of Codex keys ---------------------------------------------------------------------

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 100_000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.lists(st.one_of(st.text(max_size=6), st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=6), st.one_of(st.text(max_size=6), st.integers()), max_size=3),
)
_KEYS = st.sampled_from(
    [
        "command",
        "args",
        "env",
        "env_vars",
        "cwd",
        "url",
        "http_headers",
        "env_http_headers",
        "bearer_token_env_var",
        "bearer_token",
        "headers",
        "startup_timeout_sec",
        "startup_timeout_ms",
        "tool_timeout_sec",
        "enabled",
        "required",
        "enabled_tools",
        "disabled_tools",
        "scopes",
        "oauth",
        "oauth_resource",
        "tools",
        "type",
        "name",
        "supports_parallel_tool_calls",
        "default_tools_approval_mode",
        "experimental_environment",
        "disabled",
        "timeout",
    ]
)
_ENTRIES = st.dictionaries(_KEYS, _VALUES, max_size=8).map(
    lambda d: (
        {**d, "command": "srv"} if len(d) % 3 == 0 else {**d, "url": "https://x.example/mcp"} if len(d) % 3 == 1 else d
    )
)
#: where a taken-over key lands in the kairox entry
_LANDS = {
    "http_headers": "headers",
    "env_http_headers": "headers",
    "bearer_token_env_var": "headers",
    "startup_timeout_sec": "startup_timeout",
    "startup_timeout_ms": "startup_timeout",
    "tool_timeout_sec": "tool_timeout",
    "scopes": "oauth",
    "type": "type",
}


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300, deadline=None)
@given(_ENTRIES)
def test_any_codex_entry_is_a_server_whose_every_key_is_kept_or_reported_or_an_error_naming_the_field(
    entry: dict[str, Any],
) -> None:
    def names(path: str, key: str) -> bool:
        field = f"mcpServers.s.{key}"
        return path == field or path.startswith((field + ".", field + "["))

    try:
        server = codex_server(entry, file="p/.mcp.json", path="mcpServers.s")
    except ConfigError as exc:
        assert exc.file == "p/.mcp.json"
        assert exc.path == "mcpServers.s" or any(names(exc.path, k) for k in entry)
        return
    assert all(p.file == "p/.mcp.json" for p in server.problems)
    for key, value in entry.items():
        if value is None or value == [] or value == {}:
            continue  # nothing to keep
        if any(names(p.path, key) for p in server.problems):
            continue
        if key == "type":
            continue  # the transport itself: stdio for a command, streamable HTTP for a URL
        assert _LANDS.get(key, key) in server.fields, key
