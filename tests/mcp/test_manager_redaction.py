"""The MCP manager installs the log redaction with its first server, not when it is made:
a runtime that declares no server imports no ``kairox_mcp._sdklog`` (and logs no URL),
and one that adds a server in code has the redaction before that server can log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, logging, sys
import anyio, kairox

async def main():
    async with kairox.Runtime.open(workspace=sys.argv[1], start=False) as rt:
        from kairox_mcp import manager_of
        from kairox_mcp.config import McpServerConfig, ServerDefinition

        before = "kairox_mcp._sdklog" in sys.modules
        await manager_of(rt).add_server(
            ServerDefinition("quick", McpServerConfig(command=sys.executable), origin="code"), start=False
        )
        after = "kairox_mcp._sdklog" in sys.modules
        filters = [type(f).__name__ for f in logging.getLogger("httpx2").filters]
        return before, after, "_Redact" in filters

print(json.dumps(anyio.run(main)))
"""


def test_the_redaction_comes_with_the_first_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    env.update(KAIROX_HOME=str(home), HOME=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [False, True, True]
