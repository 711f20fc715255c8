"""``sandbox: "worker"``: the plugin runs in its own process; its tools are proxied over a pipe.

The worker's environment holds only the plugin's ``requiresEnv`` variables plus
a minimal base (``PATH``, locale, temp dir), so a plugin never sees the agent's
other secrets. It runs in its own process group; its stderr goes to a bounded
buffer (never the terminal). If it dies, its pending and later calls fail with
a :class:`~kairox.ToolError` carrying the exit status and the stderr tail; the
runtime and the other plugins go on.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from subprocess import PIPE
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from kairox import ServerState, ServerStatus, ToolContext, ToolError, ToolResult, ToolSpec
from kairox.process import OutputTail, describe_exit, reap
from kairox_manifests import drain_into

from .adapt import absolute_paths, activation_of, hook_answer, hook_payload, result_from
from .context import HOOK_EVENTS
from .direct import module_name_for

if TYPE_CHECKING:
    from kairox import Runtime
    from kairox_manifests import Activation, ActivationContext, BundleManifest

__all__ = ["BASE_ENV", "WorkerProcess", "WorkerTool", "activate_worker", "worker_env"]

logger = logging.getLogger(__name__)

#: variables a worker inherits besides its plugin's requiresEnv
BASE_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT")
STARTUP_TIMEOUT = 30.0
CLOSE_GRACE = 3.0
MAX_LINE = 64 * 1024 * 1024
#: the last bytes of a worker's stderr kept
MAX_STDERR = 32 * 1024


def worker_env(parent: Mapping[str, str], requires: tuple[str, ...], root: Path) -> dict[str, str]:
    env = {k: parent[k] for k in BASE_ENV if k in parent}
    env.update({k: parent[k] for k in requires if k in parent})
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["KAIROX_PLUGIN_ROOT"] = str(root)
    # the host module must be importable whatever PYTHONPATH the agent had
    package_parent = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = package_parent
    return env


class WorkerProcess:
    """One plugin's worker: start, request/response by id, crash detection, close."""

    def __init__(self, plugin_id: str, config: dict[str, Any], env: dict[str, str], cwd: Path) -> None:
        self.plugin_id = plugin_id
        self.config = config
        self.env = env
        self.cwd = cwd
        self.stderr = OutputTail(MAX_STDERR)
        self.process: Process | None = None
        self.ready: dict[str, Any] | None = None
        self.dead: str | None = None
        self.closing = False
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        self._started = anyio.Event()
        self._exited = anyio.Event()
        self._write_lock = anyio.Lock()

    # -- lifecycle -------------------------------------------------------------------
    async def start(self, runtime: Runtime, timeout: float = STARTUP_TIMEOUT) -> dict[str, Any]:
        argv = [sys.executable, "-m", "kairox_philont._worker_host", json.dumps(self.config)]
        self.process = await anyio.open_process(
            argv, stdin=PIPE, stdout=PIPE, stderr=PIPE, cwd=str(self.cwd), env=self.env, start_new_session=True
        )
        runtime.spawn(self._read, name=f"philont worker {self.plugin_id} (stdout)")
        assert self.process.stderr is not None
        runtime.spawn(drain_into, self.process.stderr, self.stderr, name=f"philont worker {self.plugin_id} (stderr)")
        with anyio.move_on_after(timeout) as scope:
            await self._started.wait()
        if scope.cancelled_caught:
            await self.close()
            raise RuntimeError(f"the worker did not start within {timeout:g} s{self._tail()}")
        if self.ready is None:
            error = self.dead or "the worker exited before it was ready"
            await self.close()
            raise RuntimeError(f"{error}{self._tail()}")
        return self.ready

    def _tail(self) -> str:
        tail = self.stderr.text(15).strip()
        return f"\nstderr (last lines):\n{tail}" if tail else ""

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stream = BufferedByteReceiveStream(self.process.stdout)
        reason = ""
        try:
            while True:
                line = await stream.receive_until(b"\n", MAX_LINE)
                self._dispatch(line)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        except anyio.DelimiterNotFound:
            reason = "sent a line longer than the limit"
        except Exception as exc:  # pragma: no cover - defensive
            reason = f"{type(exc).__name__}: {exc}"
        await self._on_exit(reason)

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            logger.debug("worker %s: not JSON on stdout: %r", self.plugin_id, line[:200])
            return
        if not isinstance(message, dict):
            return
        kind = message.get("type")
        if kind == "ready":
            self.ready = message
            self._started.set()
            return
        if kind == "fatal":
            self.dead = f"register() failed: {message.get('error')}"
            tb = str(message.get("traceback") or "")
            for tb_line in tb.splitlines():
                self.stderr.append(tb_line)
            self._started.set()
            return
        mid = message.get("id")
        entry = self._pending.pop(mid, None) if isinstance(mid, int) else None
        if entry is not None:
            event, box = entry
            box.append(message)
            event.set()

    async def _on_exit(self, reason: str) -> None:
        code: int | None = None
        if self.process is not None:
            with anyio.move_on_after(CLOSE_GRACE):
                code = await self.process.wait()
        what = "was stopped" if self.closing else f"{describe_exit(code)}" if code is not None else "closed its output"
        if reason:
            what = f"{what} ({reason})"
        if self.dead is None or not self.dead.startswith("register()"):
            self.dead = f"the plugin worker {what}"
        pending, self._pending = self._pending, {}
        for event, box in pending.values():
            box.append({"crash": self.dead})
            event.set()
        self._started.set()
        self._exited.set()

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.dead is not None or self.process is None or self.process.stdin is None:
            raise ToolError(f"{self.plugin_id}: {self.dead or 'the worker is not running'}{self._tail()}")
        mid = next(self._ids)
        event = anyio.Event()
        box: list[dict[str, Any]] = []
        self._pending[mid] = (event, box)
        try:
            data = json.dumps({**message, "id": mid}, default=str).encode("utf-8") + b"\n"
            try:
                async with self._write_lock:
                    await self.process.stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self._exited.wait()
            await event.wait()
        finally:
            self._pending.pop(mid, None)
        answer = box[0] if box else {"crash": self.dead or "no answer"}
        if "crash" in answer:
            raise ToolError(f"{self.plugin_id}: {answer['crash']}{self._tail()}")
        return answer

    async def close(self) -> None:
        """Close stdin (the host exits on EOF), wait a little, then kill the group and reap."""
        self.closing = True
        process = self.process
        if process is None:
            return
        with anyio.CancelScope(shield=True):
            if process.stdin is not None:
                with contextlib.suppress(Exception):
                    await process.stdin.aclose()
            with anyio.move_on_after(CLOSE_GRACE):
                await process.wait()
            await reap(process, grace=0.5)
            with anyio.move_on_after(CLOSE_GRACE):
                await self._exited.wait()

    def status(self) -> ServerStatus:
        if self.dead is not None and not self.closing:
            state, detail = ServerState.FAILED, self.dead
            last = [line.strip() for line in self.stderr.tail(3) if line.strip()]
            if last:
                detail += f" | {last[-1]}"
        elif self.ready is not None and self.dead is None:
            pid = self.process.pid if self.process else "?"
            state, detail = ServerState.READY, f"worker pid {pid}"
        else:
            state, detail = ServerState.STOPPED, self.dead or "not started"
        tools = len(self.ready.get("tools", [])) if self.ready else 0
        return ServerStatus(f"{self.plugin_id} (worker)", "philont-worker", state, detail, tools, str(self.cwd))


class WorkerTool:
    """A tool whose handler runs in the plugin's worker."""

    def __init__(self, spec: ToolSpec, worker: WorkerProcess, name: str) -> None:
        self._spec = spec
        self._worker = worker
        self._name = name

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        workspace = context.runtime.workspace if context.runtime is not None else None
        arguments = absolute_paths(arguments, workspace)  # the paths the policy checked
        answer = await self._worker.request({"op": "tool", "name": self._name, "arguments": arguments})
        if "error" in answer:
            raise ToolError(f"{self._spec.id}: {answer['error']}")
        result = answer.get("result")
        return result_from(result if isinstance(result, dict) else {})


def _worker_hook(worker: WorkerProcess, event: str, index: int) -> Any:
    async def hook(**kwargs: Any) -> Any:
        answer = await worker.request({"op": "hook", "index": index, "payload": hook_payload(event, kwargs)})
        if "error" in answer:
            raise RuntimeError(str(answer["error"]))
        return hook_answer(event, answer.get("value"))

    return hook


async def activate_worker(manifest: BundleManifest, context: ActivationContext) -> Activation:
    code = manifest.code
    assert code is not None
    runtime = context.runtime
    config = {
        "id": code.tool_prefix,
        "root": str(manifest.root),
        "main": str(code.main),
        "module": module_name_for(code.tool_prefix, code.main),
        "name": str(manifest.metadata.get("displayName") or manifest.name),
        "version": manifest.version or "",
        "requires_env": list(code.requires_env),
    }
    worker = WorkerProcess(
        code.tool_prefix, config, worker_env(runtime.env, code.requires_env, manifest.root), manifest.root
    )
    from .config import philont_config

    ready = await worker.start(runtime, timeout=philont_config(runtime.config).startup_timeout)
    tools = [
        (described, functools.partial(WorkerTool, worker=worker, name=described["name"]))
        for described in ready.get("tools", [])
        if isinstance(described, dict) and isinstance(described.get("name"), str)
    ]
    hooks = [
        (philont_event, functools.partial(_worker_hook, worker, index=index))
        for index, philont_event in enumerate(ready.get("hooks", []))
        if philont_event in HOOK_EVENTS
    ]
    return activation_of(context, code.tool_prefix, tools, hooks, close=worker.close, status=lambda: [worker.status()])
