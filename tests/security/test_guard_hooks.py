"""A guard hook can fail closed: ``"onError": "block"`` makes a failing pre_tool_call script block.

The default stays Claude Code's and Codex's (a failing hook is reported, the call goes on);
a guard that must hold declares ``onError: block`` in its kairox manifest.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kairox import PolicyDenied
from kairox_testing import KairoxHarness

FAILURES = {
    "hangs": "import time\ntime.sleep(30)\n",
    "crashes": "import sys\nsys.stdin.read()\nraise SystemExit(3)\n",
}
#: an answer begun and not finished: what the guard meant cannot be known, so it blocks
#: whatever ``onError`` says (docs/plugins.md, on hook output)
TRUNCATED = "import sys\nsys.stdin.read()\nprint('{\"decision\": \"blo', end='')\n"


def _guard(harness: KairoxHarness, body: str, on_error: str | None, *, timeout: float = 0.5) -> None:
    root = harness.home / "plugins" / "guard"
    (root / ".kairox-plugin").mkdir(parents=True)
    hook: dict[str, object] = {"event": "pre_tool_call", "script": "./guard.py", "timeout": timeout}
    if on_error is not None:
        hook["onError"] = on_error
    (root / ".kairox-plugin" / "plugin.json").write_text(json.dumps({"name": "guard", "hooks": [hook]}))
    (root / "guard.py").write_text(body)


async def _write(harness: KairoxHarness, target: Path) -> PolicyDenied | None:
    import kairox_manifests.hooks
    import kairox_tools.hooks

    async with harness.open(plugins=[kairox_manifests.hooks, kairox_tools.hooks]) as rt:
        try:
            await rt.call_tool("fs.write", {"path": str(target), "content": "x"})
        except PolicyDenied as exc:
            return exc
    return None


@pytest.mark.anyio
@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_a_failing_guard_that_blocks_on_error_blocks(kairox_harness: KairoxHarness, failure: str) -> None:
    _guard(kairox_harness, FAILURES[failure], "block")
    target = kairox_harness.workspace / "out.txt"
    denied = await _write(kairox_harness, target)
    assert denied is not None and "it blocks on error" in str(denied), denied
    assert not target.exists()


@pytest.mark.anyio
@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_by_default_a_failing_hook_is_ignored_as_claude_and_codex_do(
    kairox_harness: KairoxHarness, failure: str
) -> None:
    _guard(kairox_harness, FAILURES[failure], None)
    target = kairox_harness.workspace / "out.txt"
    assert await _write(kairox_harness, target) is None
    assert target.read_text() == "x"


@pytest.mark.anyio
@pytest.mark.parametrize("on_error", [None, "block"])
async def test_an_answer_kairox_cannot_read_blocks_whatever_on_error_says(
    kairox_harness: KairoxHarness, on_error: str | None
) -> None:
    _guard(kairox_harness, TRUNCATED, on_error)
    target = kairox_harness.workspace / "out.txt"
    denied = await _write(kairox_harness, target)
    assert denied is not None and "cannot read" in str(denied), denied
    assert not target.exists()


def test_a_bad_on_error_value_names_the_field(kairox_harness: KairoxHarness) -> None:
    _guard(kairox_harness, FAILURES["crashes"], "sometimes")
    result = kairox_harness.cli("plugin", "list", "--json", load_entrypoints=True)
    data = json.loads(result.stdout)
    guard = next(p for p in data["plugins"] if p["name"] == "guard")
    assert guard["state"] == "failed"
    assert "hooks[0].onError" in json.dumps(guard)


def test_a_guard_that_blocks_on_error_and_has_no_script_fails_its_plugin(kairox_harness: KairoxHarness) -> None:
    """A missing script for a guard that blocks on error fails its plugin: as a mere warning
    the guard would vanish (``plugin list`` saying enabled, the calls it guards running)."""
    _guard(kairox_harness, FAILURES["crashes"], "block")
    (kairox_harness.home / "plugins" / "guard" / "guard.py").unlink()
    data = json.loads(kairox_harness.cli("plugin", "list", "--json", load_entrypoints=True).stdout)
    guard = next(p for p in data["plugins"] if p["name"] == "guard")
    assert guard["state"] == "failed"
    assert "does not exist, and the hook blocks on error" in json.dumps(guard)
    assert "hooks[0].script" in json.dumps(guard)
    status = kairox_harness.cli("status", load_entrypoints=True)
    assert status.exit_code == 1 and "guard" in status.stdout


def test_a_missing_script_of_an_ordinary_hook_is_still_a_warning(kairox_harness: KairoxHarness) -> None:
    _guard(kairox_harness, FAILURES["crashes"], None)
    (kairox_harness.home / "plugins" / "guard" / "guard.py").unlink()
    data = json.loads(kairox_harness.cli("plugin", "list", "--json", load_entrypoints=True).stdout)
    guard = next(p for p in data["plugins"] if p["name"] == "guard")
    assert guard["state"] == "available"
    assert "hook ignored" in json.dumps(guard)


@pytest.mark.anyio
@pytest.mark.parametrize("on_error", [None, "block"])
async def test_the_runtime_deadline_for_a_hung_script_does_what_on_error_says(
    kairox_harness: KairoxHarness, on_error: str | None
) -> None:
    """Found by a trace of the code: a script whose own timeout is longer than the runtime's
    deadline for a guard was cut by the deadline, which blocked the call even for a hook
    whose failures are ignored (the default, as Claude Code and Codex do)."""
    import kairox_manifests.hooks
    import kairox_tools.hooks

    _guard(kairox_harness, FAILURES["hangs"], on_error, timeout=60)
    target = kairox_harness.workspace / "out.txt"
    async with kairox_harness.open(plugins=[kairox_manifests.hooks, kairox_tools.hooks]) as rt:
        rt.hook_timeout = 0.5
        try:
            await rt.call_tool("fs.write", {"path": str(target), "content": "x"})
        except PolicyDenied:
            pass
    assert target.exists() == (on_error is None)
