"""docs/examples/host_loop.py, the embedding host of docs/api.md, runs as documented."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import peers

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "host_loop.py"


def test_the_host_loop_example_runs_its_script_through_the_policy(tmp_path: Path, no_leftovers: None) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    (workspace / "notes.txt").write_text("remember the milk\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")} | {"KAIROX_HOME": str(home)}
    out = peers.run_to_end([sys.executable, str(EXAMPLE), str(workspace)], cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    offered, listed, read, wrote, ran, unknown, total = out.stdout.splitlines()
    assert offered.startswith("offered ") and "fs_read" in offered and "shell_exec" in offered
    assert listed.startswith('fs_list {"path": "."} -> ok: notes.txt')
    assert read.startswith('fs_read {"path": "notes.txt"} -> ok:') and read.endswith("remember the milk")
    assert wrote.startswith("fs_write ") and " -> ok: wrote 2 bytes to out.txt" in wrote
    assert (workspace / "out.txt").read_text() == "hi"
    # the policy asks before a command runs; the example has no approver, so the model reads a denial
    assert ran.startswith("shell_exec ") and " -> error: shell.exec: needs approval" in ran
    assert not (workspace / "ran.txt").exists()
    assert unknown == """weather_now {"city": "Oslo"} -> error: no tool named 'weather_now'"""
    assert total == "11 messages in the conversation"  # the prompt, then a call and its result each


def test_the_api_page_links_the_example() -> None:
    assert "(examples/host_loop.py)" in (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
