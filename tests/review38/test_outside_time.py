"""Outside input that costs unbounded time: a tool schema's ``pattern`` (the server's) run
against an argument (the model's, a gateway client's) by ``jsonschema`` with Python's
backtracking ``re``, on the event loop, before the policy is asked."""

from __future__ import annotations

import json
import socket
import subprocess
import time

import pytest
from review38_lab import WORKTREE, Lab

SERVER = str(WORKTREE / "tests/review38/evil_server.py")
#: 34 ``a`` and a ``!``: ``^(a+)+$`` backtracks 2**34 times (28 took 24 s here)
ARGUMENT = json.dumps({"s": "a" * 34 + "!"})


def _user_server(lab: Lab, mode: str, extra: str = "") -> None:
    """The user's own (trusted) server, whose tool schema came from the server."""
    lab.write(
        ".kairox/kairox.toml",
        f'[mcp_servers.evil]\ncommand = "python3"\nargs = [{json.dumps(SERVER)}, "{mode}"]\n{extra}',
        base=lab.home,
    )


def test_a_catastrophic_schema_pattern_is_refused_in_bounded_time(lab: Lab) -> None:
    """[medium] ``kairox tools call evil.t`` with a 35-character argument does not finish in
    60 s (the call would be denied by the policy anyway: validation runs first)."""
    _user_server(lab, "pattern")
    start = time.monotonic()
    try:
        result = lab.run("tools", "call", "evil.t", "--args", ARGUMENT, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"kairox tools call still validating after {time.monotonic() - start:.0f} s")
    assert result.returncode == 1, result.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_one_client_with_a_catastrophic_argument_does_not_stop_the_gateway(lab: Lab) -> None:
    """[medium] Through ``kairox serve --http``: while client A's argument is validated,
    client B cannot even list the tools (the validation holds the event loop)."""
    _user_server(lab, "pattern", '[policy.rules]\n"evil.*" = "allow"\n')
    assert lab.run("trust").returncode == 0
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    python = str(WORKTREE / ".venv/bin/python")
    probe = str(WORKTREE / "tests/review38/http_probe.py")
    gateway = subprocess.Popen(
        ["uv", "run", "--quiet", "--project", str(WORKTREE), "kairox", "serve", "--http", "--port", str(port)],
        cwd=lab.ws,
        env=lab.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    client_a = None
    try:
        for _ in range(100):
            ok = subprocess.run([python, probe, url, "tools"], capture_output=True, text=True, env=lab.env)
            if ok.returncode == 0:
                break
            time.sleep(0.3)
        assert "evil_t" in ok.stdout, ok.stderr[-2000:]
        client_a = subprocess.Popen(
            [python, probe, url, "call", "evil_t", ARGUMENT],
            env=lab.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(3)
        try:
            b = subprocess.run([python, probe, url, "tools"], capture_output=True, text=True, env=lab.env, timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail("client B got no tool list in 20 s while client A's argument was validated")
        assert "evil_t" in b.stdout, b.stderr[-2000:]
    finally:
        import os
        import signal

        for proc in (client_a, gateway):
            if proc is not None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()


def test_a_result_of_many_small_blocks_costs_bounded_memory(lab: Lab) -> None:
    """[medium] One ``tools/call`` answer of 2,000,000 text blocks (a 54 MB line, under the
    64 MiB frame cap) took 4.45 GB of memory and 48 s here (``/usr/bin/time``), to print
    50,000 characters. Measured as the largest child's peak RSS (of this test process: every other child
    of the module stays far below the bound)."""
    import resource

    args = (SERVER, "result-blocks", "2000000")
    lab.write(
        ".kairox/kairox.toml",
        f'[mcp_servers.evil]\ncommand = "python3"\nargs = {json.dumps(list(args))}\n[policy.rules]\n"evil.*" = "allow"\n',
        base=lab.home,
    )
    result = lab.run("tools", "call", "evil.t", "--args", "{}", timeout=300)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

    assert peak_kib < 1_500_000, f"peak RSS {peak_kib / 1e6:.2f} GB ({result.returncode})"


def test_search_grep_python_engine_keeps_its_timeout(lab: Lab) -> None:
    """[medium] ``search.grep`` with the Python engine (the one used when ``rg`` is not on
    PATH; kairox-tools does not depend on ripgrep) and ``grep_timeout = 5``: the pattern
    ``^(a+)+$`` over a workspace line of 40 ``a`` and a ``!`` runs past 60 s. The search
    thread cannot be cancelled (``to_thread.run_sync`` without abandoning) and holds the GIL."""
    lab.write(".kairox/kairox.toml", '[tools]\ngrep_engine = "python"\ngrep_timeout = 5\n', base=lab.home)
    lab.write("data.txt", "a" * 40 + "!\n")
    start = time.monotonic()
    try:
        result = lab.run("tools", "call", "search.grep", "--args", json.dumps({"pattern": "^(a+)+$"}), timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"search.grep still searching after {time.monotonic() - start:.0f} s (grep_timeout = 5)")
    assert "gave up after 5 s" in result.stdout + result.stderr, result.stdout
