"""Servers spawn before the SDK is imported, and every server waits on one shared import.

Each case runs in a fresh interpreter (``mcp`` not imported yet) with several real stdio
servers (tests/fixtures/mcp_servers/well_behaved.py). The transport is the real
``StdioTransport`` behind a thin recorder that notes, when ``connect`` is entered, whether
the SDK import had finished. A transport that says ``imports_sdk_lazily = True`` is entered
before the import ends (it awaits ``context.import_sdk()`` before it uses ``mcp``); one that
does not is entered only after it. The import of ``kairox_mcp.client`` runs exactly once,
in one worker thread, however many servers start at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import peers
import pytest
from test_import_race import COUNT_IMPORTS

pytestmark = pytest.mark.integration

SCRIPT = (
    COUNT_IMPORTS
    + r"""
import json, sys, tempfile
from contextlib import asynccontextmanager

import anyio
from kairox import Runtime
from kairox.hookspecs import hookimpl
from kairox_stdio import StdioTransport

lazy, n, server = sys.argv[1] == "lazy", int(sys.argv[2]), json.loads(sys.argv[3])
assert "mcp" not in sys.modules and "kairox_mcp.client" not in sys.modules
entered = []  # per connect: was the SDK import finished when connect was entered?


class Recorder:
    name = "recorded"
    imports_sdk_lazily = lazy

    def __init__(self):
        self.inner = StdioTransport(shutdown_grace=0.5, term_grace=0.5)

    @asynccontextmanager
    async def connect(self, config, context):
        entered.append(lifecycle._client_module is not None)
        await context.import_sdk()  # what a lazy transport does before it uses mcp
        async with self.inner.connect(config, context) as streams:
            yield streams


class Plugin:
    @hookimpl
    def kairox_register_transports(self, registrar):
        registrar.add(Recorder())


async def main():
    entries = {f"s{i}": {"type": "recorded", **server, "args": [*server["args"], "--name", f"s{i}"]} for i in range(n)}
    ws = tempfile.mkdtemp()
    async with Runtime.open(
        ws, config_documents=[(ws + "/kairox.toml", {"mcp_servers": entries})], config_files=[],
        plugins=[Plugin()], env={"PATH": "/usr/bin:/bin", "HOME": ws},
    ) as rt:
        states = sorted({s.state.value for s in rt.status().servers if s.kind == "mcp"})
    print(json.dumps({"states": states, "entered_after_import": entered, **imports_of_client()}))


anyio.run(main)
"""
)


def run(lazy: bool, n: int = 6) -> dict[str, Any]:
    command, *args = peers.fixture_server("well_behaved")
    server = {"command": command, "args": args}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, "lazy" if lazy else "eager", str(n), json.dumps(server)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_a_lazy_transport_is_entered_before_the_sdk_import_finished() -> None:
    result = run(lazy=True)
    assert result["states"] == ["ready"]
    # every server's connect (its process spawn) ran while the import was still going
    assert result["entered_after_import"] == [False] * 6
    assert result["imports"] == 1 and result["threads"] == 1


def test_an_eager_transport_is_entered_only_after_the_import() -> None:
    """The control: without ``imports_sdk_lazily`` the SDK is imported first (a transport
    may import ``mcp`` as it connects), still once for all servers."""
    result = run(lazy=False)
    assert result["states"] == ["ready"]
    assert result["entered_after_import"] == [True] * 6
    assert result["imports"] == 1 and result["threads"] == 1


@pytest.mark.anyio
@pytest.mark.parametrize("fails", [False, True], ids=["slow", "failing"])
async def test_an_sdk_import_slower_than_startup_timeout_is_not_start_up_time(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, fails: bool, no_leftovers: None
) -> None:
    """The stdio transport spawns first and waits on the shared import: a wait longer than
    ``startup_timeout`` does not fail the start; an import that fails says so (and the
    spawned server is reaped: no_leftovers)."""
    import anyio

    import kairox_mcp.lifecycle as lifecycle
    from kairox import Runtime
    from kairox_mcp import manager_of

    real = lifecycle.import_client

    async def slow_import() -> Any:
        await anyio.sleep(2.0)
        if fails:
            raise ImportError("simulated: the SDK does not import")
        return await real()

    monkeypatch.setattr(lifecycle, "import_client", slow_import)
    entry = {"command": sys.executable, "args": peers.fixture_server("well_behaved")[1:], "startup_timeout": 1}
    (tmp_path / "ws").mkdir()
    docs = [("user", {"mcp_servers": {"s": entry}})]
    async with Runtime.open(tmp_path / "ws", home=tmp_path / "home", config_documents=docs) as rt:
        server = manager_of(rt).server("s")
        if fails:
            assert server.state.value == "failed" and "the SDK does not import" in server.detail
        else:
            assert server.state.value == "ready", server.detail
