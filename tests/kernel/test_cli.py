"""The CLI core: status, plugins, config show, tools list/call; plugin commands; exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from kairox import Block, ConfigSection, FunctionTool, ToolResult, ToolSpec
from kairox_testing import InMemoryToolProvider, KairoxHarness, make_plugin

KAIROX = str(Path(sys.executable).with_name("kairox"))


def provider_plugin() -> object:
    provider = InMemoryToolProvider(
        "mem",
        [
            FunctionTool(ToolSpec("mem.echo", "echo text", domain="local", capability="read"), lambda text="": text),
            FunctionTool(
                ToolSpec("mem.fail", "always fails", domain="local", capability="read"),
                lambda: ToolResult.from_text("it broke", is_error=True),
            ),
            FunctionTool(ToolSpec("mem.crash", domain="local", capability="read"), lambda: 1 / 0),
            FunctionTool(ToolSpec("mem.run", "runs", domain="local", capability="execute"), lambda: "ran"),
        ],
    )
    return provider.plugin()


@pytest.fixture
def harness(kairox_harness: KairoxHarness) -> KairoxHarness:
    kairox_harness.register(provider_plugin(), name="mem-plugin")
    return kairox_harness


def run_json(harness: KairoxHarness, *args: str, code: int = 0) -> dict:
    result = harness.cli(*args)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return json.loads(result.stdout)


# -- status -----------------------------------------------------------------------------


def test_status_ok(harness: KairoxHarness) -> None:
    result = harness.cli("status")
    assert result.exit_code == 0, result.stderr
    assert f"workspace: {harness.workspace}" in result.stdout
    assert "tools:     " in result.stdout
    data = run_json(harness, "status", "--json")
    assert data["ok"] is True
    assert data["workspace"] == str(harness.workspace)
    assert data["tools"] >= 4  # the four of the inline provider, plus the kernel's own
    assert {p["name"]: p["state"] for p in data["providers"]}["mem"] == "ready"
    assert run_json(harness, "--json", "status") == data  # the global flag does the same


def test_status_exits_1_when_something_declared_failed(harness: KairoxHarness) -> None:
    broken = InMemoryToolProvider("broken", start_error=ConnectionError("refused"))
    harness.register(broken.plugin())
    result = harness.cli("status")
    assert result.exit_code == 1
    assert "provider broken (broken-provider) failed: ConnectionError: refused" in result.stdout
    data = run_json(harness, "status", "--json", code=1)
    assert data["ok"] is False
    [failed] = [p for p in data["providers"] if p["state"] == "failed"]
    assert failed == {
        "name": "broken",
        "owner": "broken-provider",
        "state": "failed",
        "error": "ConnectionError: refused",
    }


def test_status_exits_1_on_config_errors(harness: KairoxHarness) -> None:
    file = harness.write_config("[lsp_servers.rust]\ncommand = 'rust-analyzer'\n")
    result = harness.cli("status")
    assert result.exit_code == 1
    assert "config problems:" in result.stdout
    assert f'{file}: lsp_servers: config section "lsp_servers" is provided by kairox-lsp' in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


# -- plugins ----------------------------------------------------------------------------


def test_plugins(harness: KairoxHarness) -> None:
    data = run_json(harness, "plugins", "--json")
    assert [p["name"] for p in data["plugins"]] == ["mem-plugin"]
    assert data["plugins"][0] == {
        "name": "mem-plugin",
        "distribution": None,
        "version": None,
        "hooks": ["kairox_register_tool_providers"],
        "builtin": False,
    }
    assert data["failures"] == []
    everything = run_json(harness, "plugins", "--all", "--json")
    assert everything["plugins"][0]["name"] == "kairox._builtin"
    assert everything["plugins"][0]["builtin"] is True
    text = harness.cli("plugins").stdout
    assert "mem-plugin" in text and "(inline)" in text and "register_tool_providers" in text


# -- config show ------------------------------------------------------------------------


def test_config_show_redacts_and_names_sources(harness: KairoxHarness) -> None:
    harness.register(
        make_plugin(
            "remote",
            kairox_register_config_sections=lambda registrar: registrar.add(
                ConfigSection("remote", dict, entries=True)
            ),
        )
    )
    file = harness.write_config(
        '[remote.search]\nurl = "https://x"\nheaders = { Authorization = "Bearer sk-live-123" }\n'
        '[policy]\napproval = "never"\n'
    )
    result = harness.cli("config", "show")
    assert result.exit_code == 0
    assert "sk-live-123" not in result.stdout
    assert "<redacted>" in result.stdout
    assert f"# {file}" in result.stdout
    data = run_json(harness, "config", "show", "--json")
    assert data["files"] == [str(file)]
    search = data["sections"]["remote"]["search"]
    assert search["value"] == {"url": "https://x", "headers": {"Authorization": "<redacted>"}}
    assert search["source"] == str(file)
    # a section's workspace values wait for trust unless it declares them safe (needs_trust=False)
    assert search["not_applied"].startswith("untrusted: run `kairox trust"), search
    # a workspace cannot loosen the approval policy: shown as written, marked as not applied
    approval = data["sections"]["policy"]["approval"]
    assert (approval["value"], approval["source"]) == ("never", str(file))
    assert "stricter" in approval["not_applied"], approval
    assert "(not applied: " in next(line for line in result.stdout.splitlines() if "approval" in line)
    assert data["errors"] == []


def test_config_show_empty(harness: KairoxHarness) -> None:
    assert harness.cli("config", "show").stdout.strip() == "(empty configuration)"


# -- tools ------------------------------------------------------------------------------


def test_tools_list(harness: KairoxHarness) -> None:
    data = run_json(harness, "tools", "list", "--json")
    rows = {r["id"]: r for r in data["tools"]}
    assert set(rows) >= {"mem.echo", "mem.fail", "mem.crash", "mem.run"}
    assert rows["mem.echo"] == {
        "id": "mem.echo",
        "exported_name": "mem_echo",
        "provider": "mem",
        "domain": "local",
        "capability": "read",
        "decision": "allow",
        "reason": rows["mem.echo"]["reason"],
        "description": "echo text",
        "annotations": {},
    }
    assert rows["mem.echo"]["reason"]
    assert rows["mem.run"]["decision"] == "ask"
    text = harness.cli("tools", "list").stdout
    assert any(line.startswith("mem.echo") and line.rstrip().endswith("allow") for line in text.splitlines())


def test_tools_call_ok(harness: KairoxHarness) -> None:
    result = harness.cli("tools", "call", "mem_echo", "--args", '{"text": "hi there"}')
    assert (result.exit_code, result.stdout) == (0, "hi there\n")
    data = run_json(harness, "tools", "call", "mem.echo", "--args", '{"text": "x"}', "--json")
    assert data == {"content": [{"text": "x", "type": "text"}], "structured": None, "is_error": False}


def test_tools_call_error_result_exits_1(harness: KairoxHarness) -> None:
    result = harness.cli("tools", "call", "mem.fail")
    assert (result.exit_code, result.stdout) == (1, "it broke\n")
    assert run_json(harness, "tools", "call", "mem.fail", "--json", code=1)["is_error"] is True


def test_tools_call_failure_exits_1(harness: KairoxHarness) -> None:
    result = harness.cli("tools", "call", "mem.crash")
    assert result.exit_code == 1
    assert "kairox: failed: mem.crash failed: ZeroDivisionError" in result.stderr
    data = run_json(harness, "tools", "call", "nope", "--json", code=1)
    assert data["error"] == "failed" and "no tool named 'nope'" in data["message"]


def test_tools_call_denial_exits_1_and_yes_approves(harness: KairoxHarness) -> None:
    result = harness.cli("tools", "call", "mem.run")  # not a TTY: nobody can approve
    assert result.exit_code == 1
    assert "kairox: denied: mem.run: needs approval" in result.stderr
    data = run_json(harness, "tools", "call", "mem.run", "--json", code=1)
    assert data["error"] == "denied"
    assert harness.cli("tools", "call", "mem.run", "--yes").stdout == "ran\n"


def test_tools_call_yes_never_overrides_a_deny(harness: KairoxHarness) -> None:
    harness.write_config('[policy.rules]\n"mem.*" = "deny"\n')
    result = harness.cli("tools", "call", "mem.echo", "--yes")
    assert result.exit_code == 1 and "denied" in result.stderr


def test_tools_call_hook_block_exits_1(harness: KairoxHarness) -> None:
    harness.register(make_plugin("guard", kairox_pre_tool_call=lambda call: Block("read-only day")))
    result = harness.cli("tools", "call", "mem.echo")
    assert result.exit_code == 1 and "blocked by a hook: read-only day" in result.stderr


@pytest.mark.parametrize(("args", "message"), [("{", "not valid JSON"), ("[1]", "must be a JSON object")])
def test_tools_call_bad_args_is_a_usage_error(harness: KairoxHarness, args: str, message: str) -> None:
    result = harness.cli("tools", "call", "mem.echo", "--args", args)
    assert result.exit_code == 2 and message in result.stderr


def test_tools_call_timeout(harness: KairoxHarness) -> None:
    import anyio

    async def slow() -> str:
        await anyio.sleep(5)
        return "late"

    harness.register(InMemoryToolProvider("slow", [FunctionTool(ToolSpec("slow.t", capability="read"), slow)]).plugin())
    result = harness.cli("tools", "call", "slow.t", "--timeout", "0.05")
    assert result.exit_code == 1 and "timed out after 0.05 s" in result.stderr


# -- plugin commands --------------------------------------------------------------------


def test_plugins_add_commands_and_a_broken_one_is_reported(harness: KairoxHarness) -> None:
    def add_hello(cli: click.Group) -> None:
        @cli.command()
        @click.argument("name")
        def hello(name: str) -> None:
            """Say hello."""
            click.echo(f"hello {name}")

    def add_broken(cli: click.Group) -> None:
        @cli.command()
        def half() -> None:
            """Added before the plugin crashes: must be taken back."""

        raise RuntimeError("cannot build my commands")

    def steal_status(cli: click.Group) -> None:
        @cli.command("status")
        def fake_status() -> None:
            click.echo("hijacked")

    harness.register(make_plugin("greeter", kairox_register_commands=add_hello))
    harness.register(make_plugin("broken-cmds", kairox_register_commands=add_broken))
    harness.register(make_plugin("thief", kairox_register_commands=steal_status))

    assert harness.cli("hello", "world").stdout == "hello world\n"
    assert harness.cli("half").exit_code == 2  # rolled back: no such command
    status = harness.cli("status")
    assert "hijacked" not in status.stdout and "workspace:" in status.stdout
    assert status.exit_code == 1  # two plugins failed
    data = json.loads(harness.cli("plugins", "--json").stdout)
    failures = {f["plugin"]: f for f in data["failures"]}
    assert failures["broken-cmds"]["stage"] == "kairox_register_commands"
    assert failures["thief"]["error"] == 'command "status" is registered twice: by kairox and by thief'
    help_text = harness.cli("--help").stdout
    assert "hello" in help_text and "Say hello." in help_text


# -- the real console script ----------------------------------------------------------------

BROKEN = "raise ImportError('needs a library that is not installed')\n"
GOOD = """
from kairox import hookimpl
import click

@hookimpl
def kairox_register_commands(cli):
    @cli.command("fake-good")
    def fake_good():
        click.echo("fake-good says hi")
"""


def test_console_script_survives_a_broken_plugin(fake_site, tmp_path: Path) -> None:
    fake_site.add(
        "fake-broken", version="0.3", entry_points={"broken": "fake_broken_cli"}, modules={"fake_broken_cli": BROKEN}
    )
    fake_site.add("fake-good", entry_points={"good": "fake_good_cli"}, modules={"fake_good_cli": GOOD})
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    env["PYTHONPATH"] = os.pathsep.join([str(fake_site.root), env.get("PYTHONPATH", "")])
    env["KAIROX_HOME"] = str(tmp_path / "home")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [KAIROX, "--workspace", str(tmp_path), *args], capture_output=True, text=True, env=env, timeout=60
        )

    plugins = run("plugins", "--json")
    assert plugins.returncode == 0, plugins.stderr
    assert "Traceback" not in plugins.stderr
    data = json.loads(plugins.stdout)
    [failure] = [f for f in data["failures"] if f["plugin"] == "broken"]
    assert failure == {
        "plugin": "broken",
        "distribution": "fake-broken",
        "version": "0.3",
        "stage": "load",
        "error": "ImportError: needs a library that is not installed",
    }
    assert "good" in [p["name"] for p in data["plugins"]]
    env["KAIROX_LOAD_PLUGINS"] = "good,broken"  # the rest without the real built-ins (quicker)
    text = run("plugins")
    assert "! broken" in text.stdout and "fake-broken 0.3" in text.stdout and "needs a library" in text.stdout
    assert run("fake-good").stdout == "fake-good says hi\n"
    status = run("status", "--json")
    assert status.returncode == 1  # a plugin failed to load: something declared failed
    assert "Traceback" not in status.stderr
    assert any(f["plugin"] == "broken" for f in json.loads(status.stdout)["failures"])


BROKEN_GUARD = """
import kairox

raise RuntimeError("the guard's dependency is missing")


@kairox.hookimpl
def kairox_pre_tool_call(call):
    return kairox.Block("nothing passes this guard")
"""


def test_a_guard_plugin_that_fails_to_import_is_named_by_every_command(fake_site, tmp_path: Path) -> None:
    """A guard plugin that raises on import is named on stderr by ``tools call`` and ``tools
    list`` too, not only by ``plugins`` and ``status``: otherwise every call would run
    unguarded without a word about it."""
    fake_site.add(
        "fake-guard", version="1.2", entry_points={"guard": "fake_guard"}, modules={"fake_guard": BROKEN_GUARD}
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    env["PYTHONPATH"] = os.pathsep.join([str(fake_site.root), env.get("PYTHONPATH", "")])
    env["KAIROX_HOME"] = str(tmp_path / "home")
    env["KAIROX_LOAD_PLUGINS"] = "tools,guard"
    named = (
        "kairox: plugin guard (fake-guard 1.2) failed to load (load): RuntimeError: the guard's dependency is "
        "missing; its hooks, tools and commands are absent (`kairox plugins` lists the failures)\n"
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    for args in (["tools", "call", "fs.write", "--args", '{"path": "o.txt", "content": "x"}'], ["tools", "list"]):
        result = subprocess.run(
            [KAIROX, "--workspace", str(ws), *args], capture_output=True, text=True, env=env, timeout=60
        )
        assert named in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_tools_call_says_which_hook_failed(harness: KairoxHarness) -> None:
    """An advisory hook that fails lets the call go on, said on stderr; a guard that fails
    blocks it, said twice (the hook's failure, then the denial)."""
    import kairox

    @kairox.advisory
    def audit(call: object) -> None:
        raise ValueError("audit log unavailable")

    def after(call: object, result: object) -> None:
        raise OSError("disk full")

    harness.register(make_plugin("audit", kairox_pre_tool_call=audit, kairox_post_tool_call=after))
    result = harness.cli("tools", "call", "mem.echo", "--args", '{"text": "hi"}')
    assert result.exit_code == 0 and result.stdout == "hi\n", result.stderr
    assert result.stderr.splitlines() == [
        "kairox: hook kairox_pre_tool_call of plugin audit failed: ValueError: audit log unavailable",
        "kairox: hook kairox_post_tool_call of plugin audit failed: OSError: disk full",
    ]

    def guard(call: object) -> None:
        raise RuntimeError("cannot decide")

    harness.register(make_plugin("guard", kairox_pre_tool_call=guard))
    result = harness.cli("tools", "call", "mem.echo")
    assert result.exit_code == 1
    assert "kairox: hook kairox_pre_tool_call of plugin guard failed: RuntimeError: cannot decide\n" in result.stderr
    assert "blocked by a hook: the guard of guard failed (RuntimeError: cannot decide)" in result.stderr


# -- lazy commands ------------------------------------------------------------------------

LAZY_MODULE = """
import click

@click.group()
def lazy():
    '''The real help of the lazy group.'''

@lazy.command()
@click.argument("name")
@click.option("--loud", is_flag=True)
def greet(name, loud):
    '''Greet NAME.'''
    click.echo(("HELLO " if loud else "hello ") + name)
"""


def test_lazy_command_imports_its_module_only_when_it_runs(harness: KairoxHarness, fake_site) -> None:
    from kairox_cli import lazy_command

    fake_site.add("fake-lazy", entry_points={}, modules={"fake_lazy_cli": LAZY_MODULE})

    def add(cli: click.Group) -> None:
        cli.add_command(lazy_command("lazy", "fake_lazy_cli:lazy", "A lazily imported group."))

    harness.register(make_plugin("lazy-plugin", kairox_register_commands=add))
    top = harness.cli("--help")
    assert "A lazily imported group." in top.stdout
    assert "fake_lazy_cli" not in sys.modules
    assert harness.cli("lazy", "greet", "ada", "--loud").stdout == "HELLO ada\n"
    assert "fake_lazy_cli" in sys.modules
    assert "The real help of the lazy group." in harness.cli("lazy", "--help").stdout
    assert "Greet NAME." in harness.cli("lazy", "greet", "--help").stdout
    assert harness.cli("lazy", "nope").exit_code == 2


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("json:dumps", "command 'bad': json:dumps is not a click command"),
        ("kairox_no_such_module:cli", "command 'bad' cannot load kairox_no_such_module:cli: ModuleNotFoundError"),
        ("json:nope", "command 'bad' cannot load json:nope: AttributeError"),
    ],
)
def test_lazy_command_with_a_bad_target_is_one_line(harness: KairoxHarness, target: str, says: str) -> None:
    from kairox_cli import lazy_command

    harness.register(
        make_plugin("bad", kairox_register_commands=lambda cli: cli.add_command(lazy_command("bad", target)))
    )
    result = harness.cli("bad", catch_exceptions=True)
    assert result.exit_code == 1 and says in result.stderr and "Traceback" not in result.stderr


def test_lazy_command_targets_may_name_a_dotted_attribute(harness: KairoxHarness, fake_site) -> None:
    from kairox_cli import lazy_command

    fake_site.add(
        "fake-lazy2",
        entry_points={},
        modules={"fake_lazy_dotted": LAZY_MODULE + "\nclass Commands:\n    greet = greet\n"},
    )
    harness.register(
        make_plugin(
            "dotted",
            kairox_register_commands=lambda cli: cli.add_command(lazy_command("dl", "fake_lazy_dotted:Commands.greet")),
        )
    )
    assert harness.cli("dl", "ada").stdout == "hello ada\n"


def test_workspace_must_exist(harness: KairoxHarness, tmp_path: Path) -> None:
    result = harness.cli("--workspace", str(tmp_path / "typo"), "status")
    assert result.exit_code == 2 and "does not exist" in result.stderr


def test_an_exception_in_a_plugin_command_reaches_it_unwrapped(harness: KairoxHarness) -> None:
    """A command that catches its own exception around run_with_runtime must see that exception."""
    from kairox_cli import run_with_runtime

    class Missing(Exception):
        pass

    def add(cli: click.Group) -> None:
        @cli.command()
        @click.pass_context
        def lookup(ctx: click.Context) -> None:
            async def go(rt: object) -> None:
                raise Missing("no entry named 'tme'")

            try:
                run_with_runtime(ctx, go)
            except Missing as exc:
                click.echo(f"not found: {exc}", err=True)
                ctx.exit(1)

    harness.register(make_plugin("lookup", kairox_register_commands=add))
    result = harness.cli("lookup")
    assert (result.exit_code, result.stderr) == (1, "not found: no entry named 'tme'\n")
