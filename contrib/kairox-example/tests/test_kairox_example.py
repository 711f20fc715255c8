"""Tests of kairox-example, written the way a plugin author would (see docs/testing-plugins.md)."""

from __future__ import annotations

import hashlib
import json

import pytest

from kairox import PolicyDenied, Runtime
from kairox_testing import EventLog, InMemoryToolProvider, KairoxHarness

pytestmark = pytest.mark.anyio


@pytest.fixture
def workspace(kairox_harness: KairoxHarness) -> KairoxHarness:
    (kairox_harness.workspace / "notes.txt").write_text("one two\nthree\n")
    (kairox_harness.workspace / ".env").write_text("TOKEN=secret\n")
    return kairox_harness


async def test_registers_its_hooks(kairox_harness: KairoxHarness) -> None:
    [info] = kairox_harness.host().plugins()
    assert info.hooks == (
        "kairox_pre_tool_call",
        "kairox_register_commands",
        "kairox_register_config_sections",
        "kairox_register_tool_providers",
    )


async def test_wordcount(workspace: KairoxHarness) -> None:
    async with workspace.open() as rt:
        spec = rt.tools.get_spec("example_wordcount")
        assert (spec.domain.value, spec.capability.value, spec.provider) == ("local", "read", "example")
        result = await rt.call_tool("example.wordcount", {"path": "notes.txt"})
    assert not result.is_error
    assert result.structured == {"path": "notes.txt", "lines": 2, "words": 3, "chars": 14}
    assert result.text == "notes.txt: 2 lines, 3 words, 14 characters"


async def test_checksum(workspace: KairoxHarness) -> None:
    async with workspace.open() as rt:
        result = await rt.call_tool("example_checksum", {"path": "notes.txt", "algorithm": "md5"})
        assert result.structured == {
            "path": "notes.txt",
            "algorithm": "md5",
            "digest": hashlib.md5(b"one two\nthree\n").hexdigest(),
        }
        # the kernel checks the arguments against the tool's schema before it runs
        bad = await rt.call_tool("example_checksum", {"path": "notes.txt", "algorithm": "crc"})
        assert bad.is_error and "algorithm: 'crc' is not one of" in bad.text


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"path": "missing.txt"}, "missing.txt: no such file"),
        ({"path": "../outside.txt"}, "../outside.txt: outside the workspace"),
        ({"path": "."}, ".: not a regular file"),
        ({}, "'path' is a required property"),
    ],
)
async def test_problems_are_error_results(workspace: KairoxHarness, arguments: dict[str, str], message: str) -> None:
    async with workspace.open() as rt:
        result = await rt.call_tool("example.wordcount", arguments)
    assert result.is_error and message in result.text


async def test_max_bytes_from_config(workspace: KairoxHarness) -> None:
    workspace.write_config("[example]\nmax_bytes = 5\n", where="user")
    async with workspace.open() as rt:
        result = await rt.call_tool("example.wordcount", {"path": "notes.txt"})
    assert result.is_error and "more than max_bytes = 5" in result.text


async def test_guard_blocks_protected_files_for_every_tool(workspace: KairoxHarness) -> None:
    other = InMemoryToolProvider("other")

    @other.tool("other.cat", capability="read")
    def cat(command: str) -> str:
        return "ran"

    async with workspace.open(plugins=[other.plugin()]) as rt:
        with pytest.raises(PolicyDenied, match=r"names '\.env', protected by '\.env'"):
            await rt.call_tool("example.wordcount", {"path": ".env"})
        with pytest.raises(PolicyDenied, match="protected by"):
            await rt.call_tool("other.cat", {"command": "cat config/.env"})
        assert (await rt.call_tool("other.cat", {"command": "cat notes.txt"})).text == "ran"


async def test_guard_follows_a_link_to_a_protected_file(workspace: KairoxHarness) -> None:
    # an untrusted clone's notes.md linked to the user's key read it through fs.read
    key = workspace.home / "id_rsa"
    key.write_text("PRIVATE KEY\n")
    (workspace.workspace / "notes.md").symlink_to(key)
    async with workspace.open() as rt:
        with pytest.raises(PolicyDenied, match=r"names 'notes\.md', which leads to .*id_rsa.*, protected by"):
            await rt.call_tool("example.wordcount", {"path": "notes.md"})
        assert not (await rt.call_tool("example.wordcount", {"path": "notes.txt"})).is_error


@pytest.mark.timeout(10)
async def test_guard_matches_in_time_linear_in_an_argument(workspace: KairoxHarness) -> None:
    # fnmatch's regex backtracks: '*a*a*a*b' against 64 KB of 'a' took minutes
    workspace.write_config('[example]\nprotected = ["*a*a*a*a*a*b"]\n', where="user")
    other = InMemoryToolProvider("other")

    @other.tool("other.echo", capability="read")
    def echo(text: str) -> str:
        return "ran"

    async with workspace.open(plugins=[other.plugin()]) as rt:
        assert (await rt.call_tool("other.echo", {"text": "a" * 65536})).text == "ran"


async def test_protected_list_is_configurable(workspace: KairoxHarness) -> None:
    workspace.write_config('[example]\nprotected = ["notes.*"]\n', where="user")
    async with workspace.open() as rt:
        with pytest.raises(PolicyDenied):
            await rt.call_tool("example.wordcount", {"path": "notes.txt"})
        assert not (await rt.call_tool("example.wordcount", {"path": ".env"})).is_error


async def test_a_workspace_only_adds_protected_files(workspace: KairoxHarness) -> None:
    # `protected` is in the section's `narrows`: a repository's list is added to the user's
    workspace.write_config("[example]\nprotected = []\n")
    workspace.write_config('[example]\nprotected = ["notes.*"]\n', where="workspace-dir")
    async with workspace.open() as rt:
        for path in (".env", "notes.txt"):
            with pytest.raises(PolicyDenied, match="protected by"):
                await rt.call_tool("example.wordcount", {"path": path})


async def test_bad_config_is_reported_with_its_path(workspace: KairoxHarness) -> None:
    file = workspace.write_config('[example]\nprotected = ".env"\n', where="user")
    async with workspace.open() as rt:
        [error] = rt.config.errors
        assert (error.file, error.path) == (str(file), "example.protected")
        assert error.message == "expected a list, got '.env'"
        assert not rt.status().ok


async def test_tools_go_away_when_the_runtime_closes(kairox_runtime: Runtime) -> None:
    log = EventLog(kairox_runtime.events)
    assert "example.wordcount" in kairox_runtime.tools
    await kairox_runtime.aclose()
    assert "example.wordcount" not in kairox_runtime.tools
    assert "ToolsChanged" in log.kinds()


def test_cli(workspace: KairoxHarness) -> None:
    result = workspace.cli("example", "wordcount", "notes.txt")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split() == ["2", "3", "14", "notes.txt"]
    data = json.loads(workspace.cli("example", "wordcount", "notes.txt", "--json").stdout)
    assert data == {"path": "notes.txt", "lines": 2, "words": 3, "chars": 14}
    blocked = workspace.cli("example", "wordcount", ".env")
    assert blocked.exit_code == 1 and "protected by" in blocked.stderr
    shown = json.loads(workspace.cli("--json", "example", "protected").stdout)
    assert ".env" in shown["protected"] and shown["source"] is None
