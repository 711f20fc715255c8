"""DapToolProvider: the ``dap.*`` tools over the adapters of ``[dap_servers.NAME]``.

The tools are registered while at least one adapter is configured. Adapters
start on demand: ``dap.launch`` starts the one for the program (a fresh
process per session) and ``dap.disconnect`` ends it. One debug session at a
time; breakpoints are kept across sessions and applied at each launch.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from kairox import KairoxError, ServerState, ServerStatus
from kairox.declare import has_entries
from kairox.ext import EventBus
from kairox.files import relative_text
from kairox_peer import ToolInputError, peer_controls, server_named, unavailable_servers

from ._args import bool_arg, int_arg, number_arg, str_arg

if TYPE_CHECKING:
    from kairox import Runtime

    from ._config import DapServerConfig
    from ._lifecycle import DapServerLifecycle
    from ._session import Breakpoint, DebugSession

# The adapter config, the lifecycle, the client, the session and the tools (and their event
# classes) are imported with the first configured adapter: a workspace that declares none opens
# without them.

__all__ = ["PROVIDER_NAME", "DapToolProvider", "provider_of", "restart_server", "stop_server"]

logger = logging.getLogger(__name__)

PROVIDER_NAME = "dap"
SECTION = "dap_servers"


class DapToolProvider:
    """The ``dap`` tool provider."""

    name = PROVIDER_NAME

    def __init__(self, runtime: Runtime | None = None, *, events: EventBus | None = None) -> None:
        self.runtime = runtime
        self.workspace = Path(os.path.normpath(runtime.workspace if runtime else Path.cwd()))
        self.env: Mapping[str, str] = runtime.env if runtime else dict(os.environ)
        self.events = events or (runtime.events if runtime else EventBus())
        self.adapters: dict[str, DapServerLifecycle] = {}
        self.breakpoints: dict[Path, list[Breakpoint]] = {}
        self.session: DebugSession | None = None
        self.current: DapServerLifecycle | None = None

    @functools.cached_property
    def _lock(self) -> anyio.Lock:
        # made on first use, inside the event loop: anyio.Lock() asks which loop runs, which
        # imports asyncio, and commands that run none build every provider (`kairox plugins`)
        return anyio.Lock()

    # -- ToolProvider ---------------------------------------------------------------
    async def discover(self, runtime: Runtime) -> bool:
        """Whether any ``[dap_servers.*]`` is set (held and broken ones too): else it stays idle."""
        return has_entries(SECTION, runtime)

    async def start(self, runtime: Runtime) -> None:
        self.runtime = runtime
        configs: dict[str, DapServerConfig] = runtime.config.section(SECTION)
        if not configs:
            return
        from ._lifecycle import DapServerLifecycle
        from ._tools import build_tools

        for name, config in configs.items():
            self.adapters[name] = DapServerLifecycle(
                name,
                config,
                workspace=self.workspace,
                env=self.env,
                events=self.events,
                source=runtime.config.source_of(SECTION, name) or "",
            )
        if self.adapters:
            runtime.tools.replace_provider(self.name, build_tools(self, self.name))

    async def stop(self) -> None:
        session = self.session
        if session is not None and not session.ended:
            with anyio.move_on_after(5):
                await session.disconnect(terminate=True)
        async with anyio.create_task_group() as tg:
            for adapter in self.adapters.values():
                if adapter.active:
                    tg.start_soon(adapter.stop)
        if self.runtime is not None:
            self.runtime.tools.remove_provider(self.name)

    # -- restart and stop (the dashboard's buttons) ------------------------------------
    def _named(self, name: str) -> DapServerLifecycle:
        return server_named(self.adapters, name, "debug adapter")

    async def _end_session_of(self, adapter: DapServerLifecycle) -> None:
        session = self.session
        if session is not None and adapter is self.current:
            if not session.ended:
                with anyio.move_on_after(5):
                    await session.disconnect(terminate=True)
            self.session = None

    async def stop_server(self, name: str) -> DapServerLifecycle:
        """Stop the adapter ``name``: its debug session ends (the debuggee is terminated) and
        the process is reaped; it is ``stopped`` until the next ``dap.launch`` or :meth:`restart`.
        Raises :class:`~kairox.KairoxError` for an unknown name."""
        adapter = self._named(name)
        async with self._lock:
            await self._end_session_of(adapter)
            if adapter.active:
                await adapter.stop()
        return adapter

    async def restart(self, name: str) -> DapServerLifecycle:
        """Stop the adapter ``name`` (ending its debug session) and start it again, idle: it
        answers ``initialize`` and is ``ready`` (or ``failed``, with the reason in its status).
        ``dap.launch`` still starts a fresh adapter for each debug session."""
        adapter = self._named(name)
        if self.runtime is None:
            raise KairoxError(f"debug adapter {name} cannot be started: the dap provider is not running")
        async with self._lock:
            await self._end_session_of(adapter)
            if adapter.active:
                await adapter.stop()
            from ._lifecycle import AdapterUnavailable

            try:
                await adapter.start(self.runtime.spawn)
            except AdapterUnavailable as exc:
                logger.info("%s", exc)
        return adapter

    def _unavailable(self) -> list[ServerStatus]:
        """Configured adapters that cannot start: untrusted (held) or broken entries."""
        return [st for st in unavailable_servers(self.runtime, SECTION, "dap") if st.name not in self.adapters]

    def why_missing(self, name: str) -> str | None:
        if not name.startswith((f"{self.name}.", f"{self.name}_")) or self.adapters:
            return None
        held = self._unavailable()
        if held:
            return "; ".join(f"debug adapter {st.name} is {st.state.value}: {st.detail}" for st in held)
        return "no debug adapter is configured ([dap_servers.NAME] in kairox.toml)"

    def status(self) -> Sequence[ServerStatus]:
        out = self._unavailable()
        if not self.adapters:
            return out
        from ._tools import TOOLS

        for name, adapter in sorted(self.adapters.items()):
            detail = ""
            if adapter.state is ServerState.FAILED:
                detail = adapter.error
            elif adapter.state is ServerState.READY:
                detail = f"pid {adapter.pid}"
                if self.session is not None and adapter is self.current:
                    detail += f", debugging {self._display(self.session.program)} ({self.session.state})"
            elif adapter.state is ServerState.STOPPED:
                detail = "started by dap.launch"
            out.append(
                ServerStatus(
                    name=name,
                    kind="dap",
                    state=adapter.state,
                    detail=detail,
                    tools=len(TOOLS),
                    source=adapter.source,
                )
            )
        return out

    # -- helpers ----------------------------------------------------------------------
    def _display(self, path: Path) -> str:
        rel = relative_text(path, self.workspace)
        return str(path) if rel is None else rel

    def _path(self, value: str, *, must_exist: bool = True) -> Path:
        path = Path(value).expanduser()
        if not path.is_absolute():
            path = self.workspace / path
        path = Path(os.path.normpath(path))
        if must_exist and not path.exists():
            raise ToolInputError(f"no such file: {value}")
        return path

    def _adapter_for(self, program: Path, name: str | None) -> DapServerLifecycle:
        if name is not None:
            adapter = self.adapters.get(name)
            if adapter is None:
                raise ToolInputError(f"no debug adapter named {name!r}; configured: {', '.join(self.adapters)}")
            return adapter
        inside = relative_text(program, self.workspace)
        rel = program if inside is None else Path(inside)
        from ._config import handles

        matching = [a for a in self.adapters.values() if handles(a.config, rel)]
        if matching:
            return matching[0]
        if len(self.adapters) == 1:
            return next(iter(self.adapters.values()))
        raise ToolInputError(f"no debug adapter is configured for {rel.as_posix()}; name one with `server`")

    def _live(self) -> DebugSession:
        if self.session is None:
            raise ToolInputError("no debug session; start one with dap.launch")
        return self.session

    # -- the tools ----------------------------------------------------------------------
    async def launch(self, args: dict[str, Any]) -> str:
        program = self._path(str_arg(args, "program", required=True) or "")
        argv = args.get("args", [])
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise ToolInputError("`args` must be a list of strings")
        env = args.get("env")
        if env is not None and (not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values())):
            raise ToolInputError("`env` must be a table of strings")
        cwd_arg = str_arg(args, "cwd")
        cwd = self._path(cwd_arg) if cwd_arg else self.workspace
        stop_on_entry = bool_arg(args, "stop_on_entry", False)
        wait = number_arg(args, "wait", 30.0)
        adapter = self._adapter_for(program, str_arg(args, "server"))
        if self.runtime is None:
            raise ToolInputError("the dap provider is not started")
        async with self._lock:
            if self.session is not None and not self.session.ended:
                raise ToolInputError(
                    f"{self._display(self.session.program)} is being debugged; end it with dap.disconnect first"
                )
            for other in self.adapters.values():
                if other.active:  # a fresh adapter per session
                    await other.stop()
            self.session = None
            client = await adapter.start(self.runtime.spawn)
            self.current = adapter
            from ._session import DebugSession

            self.session = DebugSession(client, program=program, workspace=self.workspace)
            arguments: dict[str, Any] = {
                "name": f"kairox: {program.name}",
                "type": adapter.config.adapter_id or adapter.name,
                "request": "launch",
                **adapter.config.launch,
                "program": str(program),
                "args": list(argv),
                "cwd": str(cwd),
                "console": "internalConsole",
                "stopOnEntry": stop_on_entry,
            }
            if env:
                arguments["env"] = dict(env)
            try:
                return await self.session.launch(arguments, dict(self.breakpoints), wait=wait)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await adapter.stop()
                raise

    async def set_breakpoints(self, args: dict[str, Any]) -> str:
        path = self._path(str_arg(args, "file", required=True) or "")
        lines = args.get("lines")
        if not isinstance(lines, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in lines
        ):
            raise ToolInputError("`lines` must be a list of 1-based line numbers")
        conditions = args.get("conditions") or []
        if not isinstance(conditions, list) or not all(c is None or isinstance(c, str) for c in conditions):
            raise ToolInputError("`conditions` must be a list of strings (or nulls)")
        if len(conditions) > len(lines):
            raise ToolInputError("more `conditions` than `lines`")
        from ._session import Breakpoint

        bps = [Breakpoint(line, conditions[i] if i < len(conditions) else None) for i, line in enumerate(lines)]
        if bps:
            self.breakpoints[path] = bps
        else:
            self.breakpoints.pop(path, None)
        session = self.session
        if session is not None and not session.ended:
            return await session.set_breakpoints(path, bps)
        shown = self._display(path)
        listed = ", ".join(str(b.line) + (f" if {b.condition}" if b.condition else "") for b in bps) or "none"
        return f"breakpoints in {shown}: {listed} (applied when dap.launch starts the program)"

    async def _resume(self, command: str, args: dict[str, Any]) -> str:
        return await self._live().resume(command, int_arg(args, "thread", None), number_arg(args, "wait", 30.0))

    async def continue_(self, args: dict[str, Any]) -> str:
        return await self._resume("continue", args)

    async def step_over(self, args: dict[str, Any]) -> str:
        return await self._resume("next", args)

    async def step_in(self, args: dict[str, Any]) -> str:
        return await self._resume("stepIn", args)

    async def step_out(self, args: dict[str, Any]) -> str:
        return await self._resume("stepOut", args)

    async def stack_trace(self, args: dict[str, Any]) -> str:
        return await self._live().stack_trace(int_arg(args, "thread", None), int_arg(args, "levels", 20, 1) or 20)

    async def variables(self, args: dict[str, Any]) -> str:
        session = self._live()
        session.require_stopped()
        depth = int_arg(args, "depth", 1, 1) or 1
        if depth > 5:
            raise ToolInputError("`depth` must be at most 5")
        return await session.variables(int_arg(args, "frame", 0) or 0, str_arg(args, "scope"), depth)

    async def evaluate(self, args: dict[str, Any]) -> str:
        expression = str_arg(args, "expression", required=True) or ""
        context = args.get("context", "repl")
        if context not in ("repl", "watch", "hover"):
            raise ToolInputError("`context` must be repl, watch or hover")
        return await self._live().evaluate(expression, int_arg(args, "frame", 0) or 0, context)

    async def output(self, args: dict[str, Any]) -> str:
        session = self._live()
        text = session.client.output.text() if bool_arg(args, "all", False) else session.client.output.read_new()
        return text if text else "(no new output)"

    async def disconnect(self, args: dict[str, Any]) -> str:
        async with self._lock:
            session = self._live()
            text = await session.disconnect(terminate=True)
            adapter = self.current
            if adapter is not None:
                await adapter.stop()
            self.session = None
            output = session.client.output.read_new()
            if session.exit_code is not None and "exit code" not in text:  # the exit came with the goodbye
                text += f" (exit code {session.exit_code})"
            return text + (f"\noutput:\n{output.rstrip()}" if output.strip() else "")


provider_of, restart_server, stop_server = peer_controls(PROVIDER_NAME, DapToolProvider, "kairox-dap", "debug adapter")
