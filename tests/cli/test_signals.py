"""The kairox CLI shuts every server down when it is told to stop (SIGTERM, SIGHUP, SIGINT)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from peers import FIXTURE_SERVERS, no_leftover_processes

KAIROX = str(Path(sys.executable).parent / "kairox")


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = []
    for name, script in (("good", "well_behaved.py"), ("grandchild", "grandchild.py")):
        lines += [
            f"[mcp_servers.{name}]",
            f"command = {json.dumps(sys.executable)}",
            f"args = {json.dumps([str(FIXTURE_SERVERS / script)])}",
            "",
        ]
    (ws / "kairox.toml").write_text("\n".join(lines))
    return ws


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_signal_shuts_every_server_down(tmp_path: Path, signum: signal.Signals) -> None:
    ws = _workspace(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    # `tools call` on a tool that sleeps keeps the CLI busy while both servers run
    argv = [KAIROX, "-w", str(ws), "tools", "call", "good.sleep", "--args", '{"seconds": 60}', "--yes"]
    with no_leftover_processes(settle=5.0):
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={"PATH": "/usr/bin:/bin", "KAIROX_HOME": str(home), "HOME": str(home)},
        )
        cli = psutil.Process(proc.pid)
        deadline = time.monotonic() + 60
        # wait until the grandchild server's own child (`sleep`) and the good server are up
        while time.monotonic() < deadline:
            cmdlines = [" ".join(p.cmdline()) for p in cli.children(recursive=True) if p.is_running()]
            if any("well_behaved" in c for c in cmdlines) and any(c.startswith("sleep") for c in cmdlines):
                break
            time.sleep(0.1)
        else:
            proc.kill()
            pytest.fail(f"servers did not start: {proc.communicate()}")
        time.sleep(0.5)  # let the call reach the server
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    if signum == signal.SIGINT:
        assert proc.returncode != 0
    else:
        assert proc.returncode == 128 + signum, (out, err)
        assert f"stopped by {signum.name}" in err


def test_an_error_inside_a_command_is_raised_as_it_was(tmp_path: Path) -> None:
    """run_with_runtime must not wrap a command's error in an ExceptionGroup."""
    import click
    from click.testing import CliRunner

    from kairox.cli._util import CliState, run_with_runtime

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
