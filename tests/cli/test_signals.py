"""The kairox CLI shuts every server down when it is told to stop (SIGTERM, SIGHUP, SIGINT).

The CLI runs as a real process with the stdio transport's test-sized graces
(``peers.KAIROX_TEST_GRACES``): the called server is blocked in its tool and only goes
at SIGTERM. ``tests/reliability/test_sigint_cli_servers.py`` runs the console script
itself, with the production graces.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from peers import FIXTURE_SERVERS, KAIROX_TEST_GRACES, default_signals, no_leftover_processes
from shared_helpers import busy_cli_call

#: `kairox tools call` starts only the servers that own the called tool (by tool prefix); with
#: nested prefixes both servers own `all.good.sleep`, so both run while the call is in flight
CALLED = "all.good.sleep"


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = []
    for name, script, prefix in (("good", "well_behaved.py", "all.good"), ("grandchild", "grandchild.py", "all")):
        lines += [
            f"[mcp_servers.{name}]",
            f"command = {json.dumps(sys.executable)}",
            f"args = {json.dumps([str(FIXTURE_SERVERS / script)])}",
            f"tool_prefix = {json.dumps(prefix)}",
            "",
        ]
    (ws / "kairox.toml").write_text("\n".join(lines))
    return ws


def _busy_cli(tmp_path: Path, preexec_fn: Callable[[], None]) -> subprocess.Popen[str]:
    """`kairox tools call` on a tool that sleeps, once both servers (and the grandchild's
    `sleep`) run and the call had time to reach its server."""
    proc = busy_cli_call(KAIROX_TEST_GRACES, _workspace(tmp_path), tmp_path, CALLED, preexec_fn)
    cli = psutil.Process(proc.pid)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        cmdlines = [" ".join(p.cmdline()) for p in cli.children(recursive=True) if p.is_running()]
        if any("well_behaved" in c for c in cmdlines) and any(c.startswith("sleep") for c in cmdlines):
            break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail(f"servers did not start: {proc.communicate()}")
    time.sleep(0.5)
    return proc


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_signal_shuts_every_server_down(tmp_path: Path, signum: signal.Signals) -> None:
    with no_leftover_processes(settle=5.0):
        proc = _busy_cli(tmp_path, default_signals)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    if signum == signal.SIGINT:
        assert proc.returncode != 0
    else:
        assert proc.returncode == 128 + signum, (out, err)
        assert f"stopped by {signum.name}" in err


def test_a_sighup_ignored_at_start_stays_ignored_as_under_nohup(tmp_path: Path) -> None:
    def like_nohup() -> None:
        default_signals()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    with no_leftover_processes(settle=5.0):
        proc = _busy_cli(tmp_path, like_nohup)
        try:
            proc.send_signal(signal.SIGHUP)
            with pytest.raises(subprocess.TimeoutExpired):
                # still calling its 60 s tool (a SIGHUP that stopped it would also show below, in
                # the exit code and the "stopped by" line)
                proc.wait(timeout=1)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 128 + signal.SIGTERM, (out, err)
    assert "stopped by SIGTERM" in err


def test_an_error_inside_a_command_is_raised_as_it_was(tmp_path: Path) -> None:
    """run_with_runtime must not wrap a command's error in an ExceptionGroup."""
    import click
    from click.testing import CliRunner

    from kairox_cli._util import CliState, run_with_runtime

    @click.command()
    @click.pass_context
    def boom(ctx: click.Context) -> None:
        async def fn(rt: object) -> None:
            raise click.ClickException("a clear message")

        run_with_runtime(ctx, fn, start=False)

    home = tmp_path / "home"
    home.mkdir()
    state = CliState(workspace=tmp_path)
    result = CliRunner().invoke(boom, obj=state, env={"KAIROX_HOME": str(home)})
    assert result.exit_code == 1
    assert "Error: a clear message" in result.output
    assert "ExceptionGroup" not in result.output
