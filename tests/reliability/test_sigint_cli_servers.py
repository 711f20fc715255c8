"""Issue 9: Ctrl-C (SIGINT) to a ``kairox`` CLI process holding five stdio servers,
two of them with a grandchild (``grandchild.py`` spawns ``sleep 300``), while a call
is in flight: the CLI exits, nothing it started survives, and none of the servers'
stderr reaches the terminal."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest
from peers import FIXTURE_SERVERS, default_signals, no_leftover_processes
from shared_helpers import busy_cli_call

KAIROX = str(Path(sys.executable).parent / "kairox")

SERVERS = {
    "good": ("well_behaved.py", "--name", "good"),
    "gc1": ("grandchild.py",),
    "gc2": ("grandchild.py",),
    "slow": ("slow_start.py", "--delay", "0.3"),
    "other": ("threaded.py", "--name", "other"),
}


def workspace(tmp_path: Path, tool: str) -> tuple[Path, str]:
    """The workspace of the five servers, and the id under which ``tool`` (``server.name``) is called.

    ``kairox tools call`` starts only the servers that own the called tool (by tool prefix).
    The prefixes nest (``all``, ``all.<first>``, ``all.<first>.<second>``, ...), the called server's last,
    so all five own the called id and start, and no two of them register the same tool id."""
    called, tool_name = tool.split(".")
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = []
    prefix = "all"
    for name in [*(n for n in SERVERS if n != called), called]:
        file, *args = SERVERS[name]
        lines += [
            f"[mcp_servers.{name}]",
            f"command = {json.dumps(sys.executable)}",
            f"args = {json.dumps([str(FIXTURE_SERVERS / file), *args])}",
            f"tool_prefix = {json.dumps(prefix)}",
            "",
        ]
        last, prefix = prefix, f"{prefix}.{name}"
    (ws / "kairox.toml").write_text("\n".join(lines))
    return ws, f"{last}.{tool_name}"


def started_processes(cli: psutil.Process) -> tuple[list[psutil.Process], list[str]]:
    procs, cmdlines = [], []
    for p in cli.children(recursive=True):
        try:
            cmdlines.append(" ".join(p.cmdline()))
            procs.append(p)
        except psutil.Error:
            pass
    return procs, cmdlines


# good.sleep blocks a single-threaded server (it ignores stdin EOF until SIGTERM);
# other.sleep runs in a thread of a server that exits on stdin EOF
@pytest.mark.parametrize("tool", ["good.sleep", "other.sleep"])
def test_sigint_to_the_cli_with_five_servers_leaves_nothing(tmp_path: Path, tool: str) -> None:
    ws, called = workspace(tmp_path, tool)
    with no_leftover_processes(settle=5.0):
        proc = busy_cli_call([KAIROX], ws, tmp_path, called, default_signals)
        try:
            cli = psutil.Process(proc.pid)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # five servers and the two grandchildren's `sleep 300`
                procs, cmdlines = started_processes(cli)
                servers = [c for c in cmdlines if str(FIXTURE_SERVERS) in c]
                sleeps = [c for c in cmdlines if c == "sleep 300"]
                if len(servers) == 5 and len(sleeps) == 2:
                    break
                time.sleep(0.1)
            else:
                proc.kill()
                pytest.fail(f"servers did not start: {proc.communicate(timeout=30)}")
            time.sleep(0.5)  # let the call reach its server
            assert proc.poll() is None, "the CLI ended before the signal"
            t0 = time.monotonic()
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
            elapsed = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    for p in procs:
        assert not p.is_running() or p.status() == psutil.STATUS_ZOMBIE, p
    assert proc.returncode != 0
    assert "Traceback" not in err, err
    for line in ("grandchild: started sleep", "slow_start", "stdin closed, exiting"):
        assert line not in err and line not in out  # the servers' stderr never reaches the terminal
    print(
        f"[reliability] SIGINT to `kairox tools call {called}` with 5 servers ({len(procs)} processes): "
        f"exit code {proc.returncode} ({err.strip()[-80:]!r}), everything gone in {elapsed:.2f} s",
        file=sys.stderr,
    )
