"""Philont code plugins: direct (in process) and worker (own process, filtered env, crash isolation)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from plugin_helpers import copy_fixture, write_plugin

from kairox import Block, PolicyDenied, ServerState, ToolError
from kairox_manifests.loader import BundleLoader, loader_of
from kairox_philont.context import PhilontContext
from kairox_philont.worker import BASE_ENV
from kairox_testing import KairoxHarness

pytestmark = pytest.mark.anyio


def philont_dir(h: KairoxHarness, user_home: Path, scope: str = "user") -> Path:
    return (user_home if scope == "user" else h.workspace) / ".philont" / "plugins"


def code_plugin(h: KairoxHarness, user_home: Path, plugin_id: str, body: str, sandbox: str = "worker") -> Path:
    """A user Philont plugin ``plugin_id`` whose ``index.py`` is ``body``."""
    manifest = {"id": plugin_id, "sandbox": sandbox}
    return write_plugin(philont_dir(h, user_home) / plugin_id, {"plugin.json": manifest, "index.py": body})


def loader(rt: Any) -> BundleLoader:
    found = loader_of(rt)
    assert found is not None
    return found


def state_of(rt: Any, name: str) -> tuple[str, str]:
    view = next(v for v in loader(rt).views() if v.name == name and v.state != "shadowed")
    return view.state, view.reason


async def test_direct_plugin_tools_and_hooks(kairox_harness: KairoxHarness, user_home: Path) -> None:
    copy_fixture("philont/weather", philont_dir(kairox_harness, user_home) / "weather")
    async with kairox_harness.open() as rt:
        forecast = rt.tools.get_spec("weather.forecast")
        assert (forecast.domain.value, forecast.capability.value) == ("network", "read")
        assert forecast.input_schema["required"] == ["city"]
        assert forecast.provider == "plugin:weather"
        assert (await rt.call_tool("weather.forecast", {"city": "Oslo"})).text == "Oslo: rain, 11 C (default units)"
        cities = await rt.call_tool("weather.cities", {})
        assert cities.structured == {"result": ["lima", "oslo", "paris"]}
        # a handler that raises is the tool's error result
        missing = await rt.call_tool("weather.forecast", {"city": "Mars"})
        assert missing.is_error and "no forecast for Mars" in missing.text
        # the plugin's pre_tool_call hook blocks
        with pytest.raises(PolicyDenied, match="Lima is embargoed"):
            await rt.call_tool("weather.forecast", {"city": "Lima"})
        view = next(v for v in loader(rt).views() if v.name == "weather")
        kinds = sorted((i.kind, i.name, i.loaded) for i in view.inventory)
    assert kinds == [
        ("hook", "post_tool_call", True),
        ("hook", "pre_tool_call", True),
        ("tool", "cities", True),
        ("tool", "forecast", True),
    ]


async def test_workspace_philont_plugin_wins_over_the_user_one(kairox_harness: KairoxHarness, user_home: Path) -> None:
    body = (
        "def register(ctx):\n    ctx.register_tool('where', lambda a: {where!r}, domain='local', capability='read')\n"
    )
    write_plugin(
        philont_dir(kairox_harness, user_home) / "p",
        {"plugin.json": {"id": "p"}, "index.py": body.format(where="user")},
    )
    write_plugin(
        philont_dir(kairox_harness, user_home, "workspace") / "p",
        {"plugin.json": {"id": "p"}, "index.py": body.format(where="workspace")},
    )
    async with kairox_harness.open() as rt:  # untrusted, the workspace copy never shadows the user's
        assert (await rt.call_tool("p.where", {})).text == "user"
    kairox_harness.trust()
    async with kairox_harness.open() as rt:
        assert (await rt.call_tool("p.where", {})).text == "workspace"


async def test_worker_environment_holds_only_required_variables(kairox_harness: KairoxHarness, user_home: Path) -> None:
    copy_fixture("philont/vault", philont_dir(kairox_harness, user_home) / "vault")
    kairox_harness.env.update(VAULT_TOKEN="tok-1234", DATABASE_PASSWORD="hunter2", AWS_SECRET_ACCESS_KEY="x")
    async with kairox_harness.open() as rt:
        names = (await rt.call_tool("vault.env_names", {})).structured
        assert names is not None
        allowed = {
            *BASE_ENV,
            "VAULT_TOKEN",
            "PYTHONUNBUFFERED",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONPATH",
            "KAIROX_PLUGIN_ROOT",
        }
        assert set(names["result"]) <= allowed
        assert "VAULT_TOKEN" in names["result"] and "DATABASE_PASSWORD" not in names["result"]
        # the handler printed to stdout: it went to stderr, the answer still parsed
        who = (await rt.call_tool("vault.whoami", {})).structured
        assert who is not None and who["user"] == "user-1234"
        import os

        assert who["pid"] != os.getpid()


async def test_worker_crash_fails_its_calls_not_the_runtime(kairox_harness: KairoxHarness, user_home: Path) -> None:
    copy_fixture("philont/vault", philont_dir(kairox_harness, user_home) / "vault")
    copy_fixture("philont/weather", philont_dir(kairox_harness, user_home) / "weather")
    kairox_harness.env["VAULT_TOKEN"] = "tok-1234"
    async with kairox_harness.open() as rt:
        pid = (await rt.call_tool("vault.whoami", {})).structured["pid"]  # type: ignore[index]
        with pytest.raises(ToolError) as info:
            await rt.call_tool("vault.crash", {})
        message = str(info.value)
        assert "exited with code 3" in message and "vault: fatal error, exiting" in message
        with pytest.raises(ToolError, match="exited with code 3"):
            await rt.call_tool("vault.whoami", {})
        # the rest of the runtime goes on
        assert (await rt.call_tool("weather.forecast", {"city": "Paris"})).text.startswith("Paris")
        worker = next(s for s in rt.status().servers if s.kind == "philont-worker")
        assert worker.state is ServerState.FAILED and "exited with code 3" in worker.detail
        async with rt.session():
            pass  # the dead worker's session hook fails as an event, the session still opens and closes
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


async def test_worker_calls_run_concurrently_and_match_by_id(kairox_harness: KairoxHarness, user_home: Path) -> None:
    body = (
        "import asyncio\n"
        "def register(ctx):\n"
        "    async def slow(args):\n"
        "        await asyncio.sleep(args['delay'])\n"
        "        return args['tag']\n"
        "    ctx.register_tool('slow', slow, domain='local', capability='read')\n"
    )
    code_plugin(kairox_harness, user_home, "w", body)
    results: dict[str, str] = {}
    async with kairox_harness.open() as rt:

        async def call(tag: str, delay: float) -> None:
            results[tag] = (await rt.call_tool("w.slow", {"tag": tag, "delay": delay})).text

        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(call, f"t{i}", 0.05 * (6 - i))
    assert results == {f"t{i}": f"t{i}" for i in range(6)}


async def test_worker_that_fails_to_register_reports_the_traceback(
    kairox_harness: KairoxHarness, user_home: Path
) -> None:
    code_plugin(kairox_harness, user_home, "broken", "import json\ndef register(ctx):\n    json.loads('{oops')\n")
    async with kairox_harness.open() as rt:
        state, reason = state_of(rt, "broken")
    assert state == "failed"
    assert "register() failed: JSONDecodeError" in reason and "index.py" in reason


async def test_worker_is_reaped_when_the_runtime_closes(kairox_harness: KairoxHarness, user_home: Path) -> None:
    copy_fixture("philont/vault", philont_dir(kairox_harness, user_home) / "vault")
    kairox_harness.env["VAULT_TOKEN"] = "tok-1234"
    async with kairox_harness.open() as rt:
        pid = (await rt.call_tool("vault.whoami", {})).structured["pid"]  # type: ignore[index]
        assert psutil.pid_exists(pid)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


async def test_an_unset_required_variable_is_absent_in_the_worker_and_a_warning(
    kairox_harness: KairoxHarness, user_home: Path
) -> None:
    """``requiresEnv`` is the worker's whitelist (Philont's docs), not a precondition: the
    plugin loads, the variable is simply not there, and ``plugin inspect`` says so."""
    copy_fixture("philont/vault", philont_dir(kairox_harness, user_home) / "vault")
    kairox_harness.env.pop("VAULT_TOKEN", None)
    kairox_harness.env["OTHER_SECRET"] = "s3cr3t"
    async with kairox_harness.open() as rt:
        assert state_of(rt, "vault")[0] == "loaded"
        names = (await rt.call_tool("vault.env_names", {})).structured
        assert "VAULT_TOKEN" not in names and "OTHER_SECRET" not in names  # type: ignore[operator]
        view = next(v for v in loader(rt).views() if v.name == "vault")
    [warning] = [p for p in view.problems if p.kind == "environment"]
    assert warning.path == "requiresEnv[0]" and warning.severity == "warning"
    assert "VAULT_TOKEN is not set" in warning.message and warning.file and warning.file.endswith("plugin.json")


async def test_disabled_tool_of_a_code_plugin_is_not_registered(kairox_harness: KairoxHarness, user_home: Path) -> None:
    from kairox_manifests.settings import SettingsStore

    copy_fixture("philont/vault", philont_dir(kairox_harness, user_home) / "vault")
    kairox_harness.env["VAULT_TOKEN"] = "tok-1234"
    SettingsStore(kairox_harness.workspace, kairox_harness.env).set_enabled("user", "vault", False, "tool/crash")
    async with kairox_harness.open() as rt:
        assert "vault.crash" not in rt.tools and "vault.whoami" in rt.tools
        view = next(v for v in loader(rt).views() if v.name == "vault")
        crash = next(i for i in view.inventory if i.name == "crash")
        assert (crash.enabled, crash.loaded) == (False, False)


async def test_worker_hooks_see_sessions(kairox_harness: KairoxHarness, user_home: Path) -> None:
    body = (
        "SEEN = []\n"
        "def register(ctx):\n"
        "    ctx.register_hook('on_session_start', lambda p: SEEN.append(('start', p['session_id'])))\n"
        "    ctx.register_hook('on_session_end', lambda p: SEEN.append(('end', p['reason'])))\n"
        "    ctx.register_hook('pre_tool_call', lambda p: {'arguments': {**p['arguments'], 'x': 'rewritten'}}\n"
        "                      if p['tool'] == 'h.seen' and p['arguments'].get('x') == 'raw' else None)\n"
        "    ctx.register_tool('seen', lambda a: {'seen': SEEN, 'x': a.get('x')}, domain='local', capability='read')\n"
    )
    code_plugin(kairox_harness, user_home, "h", body)
    async with kairox_harness.open() as rt:
        async with rt.session() as session:
            sid = session.id
        result = (await rt.call_tool("h.seen", {"x": "raw"})).structured
    assert result == {"seen": [["start", sid], ["end", "closed"]], "x": "rewritten"}


def test_context_api_validates_registrations(tmp_path: Path) -> None:
    ctx = PhilontContext("p", tmp_path, {})
    ctx.registerTool({"name": "a", "execute": lambda a: 1, "parameters": {"q": {"type": "string"}}})
    assert ctx.tools["a"].parameters == {"type": "object", "properties": {"q": {"type": "string"}}}
    bads: list[Callable[[], object]] = [
        lambda: ctx.register_tool("a", lambda a: 1),  # twice
        lambda: ctx.register_tool("has space", lambda a: 1),
        lambda: ctx.register_tool("t\n", lambda a: 1),  # `$` would match before the newline
        lambda: ctx.register_tool("b", lambda a: 1, domain="cloud"),
        lambda: ctx.register_tool("c", "not callable"),  # type: ignore[arg-type]
        lambda: ctx.register_hook("on_turn", lambda p: None),
    ]
    for bad in bads:
        with pytest.raises((ValueError, TypeError)):
            bad()


def test_hook_answers() -> None:
    from kairox_philont.adapt import hook_answer

    assert hook_answer("pre_tool_call", {"block": True}) == Block("blocked by a Philont plugin hook")
    assert hook_answer("pre_tool_call", {"decision": "block", "reason": "r"}) == Block("r")
    assert hook_answer("pre_tool_call", {"arguments": {"a": 1}}) == {"a": 1}
    assert hook_answer("pre_tool_call", "anything") is None
    assert hook_answer("post_tool_call", {"block": True}) is None


async def test_philont_section_turns_discovery_off(kairox_harness: KairoxHarness, user_home: Path) -> None:
    copy_fixture("philont/weather", philont_dir(kairox_harness, user_home) / "weather")
    kairox_harness.write_config("[philont]\nplugins = false\n", where="user")
    async with kairox_harness.open() as rt:
        assert rt.config.errors == []
        assert loader(rt).views() == [] and "weather.forecast" not in rt.tools


@pytest.mark.parametrize("sandbox", ["direct", "worker"])
async def test_a_relative_path_argument_reaches_the_handler_as_the_path_the_policy_checked(
    kairox_harness: KairoxHarness, user_home: Path, sandbox: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The handler gets the path the policy decided on, <workspace>/n.txt, not a relative
    n.txt it would resolve in its own working directory (the kairox process's, or the plugin
    root for a worker), where the policy never looked."""
    body = (
        "def register(ctx):\n"
        "    def note(args):\n"
        "        with open(args['path'], 'w') as fh:\n"
        "            fh.write(args['text'])\n"
        "        return args['path']\n"
        "    ctx.register_tool('note', note, domain='local', capability='write')\n"
    )
    code_plugin(kairox_harness, user_home, "notes", body, sandbox)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    async with kairox_harness.open() as rt:
        result = await rt.call_tool("notes.note", {"path": "n.txt", "text": "hi"})
    assert not result.is_error, result.text
    assert (kairox_harness.workspace / "n.txt").read_text() == "hi"
    assert not (elsewhere / "n.txt").exists()
    assert result.text == str(kairox_harness.workspace / "n.txt")
