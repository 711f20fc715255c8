"""Log records carry no secret, whichever module of the SDK, the HTTP stack or a kairox plugin
logs them (no list of modules to keep up to date), and the MCP manager installs that with its
first server, not when it is made: a runtime that declares no server imports no
``kairox_mcp._sdklog``, and one that adds a server in code has the redaction before that server
can log. The SDK's own records of a connection go to that server's diagnostics."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kairox import hookimpl
from kairox_testing import KairoxHarness

SECRET = "s3cr3t-token-value"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers"


class _Seen(logging.Handler):
    """An embedding program's own handler (not kairox's redacting one): what it would print."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@contextmanager
def seen_at_debug() -> Iterator[_Seen]:
    root = logging.getLogger()
    handler, level = _Seen(), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def log_secrets(logger: logging.Logger) -> None:
    """A URL with its password and token in a message, and in a traceback."""
    logger.debug("connecting to https://user:%s@example.com/mcp?token=%s", SECRET, SECRET)
    try:
        raise RuntimeError(f"GET https://example.com/x?api_key={SECRET} failed")
    except RuntimeError:
        logger.info("it failed", exc_info=True)


PROBE = """
import json, logging, sys, uuid
import anyio, kairox

SECRET = "s3cr3t-token-value"

async def main():
    async with kairox.Runtime.open(workspace=sys.argv[1], start=False) as rt:
        from kairox_mcp import manager_of
        from kairox_mcp.config import McpServerConfig, ServerDefinition

        before = "kairox_mcp._sdklog" in sys.modules
        await manager_of(rt).add_server(
            ServerDefinition("quick", McpServerConfig(command=sys.executable), origin="code"), start=False
        )
        after = "kairox_mcp._sdklog" in sys.modules
        # a module of the HTTP stack nobody named, imported after the server was added
        logging.getLogger(f"httpx2._new_{uuid.uuid4().hex}").warning("GET https://u:%s@h/", SECRET)
        return before, after

logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
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
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [False, True]
    assert "GET https://u:<redacted>@h/" in proc.stderr and SECRET not in proc.stderr


class NewModules:
    """Logs, as the first server starts (the MCP manager has installed the redaction, the
    connection has not begun), from loggers of modules that no list names and that did not
    exist until now: of kairox plugin packages, of the SDK, of someone else's package."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex
        self.ours = [f"kairox_stdio.new_{tag}", f"kairox_mcp.new_{tag}", f"mcp.client.new_{tag}", f"mcp.new_{tag}"]
        self.other = f"somebody_else_{tag}.mod"

    @hookimpl
    def kairox_event(self, event: Any) -> None:
        if getattr(event, "kind", "") != "McpServerStarting":
            return
        for name in self.ours:
            log_secrets(logging.getLogger(name))
        logging.getLogger(self.other).debug("unrelated https://user:%s@example.com/", SECRET)


def test_a_new_module_logger_is_redacted_at_vv_without_being_listed(tmp_path: Path) -> None:
    """``kairox -vv`` in process, an embedding program's own DEBUG handler on the root logger:
    every record of those new loggers reaches it (and the CLI's stderr) with the secrets
    hidden, tracebacks included; a record of someone else's package is left as it was."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    server = json.dumps(str(FIXTURES / "well_behaved.py"))
    (tmp_path / "home" / "kairox.toml").write_text(
        f"[mcp_servers.quick]\ncommand = {json.dumps(sys.executable)}\nargs = [{server}]\nstartup_timeout = 60\n"
    )
    plugin = NewModules()
    harness = KairoxHarness(tmp_path / "ws", tmp_path / "home", plugins=[plugin])
    with seen_at_debug() as seen:
        result = harness.cli("-vv", "status", load_entrypoints=True)
    assert result.exit_code == 0, result.stdout + result.stderr
    for name in plugin.ours:
        assert f"{name}: connecting to https://user:<redacted>@example.com/mcp?token=<redacted>" in seen.text
        assert f"{name}: it failed" in seen.text
    assert "api_key=<redacted> failed" in seen.text
    assert SECRET not in "\n".join(line for line in seen.lines if not line.startswith(plugin.other))
    assert f"{plugin.other}: unrelated https://user:{SECRET}@example.com/" in seen.text  # not ours to touch
    assert f"{plugin.ours[0]}: connecting to" in result.stderr
    assert SECRET not in result.stderr.replace(f"unrelated https://user:{SECRET}", "")


@contextmanager
def connection(diagnostics: Any) -> Iterator[None]:
    """What a server connection does for the SDK's records: the capture (the lifecycle's),
    and the watch once the connection's client is made (the SDK imported by then)."""
    from kairox_mcp._sdklog import capture_sdk_logs, watch_sdk_loggers

    with capture_sdk_logs(diagnostics):
        watch_sdk_loggers()
        yield


def test_a_record_of_the_sdk_goes_to_the_connection_s_diagnostics() -> None:
    """A record of the SDK's client side made while a server connects goes to that server's
    diagnostics and not to the handlers (below DEBUG); a logger made after the connection
    began gets that at the next one, and is printed redacted meanwhile. The SDK's server side
    (``kairox serve``) is printed as any other."""
    from kairox_mcp.transport import Diagnostics

    tag = uuid.uuid4().hex
    ours = logging.getLogger("kairox_mcp")
    level = ours.level
    ours.setLevel(logging.INFO)  # not -vv
    diag = Diagnostics()
    try:
        with seen_at_debug() as seen:
            with connection(diag):
                late = logging.getLogger(f"mcp.client.new_{tag}")
                late.warning("first https://u:%s@h/", SECRET)
            with connection(diag):  # the next connection
                late.warning("second https://u:%s@h/", SECRET)
                logging.getLogger(f"mcp.server.new_{tag}").warning("served https://u:%s@h/", SECRET)
    finally:
        ours.setLevel(level)
    assert f"mcp.client.new_{tag}: first https://u:<redacted>@h/" in seen.text
    assert "second" not in seen.text
    assert f"mcp.server.new_{tag}: served https://u:<redacted>@h/" in seen.text
    shown = diag.stderr.tail(10)
    assert "[mcp sdk warning] second https://u:<redacted>@h/" in shown
    assert not [line for line in shown if "first" in line or "served" in line]
    assert SECRET not in seen.text + "\n".join(shown)


def test_a_package_logger_that_lost_the_redaction_gets_it_back_at_the_next_connection() -> None:
    """Something (a test, a logging config applied later) may clear a logger's handlers or
    filters; the next connection gives them back, to a library's logger and to ours."""
    from kairox_mcp._sdklog import RedactingHandler, install_log_redaction, watch_sdk_loggers
    from kairox_mcp.transport import Diagnostics

    install_log_redaction()  # the manager's, with its first server
    watch_sdk_loggers()
    sdk = logging.getLogger("mcp.client.session")  # a module logger of the SDK's, with its filter
    for name in ("httpx2", "kairox_mcp", "mcp"):
        logger = logging.getLogger(name)
        saved, saved_filters = list(logger.handlers), list(sdk.filters)
        try:
            for handler in saved:
                logger.removeHandler(handler)
            for flt in saved_filters:
                sdk.removeFilter(flt)
            with connection(Diagnostics()):  # the next connection
                pass
            assert [type(h) for h in logger.handlers] == [RedactingHandler], name
            assert len(sdk.filters) == 1, name
        finally:
            logger.handlers[:] = saved
            sdk.filters[:] = saved_filters


@pytest.mark.anyio
async def test_a_secret_of_the_runtimes_env_is_hidden_in_every_servers_stderr(
    kairox_harness: KairoxHarness, tmp_path: Path
) -> None:
    """The variables of the runtime's env that look secret are found once for all servers:
    each server's stderr that echoes one, here through a ``${VAR}`` in its args, shows it
    hidden."""
    script = tmp_path / "echoes.py"
    script.write_text("import sys\nsys.stderr.write('given ' + sys.argv[1] + '\\n')\nsys.exit(3)\n", encoding="utf-8")
    kairox_harness.env["SERVICE_API_TOKEN"] = SECRET
    kairox_harness.write_config(
        "".join(
            f"[mcp_servers.echo{i}]\ncommand = {json.dumps(sys.executable)}\n"
            f'args = [{json.dumps(str(script))}, "${{SERVICE_API_TOKEN}}"]\n'
            "startup_timeout = 20\nmax_restarts = 0\n"
            for i in range(2)
        ),
        where="user",
    )
    async with kairox_harness.open(load_entrypoints=True) as rt:
        statuses = [s for s in rt.status().servers if s.name.startswith("echo")]
    assert len(statuses) == 2
    for status in statuses:
        shown = "\n".join([status.detail, *status.log_tail])
        assert "given <redacted>" in status.log_tail, shown
        assert SECRET not in shown
