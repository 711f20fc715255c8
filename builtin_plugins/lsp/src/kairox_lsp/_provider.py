"""LspToolProvider: runs the configured language servers and registers ``lsp.*`` tools.

Servers come from ``[lsp_servers.NAME]`` and from plugins
(:func:`add_bundle_servers`). They start in parallel, each on its own (one
failing never stops the others). While at least one server is running (or
restarting after having run), the tools its capabilities allow are
registered; when none is, they are removed. Each call is routed to the
server whose file patterns match the file.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

import anyio

from kairox import KairoxError, ServerState, ServerStatus
from kairox.declare import has_entries
from kairox.errors import ConfigError
from kairox.ext import EventBus
from kairox.files import relative_text
from kairox_peer import ToolInputError, peer_controls, server_named, unavailable_servers

if TYPE_CHECKING:
    from kairox import Runtime

    from ._config import LspServerConfig
    from ._lifecycle import LspServerLifecycle
    from ._tools import LspOperations

# The server config, the lifecycle, the client and the tools (and their event classes) are
# imported with the first server: a workspace that declares none opens without them.

__all__ = ["PROVIDER_NAME", "LspToolProvider", "add_bundle_servers", "provider_of", "restart_server", "stop_server"]

logger = logging.getLogger(__name__)

PROVIDER_NAME = "lsp"
SECTION = "lsp_servers"

_METHODS = {
    "definitionProvider": "textDocument/definition",
    "referencesProvider": "textDocument/references",
    "hoverProvider": "textDocument/hover",
    "documentSymbolProvider": "textDocument/documentSymbol",
    "workspaceSymbolProvider": "workspace/symbol",
}


def _server_supports(server: LspServerLifecycle, capability: str) -> bool:
    client = server.client
    if client is not None and server.state is ServerState.READY:
        return client.supports(capability)
    return server.capabilities.get(capability) not in (None, False)


class LspToolProvider:
    """The ``lsp`` tool provider."""

    name = PROVIDER_NAME

    def __init__(
        self,
        runtime: Runtime | None = None,
        *,
        workspace: Path | None = None,
        env: Mapping[str, str] | None = None,
        events: EventBus | None = None,
    ) -> None:
        self.runtime = runtime
        self.workspace = Path(os.path.normpath(workspace or (runtime.workspace if runtime else Path.cwd())))
        self.env: Mapping[str, str] = env if env is not None else (runtime.env if runtime else dict(os.environ))
        self.events = events or (runtime.events if runtime else EventBus())
        self.servers: dict[str, LspServerLifecycle] = {}
        self._tool_names: tuple[str, ...] = ()
        self._routes: dict[tuple[Path, tuple[str, ...]], list[LspServerLifecycle]] = {}
        self._launched: set[str] = set()
        self._started = False
        self._stopping = False

    @functools.cached_property
    def operations(self) -> LspOperations:
        """What the ``lsp.*`` tools call (built with the first tool)."""
        from ._tools import LspOperations

        return LspOperations(self)

    # -- servers ------------------------------------------------------------------
    def add_server(self, name: str, config: LspServerConfig, *, source: str = "") -> LspServerLifecycle:
        """Add a server; when the provider already runs (or was left idle in a runtime that
        started all its providers: a bundle's server added later), start it at once. Raises
        ``ValueError`` on a taken name."""
        if name in self.servers:
            raise ValueError(f"a language server named {name!r} exists already ({self.servers[name].source})")
        from ._lifecycle import LspServerLifecycle

        server = LspServerLifecycle(
            name,
            config,
            workspace=self.workspace,
            env=self.env,
            events=self.events,
            source=source,
            on_change=self._on_change,
        )
        self.servers[name] = server
        self._routes.clear()
        running = self._started or (self.runtime is not None and self.runtime.start_mode == "all")
        if running and not self._stopping:
            self._started = True
            self._launch(server)
        return server

    async def remove_server(self, name: str) -> None:
        """Stop a server and forget it (its tools go when no other server provides them)."""
        server = self.servers.pop(name, None)
        self._routes.clear()
        if server is not None:
            await server.stop()
            self._refresh_tools()

    def _named(self, name: str) -> LspServerLifecycle:
        return server_named(self.servers, name, "language server")

    async def stop_server(self, name: str) -> LspServerLifecycle:
        """Stop the server ``name`` (``shutdown``, ``exit``, close stdin, grace, kill) and wait until
        it is reaped; it stays ``stopped`` (and its tools go when no other server provides them)
        until :meth:`restart`. Raises :class:`~kairox.KairoxError` for an unknown name."""
        server = self._named(name)
        self._launched.add(name)  # stopped on purpose: nothing starts it again but restart()
        await server.stop()
        self._refresh_tools()
        return server

    async def restart(self, name: str) -> LspServerLifecycle:
        """Stop the server ``name`` if it runs and start it again; returns once it is ready or
        failed (bounded by its ``startup_timeout``). The documents it had open are opened again.
        Raises :class:`~kairox.KairoxError` for an unknown name or a provider without a runtime."""
        server = self._named(name)
        if self.runtime is None or self._stopping:
            raise KairoxError(f"language server {name} cannot be started: the lsp provider is not running")
        self._started = True
        self._launched.add(name)
        await server.restart(self.runtime.spawn)
        self._refresh_tools()
        return server

    def _launch(self, server: LspServerLifecycle) -> None:
        if self.runtime is None:
            raise RuntimeError("LspToolProvider needs a runtime to start servers")
        if server.name in self._launched:
            return
        self._launched.add(server.name)
        server.launch(self.runtime.spawn)

    def _add_configured(self, runtime: Runtime) -> None:
        configs: dict[str, LspServerConfig] = runtime.config.section(SECTION)
        for name, config in configs.items():
            if not config.enabled or name in self.servers:
                continue
            self.add_server(name, config, source=runtime.config.source_of(SECTION, name) or "")

    # -- ToolProvider -----------------------------------------------------------------
    async def discover(self, runtime: Runtime) -> bool:
        """Whether any ``[lsp_servers.*]`` is set (held and broken ones too) or a bundle added
        a server: else it stays idle."""
        return bool(self.servers) or has_entries(SECTION, runtime)

    async def start(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._add_configured(runtime)
        self._started = True
        for server in self.servers.values():
            self._launch(server)
        await self.wait_settled()
        self._refresh_tools()

    async def start_for(self, name: str, arguments: Mapping[str, Any]) -> None:
        """Lazy activation: for an ``lsp.*`` tool, start the server for the call's file
        (every server when the call names none)."""
        if self.runtime is None or not name.startswith((f"{self.name}.", f"{self.name}_")):
            return
        self._add_configured(self.runtime)
        wanted = list(self.servers.values())
        path = arguments.get("path")
        if isinstance(path, str) and path:
            from kairox_peer import matches

            rel = PurePath(path) if not PurePath(path).is_absolute() else self._relative(Path(path))
            matching = [s for s in wanted if matches(s.patterns, rel)]
            wanted = matching or wanted
        self._started = True
        for server in wanted:
            self._launch(server)
        await self.wait_settled(wanted)
        self._refresh_tools()

    def why_missing(self, name: str) -> str | None:
        if not name.startswith((f"{self.name}.", f"{self.name}_")):
            return None
        held = self._unavailable()
        if not self.servers and held:
            return "; ".join(f"language server {n} is {st.state.value}: {st.detail}" for n, st in held.items())
        failed = [s for s in self.servers.values() if s.state is ServerState.FAILED]
        if failed and len(failed) == len(self.servers):
            return "; ".join(f"language server {s.name} failed: {s.error}" for s in failed)
        if not self.servers:
            return "no language server is configured ([lsp_servers.NAME] in kairox.toml)"
        return None

    def _unavailable(self) -> dict[str, ServerStatus]:
        """Configured servers that cannot start: untrusted (held) or broken entries."""
        return {st.name: st for st in unavailable_servers(self.runtime, SECTION, "lsp")}

    async def wait_settled(self, servers: Sequence[LspServerLifecycle] | None = None) -> None:
        """Wait (bounded by each server's startup timeout) until no server (of ``servers``) is starting."""
        async with anyio.create_task_group() as tg:
            for server in list(self.servers.values()) if servers is None else servers:
                tg.start_soon(server.wait_settled, server.config.startup_timeout + server.config.shutdown_timeout + 2)

    async def stop(self) -> None:
        self._stopping = True
        async with anyio.create_task_group() as tg:
            for server in list(self.servers.values()):
                tg.start_soon(server.stop)
        if self.runtime is not None:
            self.runtime.tools.remove_provider(self.name)
        self._tool_names = ()

    def status(self) -> Sequence[ServerStatus]:
        out = [st for name, st in self._unavailable().items() if name not in self.servers]
        for name, server in sorted(self.servers.items()):
            out.append(
                ServerStatus(
                    name=name,
                    kind="lsp",
                    state=server.state,
                    detail=self._detail(server),
                    tools=len(self._tools_of(server)) if server.state is ServerState.READY else 0,
                    source=server.source,
                )
            )
        return out

    @staticmethod
    def _detail(server: LspServerLifecycle) -> str:
        restarts = f", restarted {server.restarts}x" if server.restarts else ""
        if server.state is ServerState.READY:
            info = server.client.server_info.get("name", "") if server.client else ""
            return f"{info or server.config.command} (pid {server.pid}){restarts}"
        if server.state is ServerState.FAILED:
            return server.error
        if server.state is ServerState.STARTING:
            return f"restarting (attempt {server.attempts + 1})" if server.capabilities else "starting"
        return ""

    # -- routing ------------------------------------------------------------------------
    def _relative(self, path: Path) -> PurePath:
        rel = relative_text(path, self.workspace)
        return path if rel is None else PurePath(rel)

    def server_for(self, path: Path | None, name: str | None = None) -> LspServerLifecycle:
        """The server for ``path`` (by file pattern) or the one named ``name``."""
        if name is not None:
            server = self.servers.get(name)
            if server is None:
                raise ToolInputError(
                    f"no language server named {name!r}; configured: {', '.join(self.servers) or 'none'}"
                )
            return server
        if path is None:
            ready = self.ready_servers()
            if len(ready) == 1:
                return ready[0]
            raise ToolInputError("give `path` or `server`: more than one language server could answer")
        key = (path, tuple(self.servers))
        candidates = self._routes.get(key)
        if candidates is None:
            from kairox_peer import matches

            rel = self._relative(path)
            candidates = [s for s in self.servers.values() if matches(s.patterns, rel)]
            if len(self._routes) > 4096:
                self._routes.clear()
            self._routes[key] = candidates
        if not candidates:
            known = "; ".join(f"{n}: {', '.join(s.patterns) or '(no patterns)'}" for n, s in self.servers.items())
            shown = self._relative(path).as_posix()
            raise ToolInputError(f"no language server handles {shown} (servers: {known or 'none'})")
        for server in candidates:
            if server.available:
                return server
        return candidates[0]

    def ready_servers(self, name: str | None = None) -> list[LspServerLifecycle]:
        servers = [self.server_for(None, name)] if name is not None else list(self.servers.values())
        return [s for s in servers if s.state is ServerState.READY]

    def servers_supporting(self, capability: str, name: str | None = None) -> list[LspServerLifecycle]:
        servers = [self.server_for(None, name)] if name is not None else list(self.servers.values())
        return [s for s in servers if s.available and _server_supports(s, capability)]

    # -- tools ---------------------------------------------------------------------------
    def _tools_of(self, server: LspServerLifecycle) -> list[str]:
        if not server.available:
            return []
        from ._tools import TOOL_CAPABILITIES

        return [
            name
            for name, (_desc, _schema, capability) in TOOL_CAPABILITIES.items()
            if capability is None or _server_supports(server, capability)
        ]

    def _on_change(self, _server: LspServerLifecycle) -> None:
        if self._started and not self._stopping:
            self._refresh_tools()

    def _refresh_tools(self) -> None:
        if self.runtime is None or self._stopping:
            return
        wanted: set[str] = set()
        for server in self.servers.values():
            wanted.update(self._tools_of(server))
        if not wanted and not self._tool_names:
            return  # no tool, before and now (no server has any)
        from ._tools import TOOL_CAPABILITIES, build_tools

        names = tuple(n for n in TOOL_CAPABILITIES if n in wanted)
        if names == self._tool_names:
            return
        self._tool_names = names
        self.runtime.tools.replace_provider(self.name, build_tools(self.operations, list(names), self.name))


provider_of, restart_server, stop_server = peer_controls(
    PROVIDER_NAME, LspToolProvider, "kairox-lsp", "language server"
)


def add_bundle_servers(
    runtime: Runtime,
    plugin: str,
    servers: Any,
    *,
    root: str | os.PathLike[str] | None = None,
    file: str | None = None,
) -> list[ConfigError]:
    """Add a plugin's Claude-style ``lspServers`` to the running ``lsp`` provider.

    For plugin loaders. ``servers`` is the manifest's ``lspServers`` value (a
    table of entries, or a relative path of a ``.lsp.json`` under ``root``),
    or a whole ``.lsp.json`` document. Each server is named ``<plugin>:<name>``;
    ``${CLAUDE_PLUGIN_ROOT}`` expands to ``root``. Servers start at once when
    the provider runs, else with it. Returns the problems (a bad entry drops
    only itself); never raises.
    """
    provider = runtime.providers.get(PROVIDER_NAME)
    if not isinstance(provider, LspToolProvider):
        return [ConfigError("kairox-lsp's provider is not registered; lspServers ignored", file=file, path=plugin)]
    from ._config import load_lsp_json, parse_lsp_servers

    base = Path(root) if root is not None else None
    if isinstance(servers, str):
        if base is None:
            return [ConfigError("a path of lspServers needs the plugin root", file=file, path=f"{plugin}.lspServers")]
        lsp_file = Path(os.path.normpath(base / servers))
        if not str(lsp_file).startswith(str(Path(os.path.normpath(base))) + os.sep):
            return [ConfigError(f"{servers!r} leaves the plugin directory", file=file, path=f"{plugin}.lspServers")]
        configs, errors = load_lsp_json(lsp_file, root=runtime.contained(base, label=f"bundle {plugin}"))
    else:
        configs, errors = parse_lsp_servers(servers, root=base, file=file, path=f"{plugin}.lspServers")
    for name, config in configs.items():
        try:
            provider.add_server(f"{plugin}:{name}", config, source=f"plugin {plugin}")
        except ValueError as exc:
            errors.append(ConfigError(str(exc), file=file, path=f"{plugin}.lspServers.{name}"))
    return errors
