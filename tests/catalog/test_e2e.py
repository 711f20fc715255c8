"""End to end with real servers: install mcp-server-time from PyPI and start it to Ready.

Uses the kernel, kairox-mcp and kairox-stdio exactly as a user's install
would. The built-in recipe is ``uvx mcp-server-time`` (or ``uv tool run`` when
only ``uv`` is on PATH); when uv is missing altogether, the test installs the
same server with the already installed package (``python -m mcp_server_time``).
"""

from __future__ import annotations

import shutil
import sys

import pytest

import kairox_catalog.hooks
import kairox_mcp.hooks
import kairox_stdio.hooks
from kairox._compat import tomllib
from kairox_catalog.install import Installer, InstallOptions
from kairox_catalog.model import CatalogEntry, LaunchRecipe
from kairox_catalog.progress import RecordingProgress
from kairox_testing import KairoxHarness

pytestmark = pytest.mark.integration

HAVE_UV = shutil.which("uvx") is not None or shutil.which("uv") is not None


@pytest.fixture
def kairox_plugins() -> list[object]:
    return [kairox_catalog.hooks, kairox_mcp.hooks, kairox_stdio.hooks]


def test_cli_install_of_the_real_time_server_reaches_ready(kairox_harness: KairoxHarness) -> None:
    if not HAVE_UV:
        pytest.skip("uv is not installed; test_api_install_reaches_ready covers the fallback recipe")
    path = kairox_harness.write_config('# my workspace\n[policy] # defaults\napproval = "on_request"\n')
    result = kairox_harness.cli("catalog", "install", "time", "--yes")
    assert result.exit_code == 0, result.output
    assert "==> Pre-installing time (" in result.stderr
    assert "==> Starting time once to verify it reaches Ready ..." in result.stderr
    assert "it starts and offers 2 tools" in result.stdout
    text = path.read_text()
    assert text.startswith('# my workspace\n[policy] # defaults\napproval = "on_request"\n')
    server = tomllib.loads(text)["mcp_servers"]["time"]
    assert server["args"][-1] == "mcp-server-time" and server["command"] in ("uvx", "uv")
    # the workspace now starts it like any configured server
    status = kairox_harness.cli("status", "--json")
    assert status.exit_code == 0, status.output
    assert '"state": "ready"' in status.stdout


@pytest.mark.anyio
async def test_api_install_reaches_ready_or_says_why_not(kairox_harness: KairoxHarness) -> None:
    good = CatalogEntry(
        name="clock", source="test", launch=LaunchRecipe(command=sys.executable, args=("-m", "mcp_server_time"))
    )
    dead = CatalogEntry(
        name="dead",
        source="test",
        launch=LaunchRecipe(
            command=sys.executable, args=("-c", "import sys; print('bad config', file=sys.stderr); sys.exit(7)")
        ),
    )
    progress = RecordingProgress()
    async with kairox_harness.open(start=False) as rt:
        ok = await Installer(rt, progress=progress).install(good, InstallOptions(prepare=False))
        assert ok.verification is not None and ok.verification.outcome == "ready", ok.verification
        assert ok.verification.tools == 2
        bad = await Installer(rt, progress=progress).install(dead, InstallOptions(prepare=False, verify_timeout=60))
    assert bad.verification is not None and bad.verification.outcome == "failed"
    assert "bad config" in bad.verification.detail or "7" in bad.verification.detail
    assert not bad.ok
    assert ("done", "Starting clock once to verify it reaches Ready: ready, 2 tools") in progress.events
    assert any(kind == "failed" and text.startswith("Starting dead once") for kind, text in progress.events)


@pytest.mark.anyio
async def test_verify_before_writing_writes_nothing_for_a_server_that_fails(kairox_harness: KairoxHarness) -> None:
    original = kairox_harness.write_config('# mine\n[policy] # keep\napproval = "on_request"\n')
    before = original.read_bytes()
    dead = CatalogEntry(
        name="dead",
        source="test",
        launch=LaunchRecipe(command=sys.executable, args=("-c", "import sys; sys.exit('bad config')")),
    )
    options = InstallOptions(prepare=False, verify_before_writing=True, verify_timeout=60)
    async with kairox_harness.open(start=False) as rt:
        report = await Installer(rt).install(dead, options)
    assert report.verification is not None and report.verification.outcome == "failed"
    assert not report.ok and report.written == {}
    assert original.read_bytes() == before
