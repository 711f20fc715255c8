"""A supervised plugin host process (Python worker, Node worker, the shared Node process).

``starting -> ready -> failed -> (restarting: starting again) ... | stopped``, like
an MCP server. One long-lived task (``runtime.spawn``) starts the process in its
own process group, reads its JSON lines (:mod:`.protocol`), drains its stderr into
a bounded :class:`~kairox_process.OutputTail` and waits for it to end. When it dies,
the calls waiting on it fail at once with the exit status and the stderr tail; it
is restarted after a backoff (doubling), at most ``max_restarts`` times in a row, and
the plugins it served are loaded into the new process again; a host that fails its
first start is not retried (:class:`kairox_process.Restarts`, as for an MCP server). Closing (or the
runtime closing, or Ctrl-C cancelling it) ends its input, then kills the group and reaps.

The protocol runs over a socket pair that is the host's stdin (both directions);
the host's stdout and stderr are one pipe read into the bounded tail, so whatever
a plugin prints, however long, is a diagnostic and never a protocol line.
"""

from __future__ import annotations

import functools
import itertools
import logging
import socket
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from subprocess import PIPE, STDOUT
from typing import TYPE_CHECKING, Any

import anyio
import attrs
from anyio.abc import Process, UNIXSocketStream

from kairox import ServerState, ServerStatus, ToolError
from kairox_process import OutputTail, Restarts, describe_exit, reap

from .adapt import bounded_stack
from .events import PhilontWorkerFailed, PhilontWorkerReady, PhilontWorkerStarting, PhilontWorkerStopped
from .protocol import MAX_LINE, LineReader, Oversized, encode, id_of, parse

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["HostProcess", "Limits"]

logger = logging.getLogger(__name__)

#: how long a closing host may take to exit on its own before its group is killed
CLOSE_GRACE = 3.0
#: how long a dead host's stderr may take to reach its end (for the tail in the error)
STDERR_GRACE = 0.5
#: the last bytes of a host's stderr kept
MAX_STDERR = 32 * 1024
#: stderr lines quoted in an error
TAIL_LINES = 15


@attrs.frozen
class Limits:
    startup_timeout: float = 30.0
    max_restarts: int = 3
    restart_backoff: float = 1.0
    max_line: int = MAX_LINE


class _Attempt:
    """One run of the process: its pipes, its pending calls, how it ended."""

    def __init__(self, number: int, max_line: int, on_dead: Callable[[_Attempt], None] | None = None) -> None:
        self.number = number
        self.on_dead = on_dead
        self.process: Process | None = None
        #: the protocol: a socket that is the host's stdin (fd 0), both ways; its stdout
        #: and stderr (one pipe) are diagnostics only, so nothing a plugin prints reaches it
        self.channel: UNIXSocketStream | None = None
        self._exiting = False
        self.stderr = OutputTail(MAX_STDERR, head_lines=5)
        self.reader = LineReader(max_line)
        self.hello: dict[str, Any] | None = None
        self.got_hello = anyio.Event()
        self.exited = anyio.Event()
        self.stderr_done = anyio.Event()
        self.dead: str | None = None
        self.exit_code: int | None = None
        self.ready_at: float | None = None
        self.pending: dict[int, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        self.ids = itertools.count(1)
        self.write_lock = anyio.Lock()

    def tail(self) -> str:
        text = self.stderr.text(TAIL_LINES).strip()
        return f"\nstderr (last lines):\n{text}" if text else ""

    async def read_channel(self) -> None:
        assert self.channel is not None
        reason = ""
        try:
            async for chunk in self.channel:
                for item in self.reader.feed(chunk):
                    self._dispatch(item)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        except OSError as exc:  # pragma: no cover - a reset connection
            reason = f"{type(exc).__name__}: {exc}"
        await self._on_exit(reason)

    async def drain_output(self) -> None:
        """The host's stdout and stderr (one pipe): every print of a plugin, kept bounded."""
        assert self.process is not None and self.process.stdout is not None
        try:
            async for chunk in self.process.stdout:
                self.stderr.feed(chunk)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self.stderr_done.set()

    async def watch_exit(self) -> None:
        assert self.process is not None
        await self.process.wait()
        await self._on_exit("")

    def _dispatch(self, item: bytes | Oversized) -> None:
        if isinstance(item, Oversized):
            mid = id_of(item.prefix)
            entry = self.pending.pop(mid, None) if mid is not None else None
            why = f"answer of {item.size} bytes is longer than the limit ({self.reader.max_line} bytes)"
            self.stderr.append(f"[kairox] skipped a stdout line of {item.size} bytes")
            if entry is not None:
                entry[1].append({"id": mid, "error": why})
                entry[0].set()
            return
        message = parse(item)
        if message is None:
            if item.strip():  # a stray print on the protocol channel: kept as a diagnostic
                self.stderr.append("[stdout] " + item[:500].decode("utf-8", "replace"))
            return
        if message.get("type") == "hello":
            self.hello = message
            self.got_hello.set()
            return
        mid = message.get("id")
        entry = self.pending.pop(mid, None) if isinstance(mid, int) and not isinstance(mid, bool) else None
        if entry is not None:
            entry[1].append(message)
            entry[0].set()

    async def _on_exit(self, reason: str) -> None:
        if self._exiting:
            return
        self._exiting = True
        with anyio.move_on_after(STDERR_GRACE):  # the stderr tail is the diagnostic
            await self.stderr_done.wait()
        if self.process is not None:
            with anyio.move_on_after(STDERR_GRACE):
                self.exit_code = await self.process.wait()
        what = describe_exit(self.exit_code) if self.exit_code is not None else "closed its output"
        self.fail_pending(what + (f" ({reason})" if reason else ""))

    def fail_pending(self, why: str) -> None:
        """The process is gone: every waiting call fails now, with ``why``."""
        if self.dead is None:
            self.dead = why
            if self.on_dead is not None:
                self.on_dead(self)
        pending, self.pending = self.pending, {}
        for event, box in pending.values():
            box.append({"crash": self.dead})
            event.set()
        self.got_hello.set()
        self.exited.set()

    async def send(self, data: bytes) -> None:
        assert self.channel is not None
        async with self.write_lock:
            await self.channel.send(data)

    async def request(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        if self.dead is not None or self.process is None:
            return {"crash": self.dead or "not running"}
        mid = next(self.ids)
        event = anyio.Event()
        box: list[dict[str, Any]] = []
        self.pending[mid] = (event, box)
        answered = False
        try:
            try:
                await self.send(encode({"id": mid, **message}))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self.exited.wait()
            with anyio.fail_after(timeout):
                await event.wait()
            answered = True
        finally:
            self.pending.pop(mid, None)
            if not answered and self.dead is None:  # cancelled (or timed out): tell the host
                with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                    try:
                        await self.send(encode({"op": "cancel", "id": mid}))
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        pass
        return box[0] if box else {"crash": self.dead or "no answer"}


class HostProcess:
    """A supervised host serving the plugins loaded into it (one for a worker, any number
    for the shared Node process). Its tools keep their registration while it restarts:
    a call then fails at once with the reason."""

    def __init__(
        self,
        name: str,
        kind: str,
        argv: Sequence[str],
        env: dict[str, str],
        cwd: Path,
        runtime: Runtime,
        limits: Limits,
    ) -> None:
        self.name = name
        self.kind = kind
        self.argv = list(argv)
        self.env = env
        self.cwd = cwd
        self.runtime = runtime
        self.limits = limits
        self._changed = anyio.Event()
        self._state = ServerState.STOPPED
        self.detail = "not started"
        self._restarts = Restarts(limits.max_restarts, limits.restart_backoff)
        #: plugin id -> its load request (replayed after a restart)
        self.plugins: dict[str, dict[str, Any]] = {}
        #: plugin id -> what its register() registered (the last load)
        self.loaded: dict[str, dict[str, Any]] = {}
        #: plugin id -> why it could not be loaded again after a restart
        self.broken: dict[str, str] = {}
        self._attempt = _Attempt(0, limits.max_line)
        self._started = False
        self._settled = anyio.Event()
        self._stop = anyio.Event()
        self._done = anyio.Event()

    # -- reading ---------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        process = self._attempt.process
        return process.pid if process is not None and self._attempt.dead is None else None

    @property
    def restarts(self) -> int:
        """How many times the host was restarted after a crash."""
        return self._restarts.count

    @property
    def state(self) -> ServerState:
        return self._state

    @state.setter
    def state(self, value: ServerState) -> None:
        self._state = value
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    @property
    def done(self) -> bool:
        """The supervising task ended (closed, or gave up restarting)."""
        return self._done.is_set()

    def tail(self) -> str:
        return self._attempt.tail()

    def stderr_lines(self, n: int = 50) -> list[str]:
        return self._attempt.stderr.tail(n)

    def status(self, plugin: str | None = None, name: str | None = None) -> ServerStatus:
        state, detail = self.state, self.detail
        if plugin is not None and plugin in self.broken and state is ServerState.READY:
            state, detail = ServerState.FAILED, self.broken[plugin]
        if state is ServerState.READY and self.pid is not None:
            n = self.restarts
            detail = f"pid {self.pid}" + (f", {n} restart{'' if n == 1 else 's'}" if n else "")
        tools = len(self.loaded.get(plugin, {}).get("tools", [])) if plugin is not None else 0
        tail = tuple(line for line in self.stderr_lines(5) if line.strip()) if state is ServerState.FAILED else ()
        return ServerStatus(
            name or self.name,
            self.kind,
            state,
            detail,
            tools if state is ServerState.READY else 0,
            str(self.cwd),
            log_tail=tail,
        )

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        """Start the host and wait for it (raises ``RuntimeError`` with the stderr tail if it
        does not start); the supervising task then runs as long as the runtime."""
        if self._started:
            return
        self._started = True
        self.runtime.spawn(self._run, name=f"philont host {self.name}")
        await self._settled.wait()
        if self.state is not ServerState.READY:
            raise RuntimeError(f"{self.detail}{self.tail()}")

    async def _run(self) -> None:
        number = 0
        try:
            while not self._stop.is_set():
                error = await self._run_attempt(number)
                if self._stop.is_set():
                    break
                if not await self._restarts.restart(
                    self._attempt.ready_at, functools.partial(self._fail, error), self._stop
                ):
                    return
                number += 1
        finally:
            process = self._attempt.process
            if process is not None:
                await reap(process, grace=0.5)
            if self._stop.is_set() or self.state is not ServerState.FAILED:
                self.state, self.detail = ServerState.STOPPED, "stopped"
                self.runtime.events.publish(PhilontWorkerStopped(worker=self.name))
            self._settled.set()
            self._done.set()

    def _fail(self, error: str, delay: float | None) -> None:
        """Failed with ``error``; restarting in ``delay`` seconds, or (``None``) not at all."""
        attempt = self._attempt
        self.state = ServerState.FAILED
        self.detail = error + (f" (restarting in {delay:g} s)" if delay is not None else "")
        failure = self._restarts.failure(error, delay, exit_code=attempt.exit_code, stderr=attempt.stderr)
        self.runtime.events.publish(PhilontWorkerFailed(worker=self.name, **failure))
        logger.info("Philont plugin host %s failed: %s", self.name, error)
        self._settled.set()

    async def _run_attempt(self, number: int) -> str:
        attempt = self._attempt = _Attempt(number, self.limits.max_line, self._died)
        self.state = ServerState.STARTING
        self.detail = "starting" if number == 0 else f"restarting (restart {self.restarts})"
        self.runtime.events.publish(PhilontWorkerStarting(worker=self.name, attempt=number))
        parent, child = socket.socketpair()
        try:
            attempt.process = await anyio.open_process(
                self.argv,
                stdin=child.fileno(),
                stdout=PIPE,
                stderr=STDOUT,
                cwd=str(self.cwd),
                env=self.env,
                start_new_session=True,
            )
        except OSError as exc:
            parent.close()
            return f"cannot start {self.argv[0]}: {exc.strerror or exc}"
        finally:
            child.close()
        error = ""
        try:
            attempt.channel = await UNIXSocketStream.from_socket(parent)
            async with anyio.create_task_group() as tg:
                tg.start_soon(attempt.read_channel)
                tg.start_soon(attempt.drain_output)
                tg.start_soon(attempt.watch_exit)
                error = await self._serve(attempt)
                tg.cancel_scope.cancel()
        finally:
            await self._close_process(attempt, parent)
        return error

    def _died(self, attempt: _Attempt) -> None:
        """The process is gone: ``failed`` from this moment (the calls failing now say so)."""
        if attempt is self._attempt and not self._stop.is_set() and self.state is ServerState.READY:
            self.state, self.detail = ServerState.FAILED, f"the plugin host {attempt.dead}"

    async def _serve(self, attempt: _Attempt) -> str:
        timeout = self.limits.startup_timeout
        with anyio.move_on_after(timeout):
            await _first(attempt.got_hello, self._stop)
        if self._stop.is_set():
            return ""
        if attempt.hello is None:
            return f"the plugin host {attempt.dead}" if attempt.dead else f"did not start within {timeout:g} s"
        if attempt.number > 0:  # the plugins it served, loaded again
            for plugin_id, request in list(self.plugins.items()):
                answer = await self._load_into(attempt, request)
                if attempt.dead is not None:
                    return f"the plugin host {attempt.dead}"
                if "ready" in answer:
                    self.loaded[plugin_id] = answer["ready"]
                    self.broken.pop(plugin_id, None)
                else:
                    self.broken[plugin_id] = f"{plugin_id} failed to load again: {_fatal(answer)}"
        attempt.ready_at = time.monotonic()
        self.state, self.detail = ServerState.READY, "ready"
        pid = attempt.process.pid if attempt.process is not None else 0
        self.runtime.events.publish(PhilontWorkerReady(worker=self.name, pid=pid, plugins=tuple(self.plugins)))
        self._settled.set()
        await _first(self._stop, attempt.exited)
        if self._stop.is_set():
            return ""
        self.state, self.detail = ServerState.FAILED, f"the plugin host {attempt.dead}"
        return self.detail

    async def _close_process(self, attempt: _Attempt, sock: socket.socket) -> None:
        process = attempt.process
        with anyio.CancelScope(shield=True):
            if process is not None and process.returncode is None and attempt.channel is not None:
                try:
                    await attempt.channel.send_eof()  # the host exits at the end of its input
                except Exception:  # already broken
                    logger.debug("closing the channel of %s", self.name, exc_info=True)
                with anyio.move_on_after(CLOSE_GRACE if self._stop.is_set() else 0.1):
                    await process.wait()
            if process is not None:
                await reap(process, grace=0.5)
            if attempt.channel is not None:
                await attempt.channel.aclose()
            else:
                sock.close()
            attempt.fail_pending("was stopped")

    async def _load_into(self, attempt: _Attempt, request: dict[str, Any]) -> dict[str, Any]:
        try:
            return await attempt.request(request, timeout=self.limits.startup_timeout)
        except TimeoutError:
            return {"fatal": {"error": f"register() did not finish within {self.limits.startup_timeout:g} s"}}

    # -- plugins and calls ---------------------------------------------------------------
    async def load(self, plugin_id: str, plugin: dict[str, Any]) -> dict[str, Any]:
        """Load a plugin into the running host: what its ``register(ctx)`` registered.
        Raises ``RuntimeError`` (with the plugin's stack) when it failed."""
        request = {"op": "load", "plugin": plugin}
        attempt = self._attempt
        if self.state is not ServerState.READY:
            raise RuntimeError(f"{self.name} is not ready ({self.state.value}: {self.detail}){attempt.tail()}")
        answer = await self._load_into(attempt, request)
        if "crash" in answer:
            raise RuntimeError(f"the plugin host {answer['crash']}{attempt.tail()}")
        if "ready" not in answer:
            raise RuntimeError(f"register() failed: {_fatal(answer)}")
        self.plugins[plugin_id] = request
        self.loaded[plugin_id] = answer["ready"]
        return dict(answer["ready"])

    async def unload(self, plugin_id: str) -> None:
        self.plugins.pop(plugin_id, None)
        self.loaded.pop(plugin_id, None)
        self.broken.pop(plugin_id, None)
        if self.state is ServerState.READY:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_GRACE):
                await self._attempt.request({"op": "unload", "plugin": plugin_id})

    async def request(self, plugin_id: str, message: dict[str, Any]) -> dict[str, Any]:
        """One call to a plugin of the host; a host that is not ready, or dies meanwhile,
        fails it at once with why and the stderr tail (:class:`~kairox.ToolError`)."""
        attempt = self._attempt
        if plugin_id in self.broken:
            raise ToolError(f"{plugin_id}: {self.broken[plugin_id]}{attempt.tail()}")
        if self.state is not ServerState.READY or attempt.dead is not None:
            raise ToolError(
                f"{plugin_id}: the plugin host is not ready ({self.state.value}: {self.detail}){attempt.tail()}"
            )
        answer = await attempt.request({**message, "plugin": plugin_id})
        if "crash" in answer:
            raise ToolError(f"{plugin_id}: the plugin host {answer['crash']}{attempt.tail()}")
        return answer

    async def close(self) -> None:
        """Stop supervising, close the process (its input first, then the group) and reap it."""
        self._stop.set()
        if not self._started:
            return
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(CLOSE_GRACE + 2):
                await self._done.wait()
            process = self._attempt.process
            if process is not None:
                await reap(process, grace=0.5)

    async def wait_done(self) -> None:
        """Until the supervising task ended (closed, or gave up restarting)."""
        await self._done.wait()

    async def wait_state(self, state: ServerState) -> None:
        """Until the host is in ``state`` (tests, ``kairox`` commands that wait for a restart)."""
        while self.state is not state:
            await self._changed.wait()


async def _first(*events: anyio.Event) -> None:
    """Until one of ``events`` is set."""
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)


def _fatal(answer: dict[str, Any]) -> str:
    fatal = answer.get("fatal")
    if isinstance(fatal, dict):
        error = str(fatal.get("error") or "unknown error")
        stack = bounded_stack(fatal.get("stack"))
        return f"{error}\n{stack}" if stack else error
    return str(answer.get("error") or answer)
