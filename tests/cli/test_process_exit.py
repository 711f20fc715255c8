"""What the ``kairox`` process leaves to the interpreter's exit: its objects are frozen
(``gc.freeze``) rather than walked and freed by the last collections, and what it printed
is all there. Run as the real program (``kairox_cli.main`` in a fresh interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# an exit handler registered before main() runs after main's (last registered, first run)
PROBE = """
import atexit, gc, os
print_at_exit = lambda: os.write(1, f"\\nfrozen {gc.get_freeze_count()}\\n".encode())
atexit.register(print_at_exit)
assert gc.get_freeze_count() == 0
from kairox_cli import main
main(["--workspace", ".", "plugins", "--json"])
"""


def test_the_kairox_process_freezes_what_is_alive_at_exit_and_prints_everything(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    env["KAIROX_HOME"] = str(tmp_path / "home")
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert out.returncode == 0, out.stderr
    document, _, last = out.stdout.rpartition("\nfrozen ")
    assert int(last) > 1000, out.stdout[-500:]  # the modules, classes and functions of the run
    data = json.loads(document)
    assert {p["name"] for p in data["plugins"]} >= {"tools", "mcp", "skills"}
    assert data["failures"] == []
