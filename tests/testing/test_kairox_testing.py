"""kairox_testing: the pytest plugin plugin authors get (fixtures, harness, in-memory provider)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kairox import FunctionTool, RegistrationError, Runtime, ToolsChanged, ToolSpec
from kairox_testing import EventLog, InMemoryToolProvider, KairoxHarness, make_plugin

pytest_plugins = ["pytester"]

AUTHOR_TESTS = '''
import json
import pytest
from kairox import Block, ToolCall, hookimpl
from kairox_testing import Approvals

class GuardPlugin:
    @hookimpl
    def kairox_pre_tool_call(self, call: ToolCall):
        if call.arguments.get("word") == "forbidden":
            return Block("not that word")

@pytest.fixture
def kairox_plugins():
    return [GuardPlugin()]

@pytest.fixture
def kairox_tool_provider(kairox_tool_provider):
    @kairox_tool_provider.tool("words.shout", capability="read")
    def shout(word: str) -> str:
        """Shout a word."""
        return word.upper()
    return kairox_tool_provider

@pytest.mark.anyio
async def test_runtime_fixture(kairox_runtime):
    assert (await kairox_runtime.call_tool("words_shout", {"word": "hi"})).text == "HI"
    with pytest.raises(Exception, match="not that word"):
        await kairox_runtime.call_tool("words.shout", {"word": "forbidden"})

@pytest.mark.anyio
async def test_harness_open_and_config(kairox_harness):
    kairox_harness.write_config('[policy]\\napproval = "untrusted"\\n')
    async with kairox_harness.open() as rt:
        assert rt.config.section("policy").approval.value == "untrusted"

def test_cli(kairox_harness, kairox_tool_provider):
    kairox_harness.register(kairox_tool_provider.plugin())
    result = kairox_harness.cli("tools", "call", "words.shout", "--args", '{"word": "a"}', "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["content"][0]["text"] == "A"

def test_fixtures_are_isolated(kairox_env, kairox_home, kairox_workspace):
    assert kairox_env["KAIROX_HOME"] == str(kairox_home)
    assert not [k for k in kairox_env if k.startswith("KAIROX_") and k != "KAIROX_HOME"]
    assert list(kairox_workspace.iterdir()) == []
'''


def test_plugin_authors_get_the_fixtures_without_a_conftest(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAIROX_LOAD_PLUGINS", "everything")  # must not leak into the fixtures
    monkeypatch.setenv("KAIROX_STRICT_PLUGINS", "1")
    pytester.makepyfile(test_author=AUTHOR_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def test_fixtures_are_listed(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--fixtures", "-p", "no:cacheprovider")
    for name in (
        "kairox_workspace",
        "kairox_home",
        "kairox_env",
        "kairox_plugins",
        "kairox_harness",
        "kairox_tool_provider",
        "kairox_runtime",
    ):
        result.stdout.fnmatch_lines([f"{name}*"])


def test_harness_never_reads_the_real_user_config(kairox_harness: KairoxHarness, monkeypatch, tmp_path: Path) -> None:
    real_home = tmp_path / "real-home"
    real_home.mkdir()
    (real_home / "kairox.toml").write_text("[bogus]\n")
    monkeypatch.setenv("KAIROX_HOME", str(real_home))
    assert kairox_harness.env["KAIROX_HOME"] == str(kairox_harness.home)
    host = kairox_harness.host()
    assert host.plugins() == []  # hermetic: installed entry points are not loaded
    assert kairox_harness.cli("config", "show", "--json").stdout.count("bogus") == 0


def test_write_config_targets(kairox_harness: KairoxHarness) -> None:
    assert kairox_harness.write_config("", where="user") == kairox_harness.home / "kairox.toml"
    assert (
        kairox_harness.write_config("", where="workspace-dir") == kairox_harness.workspace / ".kairox" / "kairox.toml"
    )
    with pytest.raises(ValueError, match="where must be one of"):
        kairox_harness.write_config("", where="elsewhere")


@pytest.mark.anyio
async def test_in_memory_provider(kairox_harness: KairoxHarness) -> None:
    provider = InMemoryToolProvider("mem")

    @provider.tool(capability="read")
    def before(x: int) -> int:
        """Registered before the runtime starts."""
        return x

    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        log = EventLog(rt.events)
        assert rt.tools.get_spec("before").description == "Registered before the runtime starts."
        provider.add_function(lambda: "live", "live.tool", capability="read")
        assert (await rt.call_tool("live_tool")).text == "live"
        with pytest.raises(RegistrationError, match="by mem and by other"):
            rt.tools.add(FunctionTool(ToolSpec("before"), lambda: None), provider="other")
        provider.remove("live.tool")
        assert provider.tool_ids == ["before"]
        assert [e.added or e.removed for e in log.of(ToolsChanged)] == [("live.tool",), ("live.tool",)]
    assert provider.runtime is None and provider.stops == 1


@pytest.mark.anyio
async def test_in_memory_provider_start_error(kairox_harness: KairoxHarness) -> None:
    provider = InMemoryToolProvider("down", start_error=OSError("unreachable"))
    async with kairox_harness.open(plugins=[provider.plugin()]) as rt:
        [state] = [p for p in rt.status().providers if p.name == "down"]
        assert (state.state, state.error) == ("failed", "OSError: unreachable")


@pytest.mark.anyio
async def test_kairox_runtime_fixture(kairox_runtime: Runtime, kairox_tool_provider: InMemoryToolProvider) -> None:
    assert kairox_tool_provider.runtime is kairox_runtime
    assert "memory" in kairox_runtime.providers


def test_make_plugin() -> None:
    with pytest.raises(ValueError, match="not a kairox hook name"):
        make_plugin("x", register=lambda registrar: None)
    plugin = make_plugin("named", kairox_event=lambda event: None)
    assert plugin.__name__ == "named"  # type: ignore[attr-defined]
    assert "named" in repr(plugin)
