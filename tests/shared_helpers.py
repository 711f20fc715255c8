"""Helpers shared by tests of several directories.

Import as ``from shared_helpers import ...`` (pytest puts ``tests/`` on ``sys.path`` because of
``tests/conftest.py``), as for ``peers``.

- :func:`open_with_builtin_tools` — a :class:`~kairox._runtime.Runtime` with only the built-in tools.
- :func:`busy_cli_call` — ``kairox tools call`` of a tool that sleeps, as a real process.
- :func:`on_pty` — a child with stdin and stderr (and stdout) on a new pseudo-terminal, reaped.
- :func:`read_pty` — read a child's pseudo-terminal until it closes, exits or time runs out.
- :func:`converse_on_pty` — read a child's pseudo-terminal and answer its prompt once.
- :func:`serve_asgi` — run an ASGI app with uvicorn on a free 127.0.0.1 port (in-process).
- :func:`serve_http` — serve a ``http.server`` request handler on a free 127.0.0.1 port, on a thread.
- :func:`loaded_after` — which of some modules a fresh interpreter has imported after running some code.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import peers

__all__ = [
    "STRICT_POLICY",
    "busy_cli_call",
    "converse_on_pty",
    "on_pty",
    "open_with_builtin_tools",
    "read_pty",
    "serve_asgi",
    "serve_http",
]

#: a config document that leaves the temp dir out of the writable roots: the workspace is the only one
STRICT_POLICY = [("test", {"policy": {"include_temp_dir": False}})]


def open_with_builtin_tools(ws: Path, *plugins: object, documents: Any = STRICT_POLICY, approver: Any = None) -> Any:
    """``Runtime.open`` of ``ws`` (home ``ws/../home``) with the built-in tools, ``plugins``,
    no entry points and the config ``documents``."""
    import kairox_tools.hooks
    from kairox._runtime import Runtime

    return Runtime.open(
        ws,
        home=ws.parent / "home",
        env=dict(os.environ),
        plugins=[kairox_tools.hooks, *plugins],
        load_entrypoints=False,
        config_documents=documents,
        approver=approver,
    )


def busy_cli_call(
    command: Sequence[str], ws: Path, tmp_path: Path, tool: str, preexec_fn: Callable[[], None]
) -> subprocess.Popen[str]:
    """Start ``COMMAND -w WS tools call TOOL --args '{"seconds": 60}' --yes`` (text pipes) with a
    fresh ``tmp_path/home`` that trusts ``ws``, so the workspace's servers run."""
    from kairox_testing import trust_workspace

    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "KAIROX_HOME": str(home), "HOME": str(home)}
    trust_workspace(ws, home, env=env)  # the workspace's servers run only once it is trusted
    argv = [*command, "-w", str(ws), "tools", "call", tool, "--args", '{"seconds": 60}', "--yes"]
    return subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=preexec_fn,
    )


@contextlib.contextmanager
def on_pty(
    argv: Sequence[str], *, stdout_too: bool = False, size: tuple[int, int] | None = None, **popen: Any
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """Start ``argv`` with stdin and stderr on a new pseudo-terminal (of ``size`` rows x
    columns if given), stdout too with ``stdout_too`` (else a pipe); yields (the process, the
    master end). On exit the master end is closed and a process still running is killed."""
    import fcntl  # POSIX only, as are the tests using it
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    if size is not None:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
    stdout = slave if stdout_too else subprocess.PIPE
    proc = subprocess.Popen(argv, stdin=slave, stdout=stdout, stderr=slave, **popen)
    os.close(slave)
    try:
        yield proc, master
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def read_pty(
    master: int,
    proc: subprocess.Popen[Any],
    *,
    timeout: float,
    poll: float = 0.1,
    on_output: Callable[[bytes], None] | None = None,
) -> bytes:
    """Read what ``proc`` shows on the pseudo-terminal ``master`` until it closes its end,
    exits or ``timeout`` seconds pass; after each read, ``on_output(everything read so far)``.
    Returns everything read."""
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], poll)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            seen += chunk
            if on_output is not None:
                on_output(seen)
        elif proc.poll() is not None:
            break
    return seen


def converse_on_pty(
    master: int,
    proc: subprocess.Popen[Any],
    prompt: bytes,
    answer: bytes,
    *,
    timeout: float,
    poll: float = 0.1,
) -> tuple[bytes, bool]:
    """:func:`read_pty`, writing ``answer`` once, the first time ``prompt`` is seen.
    Returns (everything read, whether ``prompt`` came)."""
    asked = False

    def answer_once(seen: bytes) -> None:
        nonlocal asked
        if not asked and prompt in seen:
            asked = True
            os.write(master, answer)

    return read_pty(master, proc, timeout=timeout, poll=poll, on_output=answer_once), asked


@contextlib.asynccontextmanager
async def serve_asgi(app: Any, *, log_level: str = "error", force_exit: bool = False) -> AsyncIterator[int]:
    """Serve ``app`` with uvicorn on 127.0.0.1 once it has started; yields the port. With
    ``force_exit`` the server does not wait for open streams (of hung requests) when it stops."""
    import uvicorn

    port = peers.free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level=log_level, lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
                await anyio.sleep(0.01)
        try:
            yield port
        finally:
            server.should_exit = True
            if force_exit:
                server.force_exit = True


@contextlib.contextmanager
def serve_http(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[int]:
    """Serve ``handler`` on a free 127.0.0.1 port, on a thread; yields the port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def loaded_after(code: str, *names: str) -> list[str]:
    """The modules ``names``, and their submodules, that a fresh interpreter has imported once
    it ran ``code`` (this one has imported everything already), sorted."""
    subs = tuple(f"{name}." for name in names)
    report = f"import json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m in {names!r} or m.startswith({subs!r}))))"
    out = subprocess.run([sys.executable, "-c", f"{code}\n{report}"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def span_exporter() -> Any:
    """This process's OpenTelemetry tracer provider, as a host configures it (the global one can
    be set once per process), with a new in-memory exporter added: an ``InMemorySpanExporter``."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


def sdk_stdio(params: Any) -> Any:
    """The SDK's stdio transport to ``params`` (for ``mcp.Client``), the server's stderr going
    to this test's ``sys.stderr``.

    ``mcp.client.stdio.stdio_client`` takes ``sys.stderr`` as it was when ``mcp`` was first
    imported for its ``errlog`` default. In a test process where that first import ran inside
    a ``CliRunner`` invocation (a ``kairox`` command run in process), the default is click's
    captured stream, which has no file descriptor, and every later start through the default
    fails with ``io.UnsupportedOperation: fileno`` (``test_sdk_stdio.py``)."""
    from mcp.client.stdio import stdio_client

    return stdio_client(params, errlog=sys.stderr)
