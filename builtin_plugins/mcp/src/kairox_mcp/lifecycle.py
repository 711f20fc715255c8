"""ServerLifecycle: one MCP server's state machine, connection task and restarts.

``Starting -> Ready -> Stopped | Failed``. One long-lived task per server (started
with ``runtime.spawn``) connects the transport, enters the SDK session,
initialises, registers the tools, serves until asked to stop or until the server
goes away, and closes everything in that same task. After a crash the server is
restarted with exponential backoff, at most ``max_restarts`` times in a row; a
server that fails its *first* start is not retried (fix the config and restart it):
the policy is :class:`kairox_process.Restarts`, the same as for a Philont plugin host.
"""

from __future__ import annotations

import functools
import importlib
import logging
import math
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from kairox import ServerState, ServerStatus, ToolSpec
from kairox.errors import KairoxError, ToolError
from kairox.ext import REDACTED, redact
from kairox_process import Restarts

from . import auth
from ._sdklog import capture_sdk_logs
from .adapter import McpToolAdapter, build_spec, withheld_reason
from .config import McpServerConfig, ServerDefinition, redact_url
from .events import (
    McpPromptsChanged,
    McpResourcesChanged,
    McpServerFailed,
    McpServerReady,
    McpServerStarting,
    McpServerStopped,
    McpToolsRefreshed,
)
from .transport import ConnectContext, Diagnostics, McpTransport

if sys.version_info < (3, 11):  # pragma: no cover - 3.10 only
    from exceptiongroup import BaseExceptionGroup

if TYPE_CHECKING:
    from kairox import Runtime

    from .caching import ResultStore
    from .client import McpClient

__all__ = ["ServerLifecycle", "describe_error", "import_client", "spawns_first"]

logger = logging.getLogger(__name__)

#: how long a failed call waits for the transport to report the exit code
DIAGNOSTICS_GRACE = 0.5
#: how long a graceful stop may take before the connection is cut
STOP_GRACE = 8.0
#: while a server needs authorization, how often its token file is checked for a login, seconds
LOGIN_POLL = 1.0

ProgressFn = Callable[[float, "float | None", "str | None"], Awaitable[None]]


_client_module: ModuleType | None = None
#: set while the one import is running (its waiters wait on it), else None
_importing: anyio.Event | None = None


async def import_client() -> ModuleType:
    """``kairox_mcp.client`` (and with it ``mcp``), imported off the event loop the first time,
    in one worker thread however many servers start at once: the first caller runs the
    import, the others wait for it to end.

    Never read from ``sys.modules``: while the worker thread is still importing the
    module, it is there half-initialised. Only a completed import is remembered; a
    waiter whose importer failed tries once more itself.
    """
    global _client_module, _importing
    while _client_module is None:
        running = _importing
        if running is not None:
            await running.wait()
            continue
        done = _importing = anyio.Event()
        try:
            # shielded: a caller cancelled meanwhile cannot stop the thread anyway; this way the
            # finished import is remembered and the cancellation lands at its next checkpoint
            with anyio.CancelScope(shield=True):
                _client_module = await anyio.to_thread.run_sync(importlib.import_module, f"{__package__}.client")
        finally:
            _importing = None
            done.set()
    return _client_module


async def _import_within(scope: anyio.CancelScope) -> ModuleType:
    """:func:`import_client`, its wait added to ``scope``'s deadline: the SDK's import is not
    the server's start-up (``startup_timeout`` counts from when the client can talk)."""
    before = anyio.current_time()
    # no deadline while it waits (an import slower than startup_timeout must not end the
    # attempt), then the old one moved by the wait; a stop still cancels the scope
    deadline, scope.deadline = scope.deadline, math.inf
    try:
        return await import_client()
    finally:
        scope.deadline = deadline + (anyio.current_time() - before)


def spawns_first(transport: object) -> bool:
    """Whether ``transport.connect`` may be entered before the SDK is imported (it says so
    with ``imports_sdk_lazily = True``: it imports ``mcp`` only through ``context.import_sdk``)."""
    return getattr(transport, "imports_sdk_lazily", False) is True


def protocol_mode(config: McpServerConfig) -> str:
    """``"auto"`` (``server/discover``, else ``initialize``) unless the entry asks for the
    2025-11-25 handshake, or the server is an SSE one (a legacy transport: always the handshake)."""
    return "auto" if config.protocol == "auto" and config.type != "sse" else "2025-11-25"


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for sub in exc.exceptions:
            out.extend(_leaves(sub))
        return out
    return [exc]


def _http_status(leaf: BaseException) -> str | None:
    """httpx2's ``HTTPStatusError`` (without importing it) as ``HTTP 401 Unauthorized from URL``."""
    response = getattr(leaf, "response", None)
    request = getattr(leaf, "request", None)
    status = getattr(response, "status_code", None)
    if not isinstance(status, int) or request is None:
        return None
    reason = getattr(response, "reason_phrase", "") or ""
    return f"HTTP {status} {reason}".rstrip() + f" from {redact_url(str(getattr(request, 'url', '')))}"


def describe_error(exc: BaseException) -> str:
    """One line per distinct cause, exception groups flattened, no traceback; URL passwords
    and secret-looking values (the HTTP stack puts the whole URL in its errors) redacted."""
    parts: list[str] = []
    for leaf in _leaves(exc):
        if isinstance(leaf, KairoxError):
            text = str(leaf)
        elif isinstance(leaf, FileNotFoundError) and leaf.filename:
            text = f"command not found: {leaf.filename}"
        elif type(leaf).__name__ == "ConnectError":  # httpx2's, without importing it
            text = f"cannot connect: {leaf}"
        elif type(leaf).__name__ == "HTTPStatusError" and (status := _http_status(leaf)) is not None:
            text = status
        else:
            text = f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__
        text = redact(text)
        if text not in parts:
            parts.append(text)
    return "; ".join(parts) or type(exc).__name__


def secret_values(config: McpServerConfig, env: Mapping[str, str]) -> list[str]:
    """The values of a server's config that are secrets: its ``env`` values, its header
    values, the variables its headers and tokens are read from, and every variable of
    ``env`` whose name looks secret (``GITHUB_TOKEN``)."""
    values = [*config.env.values(), *config.headers.values(), *config.http_headers.values()]
    names = [*config.env_http_headers.values(), config.api_key_env, config.bearer_token_env_var]
    values.extend(env[n] for n in names if n and n in env)
    # a ${VAR} is expanded before the entry gets here: a secret-named variable's value may stand
    # in its url, command or args, which kairox's own errors quote
    values.extend(v for n, v in env.items() if redact(v, n) == REDACTED)
    for value in list(values):  # "Bearer X": X alone as well
        scheme, _, token = value.partition(" ")
        if token and scheme.lower() in ("bearer", "basic", "token"):
            values.append(token)
    return values


@attrs.define
class _Attempt:
    """One connection attempt: its diagnostics and when its transport was closed."""

    number: int
    diagnostics: Diagnostics = attrs.field(factory=Diagnostics)
    error: str = ""
    transport_closed: anyio.Event = attrs.field(factory=anyio.Event)
    ready_at: float | None = None


class ServerLifecycle:
    """One configured server: state, current client, tools, diagnostics."""

    def __init__(
        self,
        definition: ServerDefinition,
        runtime: Runtime,
        transport: McpTransport | None,
        *,
        transport_error: str = "",
        rank: int = 0,
        store: ResultStore | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.definition = definition
        #: a ToolRank: who keeps a contested exported name (the user's own servers first)
        self.rank = rank
        self.name = definition.name
        self.config = definition.config
        self.runtime = runtime
        self.transport = transport
        self.transport_error = transport_error
        self.state = ServerState.STOPPED
        self.detail = ""
        self.client: McpClient | None = None
        self.skipped_tools: list[str] = []
        #: tools of the server not offered to the model, by name: why
        self.withheld_tools: dict[str, str] = {}
        self._restarts = Restarts(self.config.max_restarts, self.config.restart_backoff)
        self.last_failure: Diagnostics | None = None
        self.startup_s: float | None = None
        self._attempt = _Attempt(0)
        self._history: deque[_Attempt] = deque(maxlen=3)
        self._settled = anyio.Event()
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        #: the scope a ready connection is served in (stop() cancels it)
        self._serving: anyio.CancelScope | None = None
        self._tools_dirty = False
        #: set while a re-listing runs (waiters wait on it), else None
        self._relisting: anyio.Event | None = None
        self._relist_again = False
        #: where the client keeps the server's list and read results (see kairox_mcp.caching)
        self.store = store
        #: seconds, for the freshness of what is kept (tests move it by hand)
        self.clock = clock
        #: when (``clock``) the tools listing goes stale; ``None``: kept until ``list_changed``
        self._tools_fresh_until: float | None = None

    # -- identity ---------------------------------------------------------------
    @property
    def restarts(self) -> int:
        """How many times the server was restarted after a crash."""
        return self._restarts.count

    @property
    def provider_key(self) -> str:
        """The registry's provider name for this server's tools."""
        return f"mcp:{self.name}"

    @property
    def diagnostics(self) -> Diagnostics:
        """The current (or last) attempt's diagnostics."""
        return self._attempt.diagnostics

    def status(self) -> ServerStatus:
        return ServerStatus(
            name=self.name,
            kind="mcp",
            state=self.state,
            detail=self.detail,
            tools=len(self.tool_specs) if self.state is ServerState.READY else 0,
            source=self.definition.source,
            log_tail=tuple(self.stderr_tail(5)) if self.state is ServerState.FAILED else (),
        )

    def stderr_tail(self, n: int = 50) -> list[str]:
        """The server's stderr (and MCP log messages), last ``n`` lines. After restarts
        the earlier attempts' lines come first (the last three attempts are kept)."""
        attempts = [*self._history, self._attempt]
        lines: list[str] = []
        for a in attempts:
            if len(attempts) > 1:
                lines.append(f"[kairox] --- attempt {a.number + 1}" + (f": {a.error}" if a.error else "") + " ---")
            lines.extend(a.diagnostics.stderr.lines())
        return lines[-n:]

    # -- waiting --------------------------------------------------------------------
    async def wait_settled(self) -> None:
        """Until the first start ended (ready or failed) or the server stopped."""
        await self._settled.wait()

    async def wait_done(self) -> None:
        await self._done.wait()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    # -- the task -----------------------------------------------------------------------
    async def run(self) -> None:
        """The server's long-lived task: start, serve, restart; returns when stopped or given up."""
        try:
            if self.transport is None:
                self._fail(self.transport_error, delay=None)
                return
            number = 0
            while not self._stop.is_set():
                error = await self._run_attempt(number)
                if self._stop.is_set():
                    break
                attempt = self._attempt
                login = auth.needs_authorization(attempt.diagnostics)
                if login is not None:
                    # not a crash: wait for `kairox mcp login NAME` (its token file), then connect again
                    self.last_failure = attempt.diagnostics
                    self._needs_login(login)
                    await self._wait_for_login()
                    self._restarts.reset()
                    number += 1
                    continue
                self.last_failure = attempt.diagnostics
                if not await self._restarts.restart(attempt.ready_at, functools.partial(self._fail, error), self._stop):
                    return
                number += 1
        finally:
            self._unregister()
            self.client = None
            if self.state is not ServerState.FAILED or self._stop.is_set():
                if self.state is not ServerState.STOPPED:
                    self.state = ServerState.STOPPED
                    self.runtime.events.publish(McpServerStopped(server=self.name))
            self._settled.set()
            self._done.set()

    def _needs_login(self, message: str) -> None:
        """``needs_authorization``: the server answered 401 with ``WWW-Authenticate`` (or
        rejected the stored token and a refresh did not help). Its tools stay registered,
        so a call says what to run; the event carries the same message."""
        self.state = ServerState.NEEDS_AUTHORIZATION
        self.detail = message
        self.diagnostics.error = message
        self.runtime.events.publish(
            McpServerFailed(server=self.name, error=message, will_restart=False, restarts=self.restarts)
        )
        logger.info("%s", message)
        self._settled.set()

    async def _wait_for_login(self) -> None:
        """Until stopped, or the server's token file changed (a login in another process)."""
        path = auth.token_path(self.name, self.runtime.env)

        def stamp() -> tuple[int, int] | None:
            try:
                st = path.stat()
            except OSError:
                return None
            return (st.st_mtime_ns, st.st_ino)

        before = stamp()
        while not self._stop.is_set():
            with anyio.move_on_after(LOGIN_POLL):
                await self._stop.wait()
            now = stamp()
            if now is not None and now != before:
                return
            before = now

    def _fail(self, error: str, delay: float | None) -> None:
        """Failed with ``error``; restarting in ``delay`` seconds, or (``None``) not at all."""
        diag = self.diagnostics
        diag.error = diag.error or error
        self.state = ServerState.FAILED
        self.detail = error + (f" (restarting in {delay:g} s)" if delay is not None else "")
        if delay is None:
            # While it restarts its tools stay registered: a call fails with "not ready" and the
            # reason (not "no tool named ...") and the tool list does not flicker; the swap on
            # ready keeps unchanged tools as they are.
            self._unregister()
        failure = self._restarts.failure(error, delay, exit_code=diag.exit_code, stderr=diag.stderr)
        self.runtime.events.publish(McpServerFailed(server=self.name, **failure))
        logger.info("MCP server %s failed: %s", self.name, error)
        self._settled.set()

    async def _run_attempt(self, number: int) -> str:
        """Connect, initialise, serve. Returns why it ended (when not stopped)."""
        assert self.transport is not None
        if number > 0:
            self._history.append(self._attempt)
        attempt = self._attempt = _Attempt(number)
        config = self.config
        # what kairox hands the server (env values, headers, the tokens they name) is hidden
        # wherever the server echoes it: its stderr tail, the errors that quote it
        attempt.diagnostics.stderr.hide(secret_values(config, self.runtime.env))
        timeout = config.startup_timeout_s
        context = ConnectContext(
            server_name=self.name,
            workspace=self.runtime.workspace,
            env=self.runtime.env,
            diagnostics=attempt.diagnostics,
            startup_timeout=timeout,
        )
        self.state = ServerState.STARTING
        self.detail = "starting" if number == 0 else f"restarting (restart {self.restarts})"
        self.runtime.events.publish(McpServerStarting(server=self.name, transport=config.type, attempt=number))
        started = time.perf_counter()
        error = ""
        try:
            with (
                anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope,
                capture_sdk_logs(attempt.diagnostics),
            ):
                self._scope = scope
                # a spawn-first transport's wait on the import is not start-up time either
                context.import_sdk = lambda: _import_within(scope)
                if not spawns_first(self.transport):
                    await _import_within(scope)
                async with self.transport.connect(config, context) as streams:
                    client_module = await _import_within(scope)  # a spawn-first server starts meanwhile
                    async with client_module.McpClient.over(
                        self.name,
                        streams,
                        config,
                        context,
                        protocol=protocol_mode(config),
                        on_list_changed=self._on_list_changed,
                        runtime=self.runtime,
                        publish=self.runtime.events.publish,
                        store=self.store,
                        clock=lambda: self.clock(),  # read at each use: a test may move it later
                    ) as client:
                        if config.log_level and client.supports("logging") and not client.modern:
                            try:
                                await client.set_log_level(config.log_level)
                            except ToolError as exc:
                                attempt.diagnostics.stderr.append(f"[kairox] logging/setLevel failed: {exc}")
                        tools = await client.list_tools() if client.supports("tools") else []
                        self._listed(client)
                        scope.deadline = math.inf
                        self._become_ready(client, tools, time.perf_counter() - started)
                        # the SDK's Tool objects are specs now: not kept for the connection's life
                        del tools
                        if self._tools_dirty:
                            await self._relist(client)
                        async with anyio.create_task_group() as tg:
                            tg.start_soon(client.listen_changes)  # 2026-07-28 change notifications
                            # served until the connection closes or stop() cancels this scope
                            # (no task of its own waiting on each of the two: 100 servers, 200 tasks)
                            self._serving = tg.cancel_scope
                            if not self._stop.is_set():
                                await client.closed.wait()
                            tg.cancel_scope.cancel()
                        self._serving = None
                        self.client = None
                        if client.closed.is_set() and not self._stop.is_set():
                            error = redact(attempt.diagnostics.error or "the server closed the connection")
                            # calls fail from now on (not ready, with the reason); the event follows once
                            # the transport has the exit code, and the tools go if no restart follows
                            self.state = ServerState.FAILED
                            self.detail = error
            if scope.cancelled_caught and not self._stop.is_set() and not error:
                error = f"no answer to initialize within {timeout:g} s (startup_timeout)"
                if config.protocol == "auto" and config.type != "sse":
                    # the SDK's server/discover probe waits up to 10 s for a server that drops it
                    error += '; server/discover is asked first: a server that ignores it wants protocol = "2025-11-25"'
        except Exception as exc:  # includes ExceptionGroup from the HTTP clients' task groups
            error = describe_error(exc)
            if config.url and error.startswith("cannot connect"):
                error += f" to {redact_url(config.url)}"
            logger.debug("MCP server %s: attempt %d failed", self.name, number, exc_info=True)
        finally:
            self.client = None
            self._scope = None
            self._serving = None
            attempt.transport_closed.set()
        if not error and not self._stop.is_set():  # pragma: no cover - every path above names its cause
            error = "the connection ended"
        diag = attempt.diagnostics
        if error and diag.exit_code is not None and "exit code" not in error:
            error = f"{error} (exit code {diag.exit_code})"
        error = diag.stderr.scrub(error)  # the values it was given, where an error quotes the url or command
        attempt.error = error
        return error

    def _become_ready(self, client: McpClient, tools: Sequence[Any], startup_s: float) -> None:
        self.client = client
        self._attempt.ready_at = time.monotonic()
        self.startup_s = startup_s
        self._register(tools)
        self.state = ServerState.READY
        proto = client.protocol_version
        self.detail = f"{client.server_info}, protocol {proto}".strip(", ")
        if self.skipped_tools:
            self.detail += f"; {len(self.skipped_tools)} tools skipped (id taken)"
        if self.withheld_tools:
            named = ", ".join(list(self.withheld_tools)[:3]) + (", ..." if len(self.withheld_tools) > 3 else "")
            self.detail += f"; {len(self.withheld_tools)} tools not offered ({named}: must run as tasks)"
        invalid = list(client.rejected_tools)
        if invalid:
            named = ", ".join(invalid[:3]) + (", ..." if len(invalid) > 3 else "")
            self.detail += f"; {len(invalid)} invalid tools skipped ({named}: see `kairox mcp logs {self.name}`)"
        self.runtime.events.publish(
            McpServerReady(
                server=self.name,
                tools=len(self.tool_specs),
                protocol_version=proto,
                server_info=client.server_info,
                startup_s=startup_s,
            )
        )
        self._settled.set()

    # -- tools ------------------------------------------------------------------------
    def _register(self, tools: Sequence[Any]) -> None:
        registry = self.runtime.tools
        adapters: list[McpToolAdapter] = []
        seen: set[str] = set()
        skipped: list[str] = []
        withheld: dict[str, str] = {}
        mine = {spec.id for spec in registry.by_provider(self.provider_key)}
        for tool in tools:
            if not self.config.tool_enabled(tool.name) or tool.name in seen:
                continue
            seen.add(tool.name)
            why = withheld_reason(tool)
            if why is not None:
                withheld[tool.name] = why
                continue
            spec = build_spec(self.name, self.config, tool)
            held = registry.rank_of(spec.id)
            if held is not None and spec.id not in mine and held <= self.rank:
                skipped.append(spec.id)  # another server's, and it ranks as high as this one
                continue
            adapters.append(McpToolAdapter(spec, self, tool.name))
        if skipped:
            logger.warning("MCP server %s: tool ids already registered elsewhere: %s", self.name, ", ".join(skipped))
        self.skipped_tools = skipped
        self.withheld_tools = withheld
        # One atomic swap; tools whose spec did not change stay as they are, so the
        # ToolsChanged event names exactly what was added, changed or removed.
        current = {spec.id: spec for spec in registry.by_provider(self.provider_key)}
        wanted = {a.spec.id: a for a in adapters}
        remove = [
            tid
            for tid, spec in current.items()
            if tid not in wanted or attrs.evolve(spec, exported_name="") != wanted[tid].spec
        ]
        add = [a for tid, a in wanted.items() if tid not in current or tid in remove]
        registry.replace(self.provider_key, add=add, remove=remove, rank=self.rank)

    @property
    def tool_specs(self) -> list[ToolSpec]:
        """The server's tools as the registry holds them now: a fresh spec of a tool that did
        not change was not registered again, and a server that registered later in the same
        start may have moved an exported name."""
        return self.runtime.tools.by_provider(self.provider_key)

    def _unregister(self) -> None:
        if self.runtime.tools.by_provider(self.provider_key):
            self.runtime.tools.remove_provider(self.provider_key)

    async def _on_list_changed(self, kind: str) -> None:
        if kind == "resources":
            self.runtime.events.publish(McpResourcesChanged(server=self.name))
            return
        if kind == "prompts":
            self.runtime.events.publish(McpPromptsChanged(server=self.name))
            return
        if kind != "tools":
            return
        client = self.client
        if client is None:  # not ready yet: re-list right after the initial listing
            self._tools_dirty = True
            return
        await self._relist(client)

    def _listed(self, client: McpClient) -> None:
        """The tools were just listed: they stay fresh for the listing's ``ttlMs`` (2026-07-28;
        the handshake revisions' until the server says ``list_changed``)."""
        ttl = client.tools_ttl_ms
        self._tools_fresh_until = None if ttl is None else self.clock() + ttl / 1000

    @property
    def tools_stale(self) -> bool:
        """Whether the tools listing is older than the server let kairox keep it (``ttlMs``;
        ``0`` or none: stale at once)."""
        return self._tools_fresh_until is not None and self.clock() >= self._tools_fresh_until

    async def refresh_tools(self) -> bool:
        """Re-list the tools when the listing is stale (:attr:`tools_stale`), and wait for it (a
        re-listing already running is waited for, not repeated). Returns whether it re-listed."""
        client = self.client
        if client is None or self.state is not ServerState.READY or not self.tools_stale:
            return False
        await self._relist(client, wait=True)
        return True

    async def _relist(self, client: McpClient, *, wait: bool = False) -> None:
        self._tools_dirty = False
        if self._relisting is not None:  # coalesce: one more listing after the running one
            self._relist_again = True
            if wait:
                await self._relisting.wait()
            return
        self._relisting = done = anyio.Event()
        try:
            while True:
                self._relist_again = False
                try:
                    tools = await client.list_tools()
                except ToolError as exc:
                    logger.warning("MCP server %s: re-listing tools failed: %s", self.name, exc)
                    return
                if client is not self.client or self.state is not ServerState.READY:
                    return
                self._listed(client)
                self._register(tools)
                self.runtime.events.publish(McpToolsRefreshed(server=self.name, tools=len(self.tool_specs)))
                if not self._relist_again:
                    return
        finally:
            self._relisting = None
            done.set()

    # -- calls -------------------------------------------------------------------------
    def _not_ready(self) -> ToolError:
        why = f": {self.detail}" if self.detail else ""
        return ToolError(f"MCP server {self.name} is not ready ({self.state.value}{why})")

    async def _closed_error(self, exc: ToolError, attempt: _Attempt) -> ToolError:
        with anyio.move_on_after(DIAGNOSTICS_GRACE):
            await attempt.transport_closed.wait()
        summary = attempt.diagnostics.summary()
        return type(exc)(f"{exc}: {summary}" if summary else str(exc))

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        timeout: float | None = None,
        progress: ProgressFn | None = None,
    ) -> Any:
        """``tools/call`` on the current session; a dead server fails with its diagnostic
        (:meth:`request`, written out: the one call every tool call makes)."""
        client, attempt = self.client, self._attempt
        if client is None or self.state is not ServerState.READY:
            raise self._not_ready()
        try:
            return await client.call_tool(name, arguments, timeout=timeout, progress=progress)
        except ToolError as exc:
            error = await self._request_error(exc, attempt)
            if error is exc:
                raise
            raise error from exc

    async def request(self, fn: Callable[[McpClient], Awaitable[Any]]) -> Any:
        """Run ``fn(client)`` on the current session (a tool call, resources, prompts, ping);
        not ready fails at once with why, a connection that closes with its diagnostic."""
        client, attempt = self.client, self._attempt
        if client is None or self.state is not ServerState.READY:
            raise self._not_ready()
        try:
            return await fn(client)
        except ToolError as exc:
            error = await self._request_error(exc, attempt)
            if error is exc:
                raise
            raise error from exc

    async def _request_error(self, exc: ToolError, attempt: _Attempt) -> ToolError:
        """What a request that failed with ``exc`` raises: the login hint when the server
        wants one (the 401's stand-in error, -32603, may arrive before the close), a closed
        connection's error with its diagnostic, else ``exc`` itself."""
        login = auth.needs_authorization(attempt.diagnostics)
        if login is not None:
            return ToolError(login)
        module = _client_module  # set: a client exists only once import_client() finished
        assert module is not None
        if isinstance(exc, module.McpConnectionClosed):
            return await self._closed_error(exc, attempt)
        return exc

    # -- stopping ----------------------------------------------------------------------
    async def stop(self, grace: float = STOP_GRACE) -> None:
        """Stop gracefully (close the session and the transport); cut it after ``grace`` s."""
        self._stop.set()
        if self._serving is not None:
            self._serving.cancel()
        if self.state is not ServerState.READY and self._scope is not None:
            self._scope.cancel()  # still starting: nothing to be graceful about
        with anyio.move_on_after(grace):
            await self._done.wait()
        if not self._done.is_set():
            logger.warning("MCP server %s did not stop within %g s; cutting the connection", self.name, grace)
            if self._scope is not None:
                self._scope.cancel()
            with anyio.move_on_after(4):  # the runtime gives a provider 15 s to stop
                await self._done.wait()
