"""The stdio transport: an MCP server as a child process speaking JSON lines.

We do our own process handling under the SDK's ``ClientSession`` (instead of
``mcp.client.stdio.stdio_client``) because the SDK's version sends the
server's stderr to ours, passes a fixed environment and cannot tell why a
server died. Here:

- the server runs in its own session and process group (``start_new_session``);
- its environment is :func:`kairox_stdio._env.build_env` (a documented base set
  plus what the entry declares), its working directory the entry's ``cwd``
  relative to the workspace;
- stderr is drained all the time into the bounded :class:`StderrBuffer` of
  ``context.diagnostics`` (and appended to ``context.log_file`` if set), never
  to the terminal;
- stdout is split into lines (bounded, linear for long lines) and each line
  parsed as one JSON-RPC message; a bad line is put into the read stream as an
  :class:`InvalidServerMessage` (the SDK's convention: the session hands it to
  ``message_handler`` and carries on);
- when the server dies, ``context.diagnostics`` gets the exit code and a reason
  and the read stream ends at once, so pending requests fail with
  ``CONNECTION_CLOSED`` instead of waiting for their timeout;
- on exit (normal, error, cancellation, Ctrl-C) stdin is closed, then after a
  grace period the whole group gets SIGTERM, then SIGKILL: no child or
  grandchild survives.

Nothing here imports ``mcp`` at module level; the message types are imported
when the first connection opens. The transport object itself
(:class:`~kairox_stdio._transport.StdioTransport`, re-exported here) is defined apart, so
that registering it imports none of this.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio

from kairox.errors import KairoxError
from kairox_mcp.transport import (
    MAX_MESSAGE_BYTES,
    MAX_MESSAGE_VALUES,
    UNREADABLE_HEAD,
    UNREADABLE_TAIL,
    ConnectContext,
    Diagnostics,
    size_text,
    too_many_values,
)
from kairox_process import describe_exit, group_alive, kill_group, server_env

from ._env import build_env
from ._lines import Line, LineSplitter
from ._transport import StdioTransport
from ._writer import StdinWriter

if TYPE_CHECKING:
    from anyio.abc import Process
    from mcp.shared.message import SessionMessage

    from kairox_mcp.transport import Streams

# StdioTransport (what the plugin registers) is defined in ._transport, which imports none of
# this until it connects; re-exported here, where it has always been
__all__ = ["InvalidServerMessage", "StdioServerError", "StdioTransport", "open_connection"]

logger = logging.getLogger(__name__)

MiB = 1024 * 1024


class StdioServerError(KairoxError):
    """A stdio server cannot be started (no command, command not found, bad cwd)."""


class InvalidServerMessage(ValueError):
    """A line on the server's stdout that is not one JSON-RPC message.

    Put into the read stream; ``ClientSession`` passes it to ``message_handler``
    and the session continues. ``line`` holds the first bytes of the line. For
    kairox-mcp's client (see :class:`kairox_mcp.McpTransport`): ``reason`` says
    why it cannot be read, ``head`` and ``tail`` are the line's first and last
    bytes, from which the client reads which request it answered and fails that
    request at once.
    """

    def __init__(
        self,
        message: str,
        *,
        line: bytes = b"",
        size: int = 0,
        reason: str = "",
        head: bytes = b"",
        tail: bytes = b"",
        ended: bool = True,
    ) -> None:
        super().__init__(message)
        #: False: the line is still arriving (over the limit already); its tail is unknown
        self.ended = ended
        self.line = line
        self.size = size
        self.reason = reason or message
        self.head = head
        self.tail = tail


def _unreadable(line: Line, message: str, reason: str, *, ended: bool = True) -> InvalidServerMessage:
    """``line`` could not be read as a message, for ``reason``: its first bytes, size, head and
    tail go with it (the tail a truncated line kept, else its last bytes)."""
    tail = line.tail if line.truncated else line.data[-UNREADABLE_TAIL:]
    return InvalidServerMessage(
        message,
        line=line.data[:200],
        size=line.size,
        reason=reason,
        head=line.data[:UNREADABLE_HEAD],
        tail=tail,
        ended=ended,
    )


def open_connection(
    transport: StdioTransport, server: Any, context: ConnectContext
) -> AbstractAsyncContextManager[Streams]:
    """:meth:`StdioTransport.connect`: start the server of ``server`` and yield its streams."""
    return _Connection(transport, server, context).open()


def resolve_command(server: Any, context: ConnectContext) -> tuple[list[str], dict[str, str], Path]:
    """``(argv, env, cwd)`` for a server entry, or :class:`StdioServerError`.

    The entry is read defensively (any object with ``command``, ``args``,
    ``env``, ``env_vars``, ``inherit_env``, ``cwd`` attributes).
    """
    command = getattr(server, "command", None)
    if not command or not isinstance(command, str):
        raise StdioServerError("no command configured")
    args = [str(a) for a in (getattr(server, "args", None) or ())]
    # server_env: commands installed next to kairox are found without activating its environment
    env = server_env(
        build_env(
            context.env,
            env=getattr(server, "env", None),
            env_vars=getattr(server, "env_vars", None),
            inherit_env=bool(getattr(server, "inherit_env", False)),
            server_name=context.server_name,
        )
    )
    raw_cwd = getattr(server, "cwd", None)
    cwd = Path(context.workspace)
    if raw_cwd:
        given = Path(os.path.expanduser(str(raw_cwd)))
        cwd = given if given.is_absolute() else cwd / given
    if not cwd.is_dir():
        raise StdioServerError(f"working directory does not exist: {cwd}")
    if os.sep not in command and shutil.which(command, path=env.get("PATH", os.defpath)) is None:
        raise StdioServerError(f"command not found: {command!r} (not on the server's PATH)")
    return [command, *args], env, cwd


class _Connection:
    """The state of one running server; ``open()`` is the transport's context manager."""

    def __init__(self, transport: StdioTransport, server: Any, context: ConnectContext) -> None:
        self.t = transport
        limit = transport.max_message_bytes
        self.max_message_bytes = MAX_MESSAGE_BYTES if limit is None else limit
        self.server = server
        self.ctx = context
        self.name = context.server_name
        self.diag: Diagnostics = context.diagnostics
        self.proc: Process | None = None
        self.closing = False
        self.exited = anyio.Event()
        self.stdout_eof = anyio.Event()
        self.stderr_eof = anyio.Event()
        self.reading_ended = False
        self.deliver_scope = anyio.CancelScope()
        self.stdin_scope = anyio.CancelScope()
        #: the session's write stream (the server's stdin), once the server runs
        self.writer: StdinWriter | None = None
        self.log_fh: IO[bytes] | None = None
        self.stderr_bytes = 0
        self.invalid_lines = 0

    # -- the context manager ---------------------------------------------------

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Streams]:
        argv, env, cwd = self._prepare()
        self.read_w, self.read_r = anyio.create_memory_object_stream[Any](0)
        self._open_log()
        # The caller's exception is re-raised as is after our task group is gone
        # (anyio would wrap it in an ExceptionGroup).
        body_error: BaseException | None = None
        try:
            # Shielded: a cancellation mid-spawn must not leave an unowned child behind.
            with anyio.CancelScope(shield=True):
                self.proc, writer = await self._spawn(argv, env, cwd)
                self.writer = writer
            # the server starts while the SDK is imported (one shared import, off the event loop)
            await self.ctx.import_sdk()
            from mcp.shared.message import SessionMessage
            from mcp.types import jsonrpc_message_adapter

            self._message_cls = SessionMessage
            self._adapter = jsonrpc_message_adapter
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_exit)
                tg.start_soon(self._stderr_pump)
                tg.start_soon(self._stdout_pump)
                tg.start_soon(self._stdin_pump, writer)
                try:
                    yield self.read_r, writer
                except BaseException as exc:
                    body_error = exc
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._shutdown()
                    tg.cancel_scope.cancel()
        finally:
            if self.proc is not None and not self.closing:  # left before the body ran
                with anyio.CancelScope(shield=True):
                    await self._shutdown()
            for stream in (self.read_w, self.read_r):
                stream.close()
            if self.writer is not None:
                self.writer.close()
                self.writer.close_fd()
            self._close_log()
        if body_error is not None:
            raise body_error

    def _prepare(self) -> tuple[list[str], dict[str, str], Path]:
        try:
            return resolve_command(self.server, self.ctx)
        except StdioServerError as exc:
            self.diag.error = str(exc)
            raise

    async def _spawn(self, argv: list[str], env: dict[str, str], cwd: Path) -> tuple[Process, StdinWriter]:
        logger.debug("starting MCP server %r: %s (%d args) in %s", self.name, argv[0], len(argv) - 1, cwd)
        # stdin is a pipe of our own, written without a task in between (see ._writer)
        stdin_r, stdin_w = os.pipe()
        try:
            proc = await self._open_process(argv, env, cwd, stdin_r)
        except BaseException:
            os.close(stdin_w)
            raise
        finally:
            os.close(stdin_r)  # the server's end: held here, the server would never read EOF
        self.diag.pid = proc.pid
        self._log_note(f"started {argv[0]} (pid {proc.pid})")
        writer = StdinWriter(
            stdin_w,
            on_broken=self._stdin_broken,
            stall_timeout=self.t.write_stall_timeout,
            on_stall=self._stalled,
        )
        return proc, writer

    async def _open_process(self, argv: list[str], env: dict[str, str], cwd: Path, stdin: int) -> Process:
        try:
            return await anyio.open_process(
                argv,
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            msg = f"command not found: {argv[0]!r}"
            self.diag.error = msg
            raise StdioServerError(msg) from exc
        except PermissionError as exc:
            msg = f"command is not executable: {argv[0]!r}"
            self.diag.error = msg
            raise StdioServerError(msg) from exc
        except OSError as exc:
            msg = f"cannot start {argv[0]!r}: {exc.strerror or exc}"
            self.diag.error = msg
            raise StdioServerError(msg) from exc

    # -- pumps -------------------------------------------------------------------

    async def _stdout_pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        splitter = LineSplitter(self.max_message_bytes, keep_tail=UNREADABLE_TAIL)
        try:
            with self.deliver_scope:
                async for chunk in stdout:
                    await self._deliver_lines(splitter, chunk)
                    # not held while the next chunk is awaited: an idle server's last answer
                    # (up to 64 KiB read at once, a big tools/list) would stay in memory twice
                    del chunk
                rest = splitter.flush()
                if rest is not None:  # no newline before EOF: cut short if the server died writing it
                    await self._deliver(rest, at_eof=True)
                self.stdout_eof.set()
            if self.stdout_eof.is_set():
                # EOF: let the exit watcher fill the diagnostics before the session sees the end.
                with anyio.move_on_after(1.0):
                    await self.exited.wait()
                if not self.exited.is_set():
                    self._fail("the server closed its stdout")
                self._end_reading()
                return
            # Delivery stopped (session gone or connection failed): keep draining so the
            # server never blocks on a full pipe before we stop it.
            async for _chunk in stdout:
                pass
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        except Exception:  # never let a pump take the caller's task group down
            logger.exception("MCP server %r: stdout reader failed", self.name)
            self._fail("reading the server's stdout failed")
        finally:
            self.stdout_eof.set()

    async def _deliver_lines(self, splitter: LineSplitter, chunk: bytes) -> None:
        for line in splitter.feed(chunk):
            await self._deliver(line)
        early = splitter.overflow()
        if early is not None:  # over the limit and no newline yet: fail its call now
            await self._deliver(early, ended=False)

    async def _deliver(self, line: Line, *, ended: bool = True, at_eof: bool = False) -> None:
        item: SessionMessage | Exception
        if line.truncated:
            limit = self.max_message_bytes
            size = size_text(line.size) if ended else f"more than {size_text(limit)}"
            item = _unreadable(
                line,
                f"dropped a stdout line of {line.size}{'' if ended else '+'} bytes (limit {limit})",
                f"response of {size} exceeds the {size_text(limit)} limit",
                ended=ended,
            )
        elif not line.data or line.data.isspace():  # what strip() would empty, without a copy
            return
        elif (values := too_many_values(line.data)) is not None:
            # refused before it is parsed: parsing it is what costs the memory
            item = _unreadable(
                line,
                f"dropped a stdout line of {values} JSON values (limit {MAX_MESSAGE_VALUES})",
                f"response of {values:,} JSON values exceeds the limit of {MAX_MESSAGE_VALUES:,}",
            )
        else:
            try:
                item = self._message_cls(self._adapter.validate_json(line.data, by_name=False))
            except ValueError as exc:
                item = self._invalid(line, exc)
        if isinstance(item, Exception):
            self.invalid_lines += 1
            logger.debug("MCP server %r: %s", self.name, item)
            if at_eof:
                # the server died (or closed stdout) while writing it: its pending calls fail
                # with why the connection ended, not with "the response is not JSON"
                self._log_note(f"dropped an unfinished last line of {line.size} bytes at EOF")
                return
        try:
            await self.read_w.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.deliver_scope.cancel()  # nobody reads any more: drain and discard

    def _invalid(self, line: Line, exc: ValueError) -> InvalidServerMessage:
        errors = getattr(exc, "errors", None)
        detail = "not a JSON-RPC message"
        reason = "the response is not a valid JSON-RPC message"
        if callable(errors):
            first = errors()[0] if errors() else {}
            if first.get("type") == "json_invalid":
                why = str(first.get("msg", "")).removeprefix("Invalid JSON: ")
                detail = f"not JSON ({first.get('msg', '')})"
                reason = (
                    f"the response is nested deeper than the JSON parser allows ({why})"
                    if "recursion limit" in why
                    else f"the response is not JSON ({why})"
                )
        err = _unreadable(line, f"invalid line on stdout ({line.size} bytes): {detail}", reason)
        err.__cause__ = exc
        return err

    async def _stdin_pump(self, writer: StdinWriter) -> None:
        """Writes what the pipe could not take at once (see :class:`StdinWriter`)."""
        with self.stdin_scope:
            try:
                await writer.run()
            except Exception:
                logger.exception("MCP server %r: stdin writer failed", self.name)
                self._fail("writing to the server's stdin failed")

    async def _stdin_broken(self, exc: OSError) -> None:
        """The server closed its stdin or died; prefer the exit watcher's account."""
        with anyio.move_on_after(1.0):
            await self.exited.wait()
        if not self.exited.is_set():
            self._fail(f"cannot write to the server's stdin ({type(exc).__name__})")

    def _stalled(self, size: int) -> None:
        """A write blocked for ``write_stall_timeout`` (see :class:`StdinWriter`): the server
        stopped reading its stdin; the connection ends."""
        timeout = self.t.write_stall_timeout
        self._fail(f"the server stopped reading its stdin (a {size}-byte write blocked for {timeout:g} s)")

    async def _stderr_pump(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        splitter = LineSplitter(self.t.max_stderr_line)
        buffer = self.diag.stderr
        try:
            async for chunk in self.proc.stderr:
                self._take_stderr(splitter, chunk)
                del chunk  # not held while the next chunk is awaited
            rest = splitter.flush()
            if rest is not None:
                buffer.append(_text(rest))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        except Exception:
            logger.exception("MCP server %r: stderr reader failed", self.name)
        finally:
            self.stderr_eof.set()

    def _take_stderr(self, splitter: LineSplitter, chunk: bytes) -> None:
        self.stderr_bytes += len(chunk)
        if self.log_fh is not None:
            self._log_write(chunk)
        buffer = self.diag.stderr
        for line in splitter.feed(chunk):
            buffer.append(_text(line))

    async def _watch_exit(self) -> None:
        assert self.proc is not None
        returncode = await self.proc.wait()
        if self.closing:
            self.exited.set()
            return
        self.diag.exit_code = returncode
        # Let the pipes deliver what the server wrote before dying (its stderr explains why).
        with anyio.move_on_after(self.t.exit_drain):
            await self.stderr_eof.wait()
            await self.stdout_eof.wait()
        if self.diag.error is None:
            how = "exited unexpectedly" if returncode >= 0 else describe_exit(returncode)
            self.diag.error = f"the server process {how}"
        logger.info("MCP server %r %s", self.name, describe_exit(returncode))
        self._log_note(f"server {describe_exit(returncode)}")
        self.exited.set()
        self._end_reading()
        # Its children (same group) are of no use now and may hold the pipes open.
        await self._stop_group(self.proc.pid)

    # -- ending ------------------------------------------------------------------

    def _fail(self, reason: str) -> None:
        """The connection is broken while the server may still run: say why, end the streams."""
        if self.closing or self.reading_ended:
            return
        if self.diag.error is None:
            self.diag.error = reason
        logger.info("MCP server %r: %s", self.name, reason)
        self._end_reading()

    def _end_reading(self) -> None:
        """End the read stream (pending requests fail) and refuse further writes."""
        if self.reading_ended:
            return
        self.reading_ended = True
        self.deliver_scope.cancel()
        self.read_w.close()
        if self.writer is not None:
            self.writer.close()

    async def _shutdown(self) -> None:
        proc = self.proc
        if proc is None:
            return
        self.closing = True
        started = time.monotonic()
        if proc.returncode is None and self.writer is not None:
            await self.writer.finish(0.5)  # a message half written is finished (not what waits after it)
        self.stdin_scope.cancel()
        stdin_closed = False
        if proc.returncode is None and self.writer is not None:
            self.writer.close_fd()  # the server reads EOF (what the pipe has not taken is dropped)
            stdin_closed = True
        if stdin_closed and proc.returncode is None:
            with anyio.move_on_after(self.t.shutdown_grace):
                await proc.wait()
        await self._stop_group(proc.pid)
        if self.diag.exit_code is None:
            self.diag.exit_code = proc.returncode
        # The group is gone: the pipes reach EOF now (bounded in case someone escaped the group).
        with anyio.move_on_after(0.5):
            await self.stdout_eof.wait()
            await self.stderr_eof.wait()
        self._end_reading()
        with anyio.move_on_after(1.0):
            try:
                await proc.aclose()
            except Exception:
                pass
        self._log_note(f"stopped (exit code {proc.returncode})")
        logger.debug("MCP server %r stopped in %.2f s", self.name, time.monotonic() - started)

    async def _stop_group(self, pgid: int) -> None:
        """SIGTERM the group, wait ``term_grace``, SIGKILL what is left."""
        proc = self.proc
        assert proc is not None

        def done() -> bool:
            return proc.returncode is not None and not group_alive(pgid)

        if done():
            return
        for sig, wait in ((signal.SIGTERM, self.t.term_grace), (signal.SIGKILL, self.t.kill_wait)):
            # The leader is a session leader: it cannot leave its group, so killpg reaches it.
            # (Not proc.send_signal: subprocess polls first and may reap the child under
            # asyncio's child watcher, which then reports exit code 255.)
            kill_group(pgid, sig)
            deadline = anyio.current_time() + wait
            while anyio.current_time() < deadline:
                with anyio.move_on_after(0.05):
                    await proc.wait()
                if done():
                    return
        logger.warning("MCP server %r: process group %d did not go away after SIGKILL", self.name, pgid)

    # -- log file ----------------------------------------------------------------

    def _open_log(self) -> None:
        path = self.ctx.log_file
        if path is None:
            return
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.log_fh = open(path, "ab")
        except OSError as exc:
            logger.warning("MCP server %r: cannot open log file %s: %s", self.name, path, exc)

    def _log_note(self, text: str) -> None:
        if self.log_fh is not None:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
            self._log_write(f"--- kairox {stamp}: {self.name}: {text} ---\n".encode())

    def _log_write(self, data: bytes) -> None:
        assert self.log_fh is not None
        try:
            self.log_fh.write(data)
        except OSError as exc:
            logger.warning("MCP server %r: writing the log file failed (%s); logging stops", self.name, exc)
            self._close_log()

    def _close_log(self) -> None:
        if self.log_fh is not None:
            try:
                self.log_fh.close()
            except OSError:
                pass
            self.log_fh = None


def _text(line: Line) -> str:
    text = line.data.decode("utf-8", "replace")
    return text + " [...]" if line.truncated else text
