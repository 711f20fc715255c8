"""Ctrl-C (SIGINT) to a program holding three stdio servers (one with a grandchild)
leaves no process behind, and the servers' stderr never reaches the terminal."""

from __future__ import annotations

import json
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import peers
import psutil
import pytest

HOLDER = Path(__file__).with_name("hold_servers.py")

pytestmark = pytest.mark.usefixtures("no_leftovers")


def read_line(proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if sel.select(timeout=0.1):
                return proc.stdout.readline()
            if proc.poll() is not None:
                break
    finally:
        sel.close()
    raise AssertionError(f"holder not ready (exit code {proc.poll()})")


@pytest.mark.parametrize("with_node", [False, True], ids=["python-servers", "with-server-everything"])
def test_sigint_leaves_no_process_behind(with_node: bool) -> None:
    servers = [peers.fixture_server("well_behaved"), peers.fixture_server("grandchild")]
    servers.append(
        ["node", str(peers.everything_server_js()), "stdio"] if with_node else peers.fixture_server("slow_start")
    )
    proc = subprocess.Popen(
        [sys.executable, str(HOLDER), *(json.dumps(s) for s in servers)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=peers.default_signals,
    )
    try:
        ready = json.loads(read_line(proc, timeout=60))
        started = [psutil.Process(pid) for pid in ready["descendants"]]
        assert len(ready["leaders"]) == 3
        assert len(started) >= 4  # three servers and the grandchild's sleep
        assert any(p.cmdline() == ["sleep", "300"] for p in started)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    for p in started:
        assert not p.is_running() or p.status() == psutil.STATUS_ZOMBIE, p
    assert "grandchild: started sleep" not in err  # server stderr is captured, never shown
    assert "Starting default (STDIO) server" not in err
    # the holder is a plain anyio program: on Python 3.10 anyio's backport of asyncio.Runner
    # ends it with CancelledError where 3.11+ raise KeyboardInterrupt (no Task.uncancel())
    interrupted = "KeyboardInterrupt" in err or (sys.version_info < (3, 11) and "CancelledError" in err)
    assert interrupted or proc.returncode == -signal.SIGINT
    print(
        f"[reliability] SIGINT with 3 servers ({'node' if with_node else 'python'}): all gone in {elapsed:.2f} s",
        file=sys.stderr,
    )
