"""``-v``/``-vv`` show INFO and DEBUG records on stderr, secrets redacted (issue 16, item 4).

Before, ``main()`` ran ``logging.basicConfig(ERROR)`` first, so the group's own
``basicConfig(INFO)`` for ``-v`` did nothing and no INFO or DEBUG record was ever seen.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kairox import hookimpl
from kairox_testing import KairoxHarness

SECRET = "s3cr3t-token-value"
log = logging.getLogger("kairox_test_verbose")


class Chatty:
    @hookimpl
    def kairox_register_tool_providers(self, registrar: Any, runtime: Any) -> None:
        log.info("connecting to https://user:%s@example.com/mcp?api_key=%s", SECRET, SECRET)
        log.debug("debug detail --token=%s", SECRET)
        try:
            raise RuntimeError(f"GET https://example.com/x?token={SECRET} failed")
        except RuntimeError:
            log.warning("it failed", exc_info=True)


@pytest.fixture
def harness(tmp_path: Path) -> KairoxHarness:
    (tmp_path / "ws").mkdir()
    return KairoxHarness(tmp_path / "ws", tmp_path / "home", plugins=[Chatty()])


@pytest.mark.parametrize(
    ("flags", "shown", "hidden"),
    [
        ((), [], ["connecting to", "debug detail", "it failed"]),
        (("-v",), ["INFO: kairox_test_verbose: connecting to", "it failed", "RuntimeError"], ["debug detail"]),
        (("-vv",), ["connecting to", "DEBUG: kairox_test_verbose: debug detail", "it failed"], []),
    ],
)
def test_verbosity_shows_records_and_never_their_secrets(
    harness: KairoxHarness, flags: tuple[str, ...], shown: list[str], hidden: list[str]
) -> None:
    result = harness.cli(*flags, "status")
    err = result.stderr
    for text in shown:
        assert text in err, err
    for text in hidden:
        assert text not in err, err
    assert SECRET not in err and SECRET not in result.stdout


def test_verbose_in_a_real_process(tmp_path: Path) -> None:
    """The installed command, a real failure: an HTTP server (in the user's own config)
    that nothing listens for. ``-v`` shows why it failed; the URL's secrets stay hidden."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (home / "kairox.toml").write_text(
        f'[mcp_servers.api]\ntype = "streamable_http"\nurl = "http://user:{SECRET}@127.0.0.1:9/mcp?token={SECRET}"\nstartup_timeout = 5\n'
    )
    env = {"KAIROX_HOME": str(home), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    quiet = subprocess.run(
        [str(Path(sys.executable).parent / "kairox"), "--workspace", str(ws), "status"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    loud = subprocess.run(
        [str(Path(sys.executable).parent / "kairox"), "--workspace", str(ws), "-v", "status"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert "INFO" not in quiet.stderr, quiet.stderr
    assert "INFO: kairox_mcp.lifecycle: MCP server api failed" in loud.stderr, loud.stderr
    for out in (quiet, loud):
        assert SECRET not in out.stderr and SECRET not in out.stdout
