"""A trusted workspace for the gateway tests, and ``kairox serve`` as a real process.

The workspace declares one backend MCP server (``tests/fixtures/mcp_servers/well_behaved.py``
as ``wb``: tools ``wb_echo``, ``wb_sleep``, ``wb_cwd``, ...) and one skill folder (``greet``,
with an argument and a file beside ``SKILL.md``). The user's config (``$KAIROX_HOME/kairox.toml``)
allows ``wb.*``, asks for ``wb.cwd`` and denies ``wb.env``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import peers

__all__ = [
    "KAIROX",
    "SKILL",
    "TOKEN",
    "Workspace",
    "kairox_env",
    "make_workspace",
    "serve_http",
    "stop",
    "uvicorn_workers",
]

#: the kairox CLI as a fresh interpreter (as the console script runs it), test-sized graces
KAIROX = peers.KAIROX_TEST_GRACES
TOKEN = "s3cret-token-0123456789abcdef"

SKILL = textwrap.dedent(
    """\
    ---
    name: greet
    description: Greet someone by name
    arguments:
      who: {type: string, required: true, description: Who to greet}
    ---
    Say hello to {{ who }}, warmly.
    """
)

USER_CONFIG = textwrap.dedent(
    """\
    [policy.rules]
    "wb.*" = "allow"
    "wb.cwd" = "ask"
    "wb.env" = "deny"
    """
)


class Workspace:
    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.home = home

    def env(self, **extra: str) -> dict[str, str]:
        return kairox_env(self.home, **extra)


def kairox_env(home: Path, **extra: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KAIROX_HOME": str(home), "HOME": str(home)}
    env.update(extra)
    return env


def make_workspace(tmp_path: Path, *, trusted: bool = True, serve: str = "", user_config: str = "") -> Workspace:
    """A workspace under ``tmp_path`` (``ws``, home ``home``), trusted unless told otherwise."""
    from kairox.testing import trust_workspace

    ws = tmp_path / "ws"
    home = tmp_path / "home"
    (ws / ".kairox" / "skills" / "greet" / "references").mkdir(parents=True)
    home.mkdir()
    server = peers.fixture_server("well_behaved")
    (ws / "kairox.toml").write_text(
        f"[mcp_servers.wb]\ncommand = {server[0]!r}\nargs = [{server[1]!r}]\n\n{serve}",
        encoding="utf-8",
    )
    (ws / ".kairox" / "skills" / "greet" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (ws / ".kairox" / "skills" / "greet" / "references" / "notes.md").write_text("# Notes\nbe kind\n", encoding="utf-8")
    (ws / "hello.txt").write_text("hello from the workspace\n", encoding="utf-8")
    (home / "kairox.toml").write_text(USER_CONFIG + user_config, encoding="utf-8")
    if trusted:
        trust_workspace(ws, home, env=kairox_env(home))
    return Workspace(ws, home)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End a ``kairox serve`` process group (SIGTERM, then SIGKILL) and reap it."""
    peers._stop_group(proc, grace=10.0)


@contextlib.contextmanager
def _listening(
    what: str, argv: list[str], port: int, log: Path, env: dict[str, str], cwd: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` as a process (its output in ``log``), yielded once it listens on ``port``, then
    stopped; one that does not come up is a RuntimeError naming ``what`` with the log's end."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    try:
        try:
            peers.wait_for_port(port, timeout=60, proc=proc)
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(f"{what}: {exc}\n{log.read_text(errors='replace')[-3000:]}") from exc
        yield proc
    finally:
        stop(proc)


@contextlib.contextmanager
def serve_http(
    ws: Workspace, *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``kairox -w WS serve --http --port P ARGS`` as a process; yields (``http://127.0.0.1:P/mcp``, the process)."""
    port = peers.free_port()
    argv = [*KAIROX, "-w", str(ws.root), "serve", "--http", "--port", str(port), *args]
    with _listening("kairox serve --http", argv, port, ws.root.parent / f"serve-{port}.log", env or ws.env()) as proc:
        yield f"http://127.0.0.1:{port}/mcp", proc


@contextlib.contextmanager
def uvicorn_workers(ws: Workspace, workers: int, env: dict[str, str]) -> Iterator[str]:
    """``uvicorn kairox_serve.asgi:app --workers N`` as a process; yields the endpoint URL."""
    port = peers.free_port()
    argv = [sys.executable, "-m", "uvicorn", "kairox_serve.asgi:app", "--port", str(port), "--workers", str(workers)]
    with _listening("uvicorn", argv, port, ws.root.parent / f"uvicorn-{port}.log", env, cwd=ws.root.parent):
        yield f"http://127.0.0.1:{port}/mcp"


def stdio_params(ws: Workspace) -> object:
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=KAIROX[0], args=[*KAIROX[1:], "-w", str(ws.root), "serve", "--stdio"], env=ws.env()
    )
