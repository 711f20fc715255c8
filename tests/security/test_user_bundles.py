"""The user's own bundles, against a workspace: trusted or not, a workspace cannot switch them
off, shorten their guards' time, or turn back on one the user disabled.

Written as the attack: the user's bundle ``guard`` blocks ``fs.write`` (after 0.2 s, so a tiny
hook timeout would let the write through), and a would-be command writes a marker file into
``markers/`` (outside the workspace).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from security_helpers import Clone, cli, output_of, write_bundle

WRITE = ("tools", "call", "fs.write", "--args", '{"path": "notes.txt", "content": "x"}', "--yes")


def slow_user_guard(clone: Clone, name: str = "guard") -> Path:
    """The user's ``guard``: a pre_tool_call hook that blocks fs.write after 0.2 s (so a
    tiny hook timeout would make it fail open)."""
    root = write_bundle(
        clone.home / "plugins" / name, name, clone.markers, hook_marker=name, server_marker=f"{name}-mcp"
    )
    script = root / "hooks" / "guard.py"
    script.write_text("import time\ntime.sleep(0.2)\n" + script.read_text(encoding="utf-8"), encoding="utf-8")
    return root


WORKSPACE_SWITCHES = {
    "nothing": ("", None),
    "plugins-disabled": ('[plugins]\ndisabled = ["guard"]\n', None),
    "plugins-enabled-false": ("[plugins]\nenabled = false\n", None),
    "hook-timeout": ("[plugins]\nhook_timeout = 0.001\n", None),
    "settings-file": ("", {"plugins": {"guard": {"enabled": False}}}),
}


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
@pytest.mark.parametrize("switch", list(WORKSPACE_SWITCHES))
def test_a_workspace_cannot_switch_off_or_time_out_the_users_guard(
    clone: Clone, no_leftovers: None, switch: str, trusted: bool
) -> None:
    slow_user_guard(clone)
    toml, settings = WORKSPACE_SWITCHES[switch]
    if toml:
        clone.write("kairox.toml", toml)
    if settings is not None:
        clone.write(".kairox/plugin-settings.json", json.dumps(settings))
    if trusted:
        clone.trust()

    result = cli(clone.harness, *WRITE)
    assert result.exit_code == 1, f"the user's guard did not block: {output_of(result)}"
    assert "blocked by a hook: guarded by guard" in result.stderr
    assert not (clone.workspace / "notes.txt").exists()
    assert "pre_tool_call" in (clone.markers / "guard").read_text()
    plugins = json.loads(cli(clone.harness, "plugin", "list", "--json").stdout)["plugins"]
    assert [(p["name"], p["scope"], p["state"]) for p in plugins] == [("guard", "user", "available")]


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
def test_the_users_disabled_list_applies_when_the_workspace_sets_its_own(
    clone: Clone, no_leftovers: None, trusted: bool
) -> None:
    """The user turned ``noisy`` off; a workspace's ``disabled = []`` does not turn it back on."""
    write_bundle(
        clone.home / "plugins" / "noisy", "noisy", clone.markers, hook_marker="noisy-hook", server_marker="noisy-mcp"
    )
    (clone.home / "kairox.toml").write_text('[plugins]\ndisabled = ["noisy"]\n')
    clone.write("kairox.toml", "[plugins]\ndisabled = []\n")
    if trusted:
        clone.trust()

    result = cli(clone.harness, *WRITE)
    assert result.exit_code == 0, output_of(result)
    cli(clone.harness, "status")
    assert clone.ran() == set(), "the disabled bundle ran"
    plugins = json.loads(cli(clone.harness, "plugin", "list", "--json").stdout)["plugins"]
    assert [(p["name"], p["state"]) for p in plugins] == [("noisy", "disabled")]
