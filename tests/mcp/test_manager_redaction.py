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


def test_a_logger_of_ours_made_after_a_scan_is_redacted_at_the_next_connection() -> None:
    """``install_log_redaction`` runs for every server connection and scans logging's table,
    including a placeholder (``a`` for ``a.b``) that became a logger since."""
    import logging
    import uuid

    from kairox_mcp._sdklog import install_log_redaction

    def redacted(name: str) -> bool:
        return any(type(f).__name__ == "_Redact" for f in logging.getLogger(name).filters)

    base = f"kairox_stdio.test_{uuid.uuid4().hex}"
    install_log_redaction()
    logging.getLogger(f"{base}.child")  # makes the placeholder `base`
    install_log_redaction()
    assert redacted(f"{base}.child")
    install_log_redaction()  # nothing new: the same answer
    assert redacted(f"{base}.child")
    logging.getLogger(base)  # the placeholder becomes a logger; the table does not grow
    install_log_redaction()
    assert redacted(base)
    unrelated = f"somebody_else_{uuid.uuid4().hex}"
    logging.getLogger(unrelated)
    install_log_redaction()
    assert not redacted(unrelated)


def test_every_module_logger_of_ours_is_named_in_the_list() -> None:
    """A module of ours imported after the last connection's scan makes its logger then; only
    a logger named in ``REDACTED_LOGGERS`` has the filter from the first install on (a record
    of ``kairox_mcp.host`` carries a traceback, which may hold a URL with its token)."""
    import re

    from kairox_mcp._sdklog import _OURS, REDACTED_LOGGERS

    root = Path(__file__).resolve().parents[2] / "builtin_plugins"
    found = set()
    for package in _OURS:
        files = list(root.glob(f"*/src/{package}/**/*.py"))
        assert files, package
        for path in files:
            if re.search(r"getLogger\(__name__\)", path.read_text(encoding="utf-8")):
                parts = path.relative_to(root).with_suffix("").parts[2:]  # after <dist>/src/
                found.add(".".join(parts).removesuffix(".__init__"))
    assert "kairox_mcp.host" in found and "kairox_stdio._env" in found
    assert sorted(found - set(REDACTED_LOGGERS)) == []


def test_a_listed_logger_that_lost_its_filter_gets_it_back_at_the_next_connection() -> None:
    """Something (a test, a logging config applied later) may clear a logger's filters; the
    next connection gives the filter back to every listed logger, ours or a library's."""
    import logging

    from kairox_mcp._sdklog import _install, _Redact, _ToDiagnostics

    _install()  # what each connection runs (capture_sdk_logs)
    # a library's, ours, and the SDK's (whose records go to the server's diagnostics, redacted)
    for name, kind in (("httpx2", _Redact), ("kairox_mcp.host", _Redact), ("mcp.client.sse", _ToDiagnostics)):
        logger = logging.getLogger(name)
        saved = list(logger.filters)
        try:
            for flt in saved:
                logger.removeFilter(flt)
            _install()
            assert [type(f) for f in logger.filters] == [kind], name
        finally:
            for flt in list(logger.filters):
                logger.removeFilter(flt)
            for flt in saved:
                logger.addFilter(flt)
