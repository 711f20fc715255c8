"""JavaScript Philont plugins, run unchanged by real Node processes (kairox_philont/js/host.mjs)."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from philont_helpers import Install

from kairox import ImageContent, PolicyDenied, ServerState, ToolError
from kairox_manifests.loader import loader_of
from kairox_testing import KairoxHarness

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_leftovers")]


def state_of(rt: Any, name: str) -> tuple[str, str]:
    loader = loader_of(rt)
    assert loader is not None
    view = next(v for v in loader.views() if v.name == name and v.state != "shadowed")
    return view.state, view.reason


async def test_tools_of_every_shape(kairox_harness: KairoxHarness, install: Install) -> None:
    install("notes-js")
    async with kairox_harness.open() as rt:
        spec = rt.tools.get_spec("notes.echo")
        assert (spec.domain.value, spec.capability.value) == ("local", "read")  # plugin.json's defaults
        assert spec.input_schema["required"] == ["text"] and spec.provider == "plugin:notes"
        # `parameters` as a bare property map is normalised to an object schema
        assert rt.tools.get_spec("notes.shout").input_schema == {
            "type": "object",
            "properties": {"text": {"type": "string"}},
        }
        assert (await rt.call_tool("notes.echo", {"text": "hi"})).text == "echo: hi"
        shout = await rt.call_tool("notes.shout", {"text": "hi"})
        assert shout.text == "HI\n!" and not shout.is_error
        pixel = await rt.call_tool("notes.pixel", {})
        image = next(b for b in pixel.content if isinstance(b, ImageContent))
        assert image.mime_type == "image/png" and base64.b64decode(image.data).startswith(b"\x89PNG")
        assert pixel.text.startswith("a pixel")
        listed = await rt.call_tool("notes.events", {})
        assert listed.structured == {"result": [["post", "echo: hi"]]}  # the post_tool_call hook saw it


async def test_a_throwing_tool_is_an_error_result_with_the_plugin_stack(
    kairox_harness: KairoxHarness, install: Install
) -> None:
    install("notes-js")
    async with kairox_harness.open() as rt:
        result = await rt.call_tool("notes.fail", {})
        assert result.is_error
        assert result.text.startswith("RangeError: the notes plugin failed on purpose")
        assert "deepInside" in result.text and "index.js" in result.text
        assert len(result.text) < 5000
        assert (await rt.call_tool("notes.echo", {"text": "after"})).text == "echo: after"


async def test_the_policy_decides_with_the_declared_capability(kairox_harness: KairoxHarness, install: Install) -> None:
    install("notes-js")
    async with kairox_harness.open() as rt:
        spec = rt.tools.get_spec("notes.unchecked")
        assert (spec.domain.value, spec.capability.value) == ("system", "execute")
        with pytest.raises(PolicyDenied):
            await rt.call_tool("notes.unchecked", {})


async def test_hooks_block_rewrite_and_observe(kairox_harness: KairoxHarness, install: Install) -> None:
    install("notes-js")
    async with kairox_harness.open() as rt:
        with pytest.raises(PolicyDenied, match="notes says no"):
            await rt.call_tool("notes.echo", {"text": "forbidden"})
        assert (await rt.call_tool("notes.echo", {"text": "rewrite-me"})).text == "echo: rewritten"
        async with rt.session() as session:
            sid = session.id
        seen = (await rt.call_tool("notes.events", {})).structured
    assert seen == {"result": [["post", "echo: rewritten"], ["start", sid], ["end", "closed"]]}


async def test_console_noise_never_breaks_the_protocol(kairox_harness: KairoxHarness, install: Install) -> None:
    install("notes-js")
    async with kairox_harness.open() as rt:
        noisy = await rt.call_tool("notes.noisy", {})
        assert noisy.structured == {"json": True, "items": [1, 2, 3]}
        assert (await rt.call_tool("notes.echo", {"text": "x"})).text == "echo: x"
        node = next(s for s in rt.status().servers if s.name == "notes (node)")
        assert node.state is ServerState.READY and node.kind == "philont-node"


async def test_huge_prints_stay_bounded_and_apart_from_the_protocol(
    kairox_harness: KairoxHarness, install: Install
) -> None:
    """8 MB written to fd 1 directly (past the host's console redirection) and 8 MB through
    console.log: both are diagnostics, kept as a bounded tail; the call's answer arrives."""
    from kairox_philont import supervisor

    install("notes-js")
    size = 8 * 1024 * 1024
    async with kairox_harness.open() as rt:
        assert (await rt.call_tool("notes.flood", {"size": size})).text == "still talking"
        assert (await rt.call_tool("notes.echo", {"text": "ok"})).text == "echo: ok"
        from kairox_philont.javascript import _shared

        host = _shared[rt].host
        assert host is not None
        tail = host._attempt.stderr
        for _ in range(500):  # the output pipe is read concurrently with the answer
            if tail.total_bytes > size:
                break
            await anyio.sleep(0.01)
        # (fs.writeSync on the non-blocking pipe may write part of its 8 MB: that is Node's)
        assert tail.total_bytes > size
        assert sum(len(line) + 1 for line in tail.lines()) <= 2 * supervisor.MAX_STDERR
        assert host._attempt.reader.oversized == 0


async def test_an_answer_over_the_limit_fails_that_call_only(kairox_harness: KairoxHarness, install: Install) -> None:
    install("notes-js")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("kairox_philont.worker.MAX_LINE", 4096)
        async with kairox_harness.open() as rt:
            result = await rt.call_tool("notes.echo", {"text": "z" * 10_000})
            assert result.is_error and "longer than the limit" in result.text
            assert (await rt.call_tool("notes.echo", {"text": "short"})).text == "echo: short"


async def test_cancelling_a_call_aborts_the_plugin_signal(
    kairox_harness: KairoxHarness, install: Install, tmp_path: Path
) -> None:
    install("notes-js")
    marker = tmp_path / "aborted"
    async with kairox_harness.open() as rt:
        with anyio.move_on_after(0.3):
            await rt.call_tool("notes.wait", {"marker": str(marker)})
        for _ in range(500):  # the plugin writes it in its own process
            if marker.exists():
                break
            await anyio.sleep(0.02)
        assert marker.read_text() == "aborted"
        assert (await rt.call_tool("notes.echo", {"text": "next"})).text == "echo: next"


async def test_esm_and_cjs_plugins_share_one_node_process(kairox_harness: KairoxHarness, install: Install) -> None:
    install("notes-js")
    install("esm-js")
    async with kairox_harness.open() as rt:
        assert (await rt.call_tool("esm.where", {})).text == "esm in esm-js (undefined)"
        notes_pid = (await rt.call_tool("notes.pid", {})).structured
        assert notes_pid is not None and notes_pid["pid"] != os.getpid()
        rows = {s.name: s for s in rt.status().servers if s.kind == "philont-node"}
        assert set(rows) == {"notes (node)", "esm (node)"}
        assert rows["notes (node)"].detail == rows["esm (node)"].detail == f"pid {notes_pid['pid']}"
        pid = notes_pid["pid"]
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


async def test_worker_sees_only_its_required_variables(kairox_harness: KairoxHarness, install: Install) -> None:
    install("secrets-js")
    kairox_harness.env.update(SECRET_TOKEN="tok-9876", DATABASE_PASSWORD="hunter2", OPENAI_API_KEY="sk-x")
    async with kairox_harness.open() as rt:
        names = (await rt.call_tool("secrets.env_names", {})).structured
        assert names is not None
        from kairox_philont.worker import BASE_ENV

        assert set(names["result"]) <= {*BASE_ENV, "SECRET_TOKEN", "KAIROX_PLUGIN_ROOT"}
        assert "SECRET_TOKEN" in names["result"]
        assert "DATABASE_PASSWORD" not in names["result"] and "OPENAI_API_KEY" not in names["result"]
        assert (await rt.call_tool("secrets.token_tail", {})).text == "9876"
        worker = next(s for s in rt.status().servers if s.name == "secrets (worker)")
        assert worker.kind == "philont-worker" and worker.state is ServerState.READY


async def test_a_register_that_throws_fails_that_plugin_with_its_stack(
    kairox_harness: KairoxHarness, user_home: Path, install: Install
) -> None:
    install("notes-js")
    bad = user_home / ".philont" / "plugins" / "bad"
    bad.mkdir(parents=True)
    (bad / "plugin.json").write_text('{"id": "bad"}')
    (bad / "index.js").write_text(
        "exports.register = (ctx) => { ctx.registerTool({name: 'has space', execute: () => 1}); };\n"
    )
    async with kairox_harness.open() as rt:
        state, reason = state_of(rt, "bad")
        assert state == "failed"
        assert "register() failed: Error: tool name" in reason and "index.js" in reason
        assert (await rt.call_tool("notes.echo", {"text": "fine"})).text == "echo: fine"


async def test_without_node_the_js_plugins_fail_and_the_others_load(
    kairox_harness: KairoxHarness, install: Install, tmp_path: Path
) -> None:
    install("notes-js")
    install("secrets-js")
    install("counter-py")
    empty = tmp_path / "no-node-here"
    empty.mkdir()
    kairox_harness.env.update(PATH=str(empty), SECRET_TOKEN="t")
    async with kairox_harness.open() as rt:
        for name in ("notes", "secrets"):
            state, reason = state_of(rt, name)
            assert state == "failed" and "Node.js" in reason and "'node' was not found on PATH" in reason
        assert state_of(rt, "counter")[0] == "loaded"
        assert (await rt.call_tool("counter.count", {})).structured["count"] == 1  # type: ignore[index]
        with pytest.raises(ToolError):
            await rt.call_tool("notes.echo", {"text": "x"})
