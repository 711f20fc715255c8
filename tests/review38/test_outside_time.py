"""Outside input that costs unbounded memory: a server's answer of millions of small values."""

from __future__ import annotations

import json

from review38_lab import WORKTREE, Lab

SERVER = str(WORKTREE / "tests/review38/evil_server.py")


def _user_server(lab: Lab, mode: str, extra: str = "") -> None:
    """The user's own (trusted) server, whose tool schema came from the server."""
    lab.write(
        ".kairox/kairox.toml",
        f'[mcp_servers.evil]\ncommand = "python3"\nargs = [{json.dumps(SERVER)}, "{mode}"]\n{extra}',
        base=lab.home,
    )


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
