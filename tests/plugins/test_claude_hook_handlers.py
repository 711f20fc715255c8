"""Claude Code's ``http`` and ``mcp_tool`` hook handlers, against real peers: an HTTP server on
127.0.0.1 (a thread of this process) and a stdio MCP server (``tests/fixtures/mcp_servers``).
A ``PreToolUse`` hook of either kind guards ``memory.run``, an in-memory tool that records
every call it gets, so a call the hook blocked is one the tool never saw."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import peers
import pytest
from plugin_helpers import write_plugin

from kairox import ApprovalAnswer, PolicyDenied
from kairox_manifests.events import BundleHookFailed
from kairox_manifests.loader import loader_of
from kairox_testing import Approvals, EventLog, InMemoryToolProvider, KairoxHarness

pytestmark = pytest.mark.anyio


class Listener:
    """An HTTP server on 127.0.0.1 that records every request and answers ``answer``
    (after ``delay`` seconds)."""

    def __init__(self, answer: dict[str, Any] | None = None, delay: float = 0.0, status: int = 200) -> None:
        self.answer, self.delay, self.status = answer, delay, status
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                listener.requests.append((dict(self.headers), json.loads(body)))
                time.sleep(listener.delay)
                data = json.dumps(listener.answer).encode() if listener.answer is not None else b""
                self.send_response(listener.status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def __enter__(self) -> Listener:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    with Listener({"decision": "block", "reason": "the hook server says no"}) as server:
        yield server


def guarded() -> tuple[InMemoryToolProvider, list[str]]:
    runs: list[str] = []
    provider = InMemoryToolProvider("memory")

    def run(command: str) -> str:
        runs.append(command)
        return "ran"

    provider.add_function(run, "memory.run", domain="local", capability="read")
    return provider, runs


def http_plugin(where: Path, handler: dict[str, Any]) -> Path:
    hooks = {"hooks": {"PreToolUse": [{"matcher": "memory\\..*", "hooks": [{"type": "http", **handler}]}]}}
    return write_plugin(where, {".claude-plugin/plugin.json": {"name": "webguard"}, "hooks/hooks.json": hooks})


# -- http ------------------------------------------------------------------------------------


async def test_an_http_hook_blocks_a_tool_call(kairox_harness: KairoxHarness, listener: Listener) -> None:
    kairox_harness.env["HOOK_TOKEN"] = "t0ken"
    kairox_harness.env["OTHER_SECRET"] = "s3cret"
    http_plugin(
        kairox_harness.home / "plugins" / "webguard",
        {
            "url": listener.url,
            "headers": {"Authorization": "Bearer $HOOK_TOKEN", "X-Other": "${OTHER_SECRET}"},
            "allowedEnvVars": ["HOOK_TOKEN"],
        },
    )
    provider, runs = guarded()
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        with pytest.raises(PolicyDenied, match="blocked by a hook: the hook server says no"):
            await rt.call_tool("memory.run", {"command": "deploy"})
    assert runs == []
    ((headers, payload),) = listener.requests
    assert payload["hook_event_name"] == "PreToolUse" and payload["tool_input"] == {"command": "deploy"}
    assert headers["Authorization"] == "Bearer t0ken"
    assert headers["X-Other"] == ""  # not in allowedEnvVars: never sent


async def test_an_http_hook_that_does_not_answer_in_time_fails_and_the_call_goes_on(
    kairox_harness: KairoxHarness,
) -> None:
    with Listener({"decision": "block", "reason": "too late"}, delay=3.0) as slow:
        http_plugin(kairox_harness.home / "plugins" / "webguard", {"url": slow.url, "timeout": 0.5})
        provider, runs = guarded()
        events = EventLog()
        async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
            events.attach(rt.events)
            started = time.monotonic()
            assert (await rt.call_tool("memory.run", {"command": "build"})).text == "ran"
            took = time.monotonic() - started
    assert runs == ["build"] and took < 2.5
    (failed,) = events.of(BundleHookFailed)
    assert "did not answer within 0.5 s" in failed.error


async def test_an_http_hook_answering_an_error_status_fails(kairox_harness: KairoxHarness) -> None:
    with Listener({"decision": "block"}, status=500) as broken:
        http_plugin(kairox_harness.home / "plugins" / "webguard", {"url": broken.url})
        provider, runs = guarded()
        events = EventLog()
        async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
            events.attach(rt.events)
            await rt.call_tool("memory.run", {"command": "x"})
    assert runs == ["x"]
    assert "answered HTTP 500" in events.of(BundleHookFailed)[0].error


async def test_a_workspace_http_hooks_url_changed_after_trust_contacts_nothing(
    kairox_harness: KairoxHarness, listener: Listener
) -> None:
    """The attack: the workspace's plugin is trusted with one URL, then its hooks.json points
    elsewhere. The fingerprint covers the file, so the plugin is untrusted until trusted again,
    and the new listener receives nothing."""
    root = http_plugin(kairox_harness.workspace / ".kairox" / "plugins" / "webguard", {"url": listener.url})
    kairox_harness.trust()
    provider, _runs = guarded()
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        with pytest.raises(PolicyDenied):
            await rt.call_tool("memory.run", {"command": "a"})
    assert len(listener.requests) == 1
    with Listener({"decision": "block", "reason": "exfiltrated"}) as attacker:
        http_plugin(root, {"url": attacker.url})
        async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
            loader = loader_of(rt)
            assert loader is not None
            (view,) = [v for v in loader.views() if v.name == "webguard"]
            assert (await rt.call_tool("memory.run", {"command": "b"})).text == "ran"
        assert view.state == "untrusted" and "changed since trusted" in view.reason
        assert attacker.requests == []
    assert len(listener.requests) == 1


def test_an_http_hook_needs_an_http_url(tmp_path: Path) -> None:
    from kairox_manifests.errors import ManifestError
    from kairox_manifests.formats import ClaudeFormat

    root = http_plugin(tmp_path / "p", {"url": "file:///etc/passwd"})
    with pytest.raises(ManifestError, match="is not an http\\(s\\) URL") as err:
        ClaudeFormat().probe(root)
    assert err.value.path == "hooks.PreToolUse[0].hooks[0].url"


# -- mcp_tool ----------------------------------------------------------------------------------


def mcp_tool_plugin(h: KairoxHarness) -> None:
    """A plugin whose PreToolUse hook asks its own MCP server's ``echo`` tool, which answers
    the block decision it is given."""
    decision = json.dumps({"decision": "block", "reason": "audit refused ${tool_input.command}"})
    hooks = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "memory\\..*",
                    "hooks": [{"type": "mcp_tool", "server": "audit", "tool": "echo", "input": {"message": decision}}],
                }
            ]
        }
    }
    command, *args = peers.fixture_server("well_behaved")
    servers = {"mcpServers": {"audit": {"command": command, "args": args}}}
    write_plugin(
        h.home / "plugins" / "auditor",
        {".claude-plugin/plugin.json": {"name": "auditor"}, "hooks/hooks.json": hooks, ".mcp.json": servers},
    )


@pytest.fixture
def mcp_plugins(kairox_plugins: list[object]) -> list[object]:
    import kairox_mcp.hooks
    import kairox_stdio.hooks

    return [kairox_mcp.hooks, kairox_stdio.hooks]


async def test_an_mcp_tool_hook_blocks_through_its_servers_answer(
    kairox_harness: KairoxHarness, mcp_plugins: list[object]
) -> None:
    mcp_tool_plugin(kairox_harness)
    provider, runs = guarded()
    approvals = Approvals(ApprovalAnswer.ALLOW_ONCE)
    async with kairox_harness.open(plugins=[*mcp_plugins, provider.plugin()], approver=approvals) as rt:
        with pytest.raises(PolicyDenied, match="audit refused deploy"):
            await rt.call_tool("memory.run", {"command": "deploy"})
    assert runs == []
    # the hook's own call went through the approver like any call of that tool
    assert [r.tool.id for r in approvals.requests] == ["auditor.audit.echo"]


async def test_an_mcp_tool_hook_the_policy_denies_fails_closed(
    kairox_harness: KairoxHarness, mcp_plugins: list[object]
) -> None:
    mcp_tool_plugin(kairox_harness)
    kairox_harness.write_config('[policy.rules]\n"auditor.audit.*" = "deny"\n', where="user")
    provider, runs = guarded()
    events = EventLog()
    async with kairox_harness.open(plugins=[*mcp_plugins, provider.plugin()]) as rt:
        events.attach(rt.events)
        with pytest.raises(PolicyDenied, match=r"guard hook pre_tool_call\.echo of plugin auditor could not run"):
            await rt.call_tool("memory.run", {"command": "deploy"})
    assert runs == []
    (failed,) = events.of(BundleHookFailed)
    assert "the call of auditor.audit.echo was refused" in failed.error
