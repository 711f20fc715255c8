"""A settings write killed with SIGKILL leaves a temp file; the next write removes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kairox.ext import TrustStore
from kairox.files import STALE_TEMP_AGE, atomic_write_text

# writes its temp file, then hangs before the rename (as if killed mid-write)
KILLED_WRITER = """
import os, sys, tempfile, time
from pathlib import Path
path = Path(sys.argv[1])
fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
os.write(fd, b"half")
print(tmp, flush=True)
time.sleep(60)
"""


def test_a_temp_file_left_by_a_killed_write_is_removed_by_the_next_write(tmp_path: Path) -> None:
    target = tmp_path / "trust.json"
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    leftover = Path(writer.stdout.readline().strip())
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    assert leftover.exists()
    old = time.time() - STALE_TEMP_AGE - 5
    os.utime(leftover, (old, old))  # as it is a minute later
    TrustStore(tmp_path).trust(tmp_path / "ws", [])  # any settings write
    assert not leftover.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_young_temp_file_of_a_write_in_progress_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    live = tmp_path / ".settings.json.abc123.tmp"  # another process is writing right now
    live.write_text("in progress")
    atomic_write_text(target, "{}")
    assert live.exists() and target.read_text() == "{}"
