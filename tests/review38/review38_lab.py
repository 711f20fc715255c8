"""Review 38: a lab for reproductions against real ``kairox`` processes.

Each :class:`Lab` is a temporary folder with a private ``HOME`` and ``KAIROX_HOME``, a
cloned workspace ``repo/``, a private file ``home/.ssh/id_ed25519`` whose content is
:data:`PRIVATE`, a ``markers/`` folder a would-be command writes into, and
``SECRET_TOKEN`` set to :data:`SECRET` in the environment of every run.
Runs are ``uv run --project WORKTREE kairox ...`` (stdin not a terminal).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

WORKTREE = Path(__file__).resolve().parents[2]
SECRET = "s3cr3t-r38-9d2b-never-print"
PRIVATE = "PRIVATE-r38-KEY-CONTENT-7c1e"


class Lab:
    def __init__(self, base: Path | None = None) -> None:
        self.base = Path(base) if base is not None else Path(tempfile.mkdtemp(prefix="r38-"))
        self.ws = self.base / "repo"
        self.home = self.base / "home"
        self.markers = self.base / "markers"
        for d in (self.ws, self.home, self.markers, self.home / ".ssh"):
            d.mkdir(parents=True, exist_ok=True)
        self.private = self.home / ".ssh" / "id_ed25519"
        self.private.write_text(PRIVATE + "\n", encoding="utf-8")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
        self.env.update(
            {
                "HOME": str(self.home),
                "KAIROX_HOME": str(self.home / ".kairox"),
                "SECRET_TOKEN": SECRET,
                "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR", "/root/.cache/uv"),
                "PWD": str(self.ws),
            }
        )
        (self.home / ".kairox").mkdir(exist_ok=True)

    def write(self, rel: str, text: str, base: Path | None = None) -> Path:
        path = (base or self.ws) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def link(self, rel: str, target: str | Path) -> Path:
        path = self.ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, path)
        return path

    def marker_cmd(self, name: str) -> list[str]:
        target = self.markers / name
        return ["sh", "-c", f'echo "ran $1" >> {shlex.quote(str(target))}', "x", "${SECRET_TOKEN}"]

    def marker_shell(self, name: str) -> str:
        return f"echo ran >> {shlex.quote(str(self.markers / name))}"

    def ran(self) -> list[str]:
        return sorted(p.name for p in self.markers.iterdir())

    def run(
        self, *args: str, timeout: float = 120, input: str | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``uv run kairox ARGS`` in the workspace; on ``timeout`` its whole process group is
        killed (``uv`` and ``kairox`` both) and ``subprocess.TimeoutExpired`` raised."""
        proc = subprocess.Popen(
            ["uv", "run", "--quiet", "--project", str(WORKTREE), "kairox", *args],
            cwd=cwd or self.ws,
            env=self.env,
            stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def out(self, *args: str, **kw: Any) -> str:
        r = self.run(*args, **kw)
        return f"{r.stdout}\n{r.stderr}"

    def json(self, *args: str, **kw: Any) -> Any:
        r = self.run(*args, **kw)
        return json.loads(r.stdout)

    def mcp(self, action: str, *rest: str, timeout: float = 120) -> Any:
        """``kairox serve --stdio`` in the workspace, asked ``action`` by a real MCP client
        (``mcp_client.py``); its JSON answer, or the client's stderr when it failed."""
        r = subprocess.run(
            [
                str(WORKTREE / ".venv" / "bin" / "python"),
                str(Path(__file__).with_name("mcp_client.py")),
                str(self.ws),
                action,
                *rest,
            ],
            cwd=self.ws,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return json.loads(r.stdout) if r.stdout.strip() else r.stderr[-3000:]

    def leaks(self, text: str) -> list[str]:
        return [m for m in (SECRET, PRIVATE) if m in text]


#: commands that read and print what the workspace contains; none may print a secret
READERS: tuple[tuple[str, ...], ...] = (
    ("context", "hello"),
    ("skills", "list"),
    ("plugin", "list"),
    ("agents", "list"),
    ("config", "show"),
    ("status", "--json"),
    ("mcp", "list"),
    ("tools", "list"),
)
