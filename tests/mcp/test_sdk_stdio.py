"""The SDK's stdio client in a process that ran a ``kairox`` command in process first: the
trap ``shared_helpers.sdk_stdio`` avoids, shown in a fresh interpreter (this one has long
imported ``mcp``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import sys

import anyio
import click
from click.testing import CliRunner


@click.command()
def first_use() -> None:
    import mcp  # noqa: F401  (as a kairox command importing kairox-mcp would)


assert CliRunner().invoke(first_use).exit_code == 0

from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from shared_helpers import sdk_stdio

params = StdioServerParameters(command=sys.executable, args=["-c", "pass"])


async def start(transport) -> str:
    try:
        async with transport:
            return "started"
    except BaseException as exc:
        while getattr(exc, "exceptions", None):
            exc = exc.exceptions[0]
        return type(exc).__name__


print(anyio.run(start, stdio_client(params)), anyio.run(start, sdk_stdio(params)))
"""


@pytest.mark.timeout(60)
def test_the_sdk_stdio_default_breaks_after_a_cli_run_and_the_helper_does_not() -> None:
    tests = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(tests), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert out.returncode == 0, out.stderr
    # the SDK's default errlog is click's captured stream from the first import: no fd
    assert out.stdout.split() == ["UnsupportedOperation", "started"], out.stdout + out.stderr
