"""Server commands installed next to kairox are found without activating its environment
(issue 18, item 5): ``kairox_process.server_env`` puts the environment's scripts directory
after the user's ``PATH`` for every server kairox starts (stdio MCP servers, LSP and DAP)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kairox_process import scripts_dir, server_env

BIN = Path(sys.executable).parent


def test_the_scripts_dir_is_this_environments_bin() -> None:
    assert Path(scripts_dir()) == BIN
    assert (BIN / "mcp-server-time").exists()  # the peer the end-to-end test relies on


def test_the_users_path_comes_first() -> None:
    env = server_env({"PATH": "/usr/local/bin:/usr/bin", "HOME": "/h"})
    assert env["PATH"] == f"/usr/local/bin:/usr/bin:{scripts_dir()}"
    assert env["HOME"] == "/h"
    # already on PATH (an activated venv): left as it is, wherever it is
    activated = f"{scripts_dir()}:/usr/bin"
    assert server_env({"PATH": activated})["PATH"] == activated
    # no PATH at all: the system default, then kairox's scripts
    assert server_env({})["PATH"] == f"{os.defpath}:{scripts_dir()}"


entry = st.text(st.characters(blacklist_characters=":\x00", blacklist_categories=("Cs",)), max_size=12)


@given(st.lists(entry, max_size=6))
def test_path_entries_are_kept_in_order_and_the_scripts_dir_appears_once(entries: list[str]) -> None:
    path = ":".join(entries)
    out = server_env({"PATH": path})["PATH"].split(":")
    kept = [e for e in entries if e]
    assert out[: len(kept)] == kept
    normalized = [os.path.normpath(e) for e in out if e]
    assert normalized.count(os.path.normpath(scripts_dir())) == max(
        1, [os.path.normpath(e) for e in kept].count(os.path.normpath(scripts_dir()))
    )


def test_a_server_in_kairox_bin_starts_without_activating_the_environment(tmp_path: Path) -> None:
    """As a user runs ``venv/bin/kairox status`` without ``source venv/bin/activate``:
    ``mcp-server-time`` sits in the same ``bin/`` but not on the user's PATH."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (home / "kairox.toml").write_text('[mcp_servers.time]\ncommand = "mcp-server-time"\n')
    env = {"KAIROX_HOME": str(home), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run(
        [str(BIN / "kairox"), "--workspace", str(ws), "--json", "status"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    servers = {s["name"]: s for s in json.loads(out.stdout)["servers"]}
    assert servers["time"]["state"] == "ready", servers["time"]
