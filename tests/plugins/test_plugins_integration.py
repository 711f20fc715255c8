"""Every plugin format in one runtime, with real peers.

A Claude plugin (skills, a command, hooks.json, .mcp.json -> mcp-server-time), a Codex
plugin (skills, an MCP server written with the mcp SDK), a Kairox plugin (hook scripts in
JavaScript and Python, an LSP server -> pylsp), Philont direct and worker plugins, and a
broken plugin, all loaded by one runtime; their tools are called and their hooks fire.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import peers
import pytest
from plugin_helpers import FIXTURES, copy_fixture, write_plugin

from kairox import ApprovalAnswer, ContextPiece, PolicyDenied, ServerState, ToolError
from kairox_manifests.events import BundleHookFailed, BundleHookRan
from kairox_manifests.loader import loader_of
from kairox_testing import Approvals, EventLog, InMemoryToolProvider, KairoxHarness

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

PEERS = ("node", "mcp-server-time", "pylsp")


@pytest.fixture
def kairox_plugins() -> list[object]:
    import kairox_lsp.hooks
    import kairox_manifests.hooks
    import kairox_mcp.hooks
    import kairox_philont.hooks
    import kairox_skills.hooks
    import kairox_stdio.hooks

    return [
        kairox_manifests.hooks,
        kairox_philont.hooks,
        kairox_mcp.hooks,
        kairox_stdio.hooks,
        kairox_lsp.hooks,
        kairox_skills.hooks,
    ]


def shell_tool() -> InMemoryToolProvider:
    """A stand-in ``shell.exec`` (echoes, runs nothing) so Claude's ``Bash`` matcher has a target."""
    provider = InMemoryToolProvider("fake-shell")
    provider.add_function(lambda command: f"would run: {command}", "shell.exec", domain="local", capability="read")
    return provider


async def test_all_formats_in_one_runtime(kairox_harness: KairoxHarness, user_home: Path) -> None:
    missing = [p for p in PEERS if shutil.which(p, path=kairox_harness.env.get("PATH")) is None]
    if missing:
        pytest.skip(f"peers not installed: {', '.join(missing)}")
    h = kairox_harness
    ws_plugins = h.workspace / ".kairox" / "plugins"
    copy_fixture("claude/code-review", ws_plugins / "code-review")
    copy_fixture("kairox/docs-helper", ws_plugins / "docs-helper")
    copy_fixture("codex/release-notes", h.home / "plugins" / "release-notes")
    copy_fixture("broken/bad-hooks", h.home / "plugins" / "bad-hooks")
    copy_fixture("philont/weather", h.workspace / ".philont" / "plugins" / "weather")
    copy_fixture("philont/vault", user_home / ".philont" / "plugins" / "vault")
    h.env["VAULT_TOKEN"] = "vault-token-9876"
    # the workspace's bundles are items of its trust (`kairox trust`); the user's need none
    bundles = sorted(k for k in h.trust() if k.startswith("bundle:"))
    assert bundles == [
        "bundle:.kairox/plugins/code-review",
        "bundle:.kairox/plugins/docs-helper",
        "bundle:.philont/plugins/weather",
    ]
    approvals = Approvals(ApprovalAnswer.ALLOW_ONCE)

    async with h.open(plugins=[shell_tool().plugin()], approver=approvals) as rt:
        log = EventLog(rt.events)
        assert approvals.requests == []  # trusted bundles load without asking the approver
        loader = loader_of(rt)
        assert loader is not None
        states = {v.name: v.state for v in loader.views()}
        assert states == {
            "code-review": "loaded",
            "docs-helper": "loaded",
            "release-notes": "loaded",
            "bad-hooks": "failed",
            "weather": "loaded",
            "vault": "loaded",
        }
        servers = {(s.kind, s.name): s for s in rt.status().servers}
        assert servers[("mcp", "code-review:time")].state is ServerState.READY
        assert servers[("mcp", "release-notes:notes")].state is ServerState.READY
        assert servers[("lsp", "docs-helper:pylsp")].state is ServerState.READY
        assert servers[("philont-worker", "vault (worker)")].state is ServerState.READY

        # skills (and the Claude command) are in the skill registry, namespaced
        names = {s.name for s in rt.skills.skills()}
        assert {
            "code-review:review-diff",
            "code-review:security-audit",
            "code-review:review",
            "release-notes:changelog",
            "docs-helper:explain-module",
        } <= names

        async with rt.session() as session:
            # pre_turn: the Claude shell hook and the Kairox JavaScript hook both add context
            outcomes = await rt.dispatch.pre_turn(session, "summarise the docs please")
            pieces = {o.source: o.value for o in outcomes if isinstance(o.value, ContextPiece)}
            assert "grouped as blocking" in pieces["plugin:code-review"].text
            assert pieces["plugin:docs-helper"].text == "docs-helper: the docs live in docs/ (prompt had 4 words)"

            # MCP tools of two plugins (real servers)
            now = await session.call_tool("code-review.time.get_current_time", {"timezone": "UTC"})
            assert not now.is_error and "UTC" in now.text
            await session.call_tool("release-notes.notes.add_note", {"text": "Plugins load from every format"})
            notes = await session.call_tool("release-notes.notes.render_notes", {})
            assert notes.text.splitlines() == ["# Release notes", "- Plugins load from every format"]

            # Philont direct: the Kairox Python guard rewrites (adds units) and blocks; the plugin's own hook blocks too
            assert (
                await session.call_tool("weather.forecast", {"city": "Paris"})
            ).text == "Paris: sunny, 24 C (metric)"
            with pytest.raises(PolicyDenied, match="Atlantis is not a real city"):
                await session.call_tool("weather.forecast", {"city": "Atlantis"})
            with pytest.raises(PolicyDenied, match="Lima is embargoed"):
                await session.call_tool("weather.forecast", {"city": "Lima"})

            # Claude PreToolUse guard (matcher "Bash") on shell.exec
            assert (await session.call_tool("shell.exec", {"command": "ls"})).text == "would run: ls"
            with pytest.raises(PolicyDenied, match="recursive deletes are not allowed"):
                await session.call_tool("shell.exec", {"command": "rm -rf /"})

            # Philont worker: its own process, filtered environment; a crash fails only its calls
            who = (await session.call_tool("vault.whoami", {})).structured
            assert who is not None and who["user"] == "user-9876"
            with pytest.raises(ToolError, match="exited with code 3"):
                await session.call_tool("vault.crash", {})
            assert (await session.call_tool("weather.cities", {})).structured == {"result": ["lima", "oslo", "paris"]}
            sid = session.id

        # hooks that write files ran: session_start (node .mjs), post_tool_call (Python and Claude sh)
        assert (h.workspace / ".docs-helper-sessions").read_text().split() == [sid]
        audit = [json.loads(line) for line in (h.workspace / ".docs-helper-audit.jsonl").read_text().splitlines()]
        assert {"tool": "weather.forecast", "is_error": False} in audit
        assert {"tool": "code-review.time.get_current_time", "is_error": False} in audit
        claude_audit = [
            json.loads(line) for line in (h.workspace / ".code-review-audit.jsonl").read_text().splitlines()
        ]
        assert {e["tool_name"] for e in claude_audit} >= {"Bash", "mcp__code-review_time__get_current_time"}
        assert all(e["hook_event_name"] == "PostToolUse" for e in claude_audit)
        ran = {(e.plugin, e.event) for e in log.of(BundleHookRan)}
        assert ("code-review", "pre_tool_call") in ran and ("docs-helper", "post_tool_call") in ran
        assert log.of(BundleHookFailed) == []


NOTES_SERVER = FIXTURES / "codex" / "release-notes" / "mcp" / "notes_server.py"


def notes_bundle(harness: KairoxHarness, name: str, **manifest: Any) -> Path:
    """A user bundle ``name`` whose MCP server ``notes`` is the mcp SDK's notes server of the
    release-notes fixture (tools ``<name>.notes.add_note`` and ``<name>.notes.render_notes``)."""
    servers = {"notes": {"command": "python", "args": [str(NOTES_SERVER)]}}
    plugin = {".kairox-plugin/plugin.json": {"name": name, "mcpServers": servers, **manifest}}
    return write_plugin(harness.home / "plugins" / name, plugin)


async def test_plugin_permissions_reach_its_mcp_tools(kairox_harness: KairoxHarness) -> None:
    notes_bundle(kairox_harness, "scoped", permissions={"tools": ["scoped.notes.render_notes"]})
    approvals = Approvals(ApprovalAnswer.ALLOW_ONCE)  # MCP tools without annotations ask (system/execute)
    async with kairox_harness.open(approver=approvals) as rt:
        assert {"scoped.notes.add_note", "scoped.notes.render_notes"} <= {t.id for t in rt.tools.specs()}
        assert (await rt.call_tool("scoped.notes.render_notes", {})).text == "# Notes"
        with pytest.raises(PolicyDenied, match="not among the tools its plugin's permissions allow"):
            await rt.call_tool("scoped.notes.add_note", {"text": "x"})


async def test_a_bundle_routed_into_a_running_runtime_starts_its_server_and_its_undo_stops_it(
    kairox_harness: KairoxHarness, no_leftovers: None
) -> None:
    from kairox_manifests.model import Contribution
    from kairox_manifests.routing import route_mcp_servers
    from kairox_mcp import manager_of

    config = {"command": sys.executable, "args": [str(NOTES_SERVER)]}
    notes = Contribution("mcp_server", "notes", NOTES_SERVER.parent, config)
    async with kairox_harness.open(approver=Approvals(ApprovalAnswer.ALLOW_ONCE)) as rt:
        routed = await route_mcp_servers(rt, "late", [notes])  # the manager runs: the server starts now
        assert (routed.loaded, routed.failed) == (["mcp_server/notes"], {})
        mcp = manager_of(rt)
        assert mcp.server("late:notes").state is ServerState.READY
        assert {t.id for t in rt.tools.by_provider("mcp:late:notes")} == {
            "late.notes.add_note",
            "late.notes.render_notes",
        }
        assert (await rt.call_tool("late.notes.render_notes", {})).text == "# Notes"
        for undo in routed.undo:
            await undo()
        assert rt.tools.by_provider("mcp:late:notes") == []
        assert "late:notes" not in {s.name for s in mcp.status()}


async def test_unloading_a_bundle_stops_its_mcp_server(kairox_harness: KairoxHarness, no_leftovers: None) -> None:
    from kairox_mcp import manager_of

    notes_bundle(kairox_harness, "jot")
    async with kairox_harness.open() as rt:
        mcp = manager_of(rt)
        pid = mcp.server("jot:notes").diagnostics.pid
        assert mcp.server("jot:notes").state is ServerState.READY and "jot.notes.render_notes" in rt.tools
        assert await loader_of(rt).unload("jot")  # type: ignore[union-attr]
        assert "jot.notes.render_notes" not in rt.tools and "jot:notes" not in {s.name for s in mcp.status()}
        assert pid is not None and peers.alive([pid]) == []


async def test_plugin_permissions_narrower_than_the_policy_ask_the_approver_for_its_mcp_tools(
    kairox_harness: KairoxHarness,
) -> None:
    from kairox.ext import SandboxPolicy

    notes_bundle(kairox_harness, "narrow", permissions={"sandboxPolicy": "read_only"})
    kairox_harness.write_config('[policy.rules]\n"narrow.notes.*" = "allow"\n', where="user")  # the user's: allow
    approvals = Approvals(ApprovalAnswer.DENY)
    async with kairox_harness.open(approver=approvals) as rt:
        with pytest.raises(PolicyDenied, match="the user declined \\(a hook asks: the plugin's permissions") as info:
            await rt.call_tool("narrow.notes.render_notes", {})
        assert "read_only" in str(info.value)
        [asked] = approvals.requests  # once, the reason naming the plugin's permissions
        assert SandboxPolicy.READ_ONLY.value in asked.reason and "its plugin declares" in asked.reason
        approvals.answer = ApprovalAnswer.ALLOW_ONCE
        assert (await rt.call_tool("narrow.notes.render_notes", {})).text == "# Notes"
        assert len(approvals.requests) == 2


async def test_an_approver_that_fails_at_the_bundle_permission_prompt_blocks_the_call(
    kairox_harness: KairoxHarness,
) -> None:
    import click

    notes_bundle(kairox_harness, "narrow", permissions={"sandboxPolicy": "read_only"})
    kairox_harness.write_config('[policy.rules]\n"narrow.notes.*" = "allow"\n', where="user")

    def ctrl_c(request: object) -> object:
        raise click.Abort()  # what tty_approver's prompt raises on Ctrl-C or EOF

    async with kairox_harness.open(approver=ctrl_c) as rt:
        with pytest.raises(PolicyDenied, match="the approver failed"):
            await rt.call_tool("narrow.notes.render_notes", {})
