"""McpServerManager: the tool provider that runs every configured MCP server.

Reachable from a runtime as ``kairox_mcp.manager_of(runtime)`` (or
``runtime.providers.get("mcp")``). Besides tools it exposes each server's
resources and prompts::

    mcp = kairox_mcp.manager_of(rt)
    for r in await mcp.list_resources():           # every ready server
        print(r.server, r.uri)
    contents = await mcp.read_resource("everything", "demo://resource/static/document/architecture.md")
    prompt = await mcp.get_prompt("everything", "args-prompt", {"city": "Paris"})
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import attrs

from kairox import ResourceContent, ServerState, ServerStatus
from kairox.errors import ConfigError, KairoxError, ToolError
from kairox.ext import NotApplied, Registrar, ToolRank, missing_feature_message, sanitize_name

from ._declared import nothing_declared

if TYPE_CHECKING:
    from kairox import Runtime

    from .caching import ResultStore
    from .client import McpClient
    from .config import McpServerConfig, ServerDefinition
    from .lifecycle import ServerLifecycle
    from .resources import McpPrompt, McpPromptResult, McpResource, McpResourceTemplate
    from .sources import UnavailableServer
    from .transport import McpTransport

# The server config and the readers of .mcp.json / Philont's mcp.json are imported when a
# server is declared somewhere; the server lifecycle (and with it the client, the events,
# the adapter) and the resource types when a server starts or a resource is asked for: a
# workspace that declares no MCP server opens without them.

__all__ = ["SECTION", "McpServerManager", "McpStartupError", "manager_of"]

logger = logging.getLogger(__name__)

SECTION = "mcp_servers"
#: how long a resource/prompt request may take, seconds
REQUEST_TIMEOUT = 60.0

T = TypeVar("T")


class McpStartupError(KairoxError):
    """A server marked ``required = true`` failed to start."""


def manager_of(runtime: Runtime) -> McpServerManager:
    """The runtime's MCP manager (raises when kairox-mcp is not loaded)."""
    provider = runtime.providers.get("mcp")
    if not isinstance(provider, McpServerManager):
        raise KairoxError("kairox-mcp is not loaded in this runtime (pip install kairox-mcp)")
    return provider


class McpServerManager:
    """Starts every enabled server in parallel, one failing never affecting the others,
    and registers each server's tools as it becomes ready (provider ``mcp:<server>``)."""

    name = "mcp"

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.definitions: dict[str, ServerDefinition] = {}
        #: declared servers that cannot start: untrusted (held) or broken, by name
        self.unavailable: dict[str, UnavailableServer] = {}
        #: problems found reading .mcp.json / Philont mcp.json (also in runtime.config.errors)
        self.errors: list[ConfigError] = []
        self._servers: dict[str, ServerLifecycle] = {}
        self._started = False
        self._redacting = False
        #: the transports plugins register, asked for when the first server connects
        self._transports: Registrar[McpTransport] | None = None
        #: what the servers' clients keep of their list and read results (made with the first start)
        self._store: ResultStore | None = None
        self._skill_source = False
        #: seconds: when a kept result or tools listing goes stale (tests move it by hand)
        self.clock: Callable[[], float] = time.monotonic
        self._load()
        on_roots_changed = getattr(runtime, "on_roots_changed", None)
        if on_roots_changed is not None:
            on_roots_changed(self._roots_changed)

    # -- configuration --------------------------------------------------------------
    def _redact_logs(self) -> None:
        """Redact server URLs and secrets in the SDK's and our loggers (:mod:`._sdklog`) before
        anything logs a server's URL (-vv): once, with the first server this manager knows (a
        manager with none logs none, and imports nothing for it)."""
        if not self._redacting:
            from ._sdklog import install_log_redaction

            install_log_redaction()
            self._redacting = True

    def _load(self) -> None:
        config = self.runtime.config
        toml: Mapping[str, McpServerConfig] = config.section(SECTION) if SECTION in config.sections else {}
        home = _home_of(self.runtime.env)
        held = config.held_entries(SECTION)
        broken = config.broken_entries(SECTION)
        if not toml and not held and not broken and nothing_declared(self.runtime.workspace, self.runtime.env, home):
            return  # no server anywhere: nothing to read, define, report or log
        self._redact_logs()
        from .sources import UnavailableServer, load_definitions

        sources = {
            name: (held[name].replaced_by if name in held else config.source_of(SECTION, name)) or "" for name in toml
        }
        unavailable: list[UnavailableServer] = []
        self.definitions, self.errors = load_definitions(
            workspace=self.runtime.workspace,
            env=self.runtime.env,
            toml_servers=toml,
            toml_source=sources,
            home=home,
            trust=self.runtime.trust,
            unavailable=unavailable,
            workspace_root=self.runtime.workspace_root,
        )
        for name, entry in held.items():
            prefix = entry.raw.get("tool_prefix") if isinstance(entry.raw.get("tool_prefix"), str) else name
            unavailable.append(
                UnavailableServer(name, entry.file, ServerState.UNTRUSTED, entry.reason, str(prefix), "kairox.toml")
            )
        for name, errors in broken.items():
            source = config.source_of(SECTION, name) or ""
            reason = "; ".join(str(e) for e in errors)
            unavailable.append(UnavailableServer(name, source, ServerState.FAILED, reason, name, "kairox.toml"))
        for definition in list(self.definitions.values()):
            self._define(definition)  # the same checks for every source (trust_annotations)
        for u in unavailable:
            self.add_unavailable(u)
        config.errors.extend(self.errors)

    def _owned_by_user(self, definition: ServerDefinition) -> bool:
        """Whether the user's own config declares the server (their kairox.toml, Philont's
        mcp.json in their home or environment, or code): only then may it trust annotations."""
        if definition.origin in ("philont", "code"):
            return True
        return definition.origin == "kairox.toml" and self.runtime.config.scope_of(definition.source) == "user"

    def rank_of(self, definition: ServerDefinition) -> ToolRank:
        """Who stands behind a server, for an exported name two tools want: the user's own
        config and code first, then bundles the user installed, then the workspace's."""
        if self._owned_by_user(definition):
            return ToolRank.USER
        source = definition.source
        workspace = os.path.realpath(self.runtime.workspace)
        inside = bool(source) and (os.path.realpath(source) + os.sep).startswith(workspace + os.sep)
        if inside or self.runtime.config.scope_of(source) == "workspace":
            return ToolRank.WORKSPACE
        return ToolRank.BUNDLE if definition.origin.startswith("plugin:") else ToolRank.USER

    def _define(self, definition: ServerDefinition) -> None:
        """Know ``definition`` (replacing a same-named one that is not running); start nothing."""
        self._redact_logs()
        running = self._servers.get(definition.name)
        if running is not None and not running.done:
            raise KairoxError(f"MCP server {definition.name} is running; remove it first")
        if definition.config.trust_annotations and not self._owned_by_user(definition):
            logger.warning(
                "MCP server %s: trust_annotations is honoured only in your own config (%s); ignored",
                definition.name,
                definition.source or definition.origin,
            )
            definition = attrs.evolve(definition, config=attrs.evolve(definition.config, trust_annotations=False))
            if definition.origin == "kairox.toml" and definition.source:  # config show and status say so
                self.runtime.config.not_applied.append(
                    NotApplied(
                        SECTION,
                        f"{definition.name}.trust_annotations",
                        definition.source,
                        "honoured only in your own config",
                    )
                )
        loosened = [key for key in ("sampling", "elicitation") if getattr(definition.config, key) == "allow"]
        if loosened and not self._owned_by_user(definition):
            logger.warning(
                'MCP server %s: %s = "allow" is honoured only in your own config (%s); it asks instead',
                definition.name,
                " and ".join(loosened),
                definition.source or definition.origin,
            )
            config = definition.config
            for key in loosened:
                config = attrs.evolve(config, **{key: "ask"})  # type: ignore[arg-type]
            definition = attrs.evolve(definition, config=config)
            if definition.origin == "kairox.toml" and definition.source:
                for key in loosened:
                    self.runtime.config.not_applied.append(
                        NotApplied(
                            SECTION,
                            f"{definition.name}.{key}",
                            definition.source,
                            '"allow" is honoured only in your own config; it asks',
                        )
                    )
        self._servers.pop(definition.name, None)  # a finished run of the old definition
        self.definitions[definition.name] = definition
        self.unavailable.pop(definition.name, None)

    async def add_server(self, definition: ServerDefinition, *, start: bool | None = None) -> ServerLifecycle | None:
        """Add a server at run time (from code, or another plugin: kairox-manifests' bundles).

        It is checked as a configured server is (``trust_annotations`` counts only in the
        user's own config) and replaces a same-named server that is not running.

        It starts now with ``start=True``, or by default (``None``) when the server is
        enabled and this manager has started its servers, or the runtime has started all
        its providers (``runtime.start_mode == "all"``: a manager woken from dormancy by
        this very use starts right after): the call returns once it is ready or
        has failed (as :meth:`start_servers`: a ``required`` one that failed raises
        :class:`McpStartupError`), its tools registered under provider ``mcp:<name>`` and
        the ``McpServer*`` events published as for any server. Otherwise (``start=False``;
        before the manager starts: a runtime's discover stage, a lazy runtime) it is only
        defined, and starts with the others or when a call needs one of its tools.

        Returns the started server, else ``None``. Raises :class:`KairoxError` when a
        server of that name is running (:meth:`remove_server` it first).
        """
        self._define(definition)
        if start is None:  # started, or woken from dormancy into a runtime that starts it next
            running = self._started or getattr(self.runtime, "start_mode", None) == "all"
            start = running and definition.config.enabled
        if not start:
            return None
        await self.start_servers([definition.name])
        return self._servers[definition.name]

    def add_unavailable(self, server: UnavailableServer) -> None:
        """Declare a server that cannot start (untrusted, or broken), so listings show it and
        a call of one of its tools says why. A defined server of the same name (the user's
        own) keeps running; the held one is noted as ignored."""
        if server.name in self.definitions:
            kept = self.definitions[server.name].source or "code"
            server = attrs.evolve(server, reason=f"{server.reason}; ignored: {server.name} from {kept} applies")
            self.unavailable[f"{server.name} ({server.source})"] = server
            return
        self.unavailable[server.name] = server

    async def remove_server(self, name: str) -> bool:
        """Take a server out at run time (a bundle was unloaded): stop it if it runs (its
        tools are unregistered, ``McpServerStopped`` is published), then forget it, defined
        or listed as unavailable. Returns whether a server of that name was known."""
        server = self._servers.pop(name, None)
        if server is not None:
            await self._stop_one(server)
        defined = self.definitions.pop(name, None) is not None
        held = self.unavailable.pop(name, None) is not None
        return server is not None or defined or held

    def transport_for(self, config: McpServerConfig) -> tuple[McpTransport | None, str]:
        """The registered transport for ``config.type``, or why there is none."""
        if self._transports is None:
            registrar: Registrar[McpTransport] = Registrar("transport")
            self._transports = self.runtime.register_owned("kairox_register_transports", registrar)
        transport = self._transports.get(config.type)
        if transport is not None:
            return transport, ""
        missing = missing_feature_message("transport", config.type)
        if missing:
            return None, missing
        installed = ", ".join(self._transports.names()) or "none"
        return None, f'unknown transport "{config.type}" (installed transports: {installed})'

    # -- ToolProvider ------------------------------------------------------------------------
    async def discover(self, runtime: Runtime) -> bool:
        """Whether there is anything to do: a server declared anywhere (held and broken ones
        too, to show them). A bundle's servers, added during discovery, start it all the same."""
        return bool(self.definitions or self.unavailable)

    async def start(self, runtime: Runtime) -> None:
        """Start every enabled server; return when each is ready or failed."""
        self._started = True  # from now on add_server starts what it adds
        await self.start_servers()

    async def start_servers(self, names: Iterable[str] | None = None) -> None:
        """Start the named (default: all enabled) servers in parallel and wait until each
        is ready or has failed. Raises :class:`McpStartupError` if a required one failed."""
        wanted = list(names) if names is not None else [n for n, d in self.definitions.items() if d.config.enabled]
        unknown = [n for n in wanted if n not in self.definitions]
        if unknown:
            raise KairoxError(f"no MCP server named {', '.join(unknown)} (configured: {', '.join(self.definitions)})")
        await self._add_skill_source()
        started: list[ServerLifecycle] = []
        for name in wanted:
            current = self._servers.get(name)
            if current is not None and not current.done:
                started.append(current)
                continue
            definition = self.definitions[name]
            transport, why = self.transport_for(definition.config)
            from .lifecycle import ServerLifecycle

            server = ServerLifecycle(
                definition,
                self.runtime,
                transport,
                transport_error=why,
                rank=self.rank_of(definition),
                store=self._result_store(),
                clock=lambda: self.clock(),
            )
            self._servers[name] = server
            self.runtime.spawn(server.run, name=f"mcp:{name}")
            started.append(server)
        async with anyio.create_task_group() as tg:
            for server in started:
                tg.start_soon(server.wait_settled)
        unusable = (ServerState.FAILED, ServerState.NEEDS_AUTHORIZATION)
        failed = [s for s in started if s.definition.config.required and s.state in unusable]
        if failed:
            raise McpStartupError(
                "; ".join(f"required MCP server {s.name} failed to start: {s.detail}" for s in failed)
            )

    async def _add_skill_source(self) -> None:
        """The skills the servers offer (the skills extension: :mod:`kairox_mcp.skills`) are a
        skill source added when the first server starts, so that a workspace with no server
        never imports it; it lists each server as it becomes ready."""
        if self._skill_source:
            return
        self._skill_source = True
        from .skills import McpSkillSource

        await self.runtime.skills.add_source(McpSkillSource(self.runtime), self.runtime)

    def _result_store(self) -> ResultStore:
        if self._store is None:
            from .caching import ResultStore

            self._store = ResultStore()
        return self._store

    async def stop(self) -> None:
        """Stop every server in parallel (graceful, then cut); never raises."""
        self._started = False
        servers = list(self._servers.values())
        async with anyio.create_task_group() as tg:
            for server in servers:
                tg.start_soon(self._stop_one, server)

    async def _stop_one(self, server: ServerLifecycle) -> None:
        try:
            await server.stop()
        except Exception:
            logger.exception("stopping MCP server %s failed", server.name)

    async def stop_server(self, name: str) -> None:
        await self._stop_one(self.server(name))

    async def restart(self, name: str) -> ServerLifecycle:
        """Stop the server (if running) and start it again; returns once ready or failed."""
        current = self._servers.get(name)
        if current is not None:
            await self._stop_one(current)
            del self._servers[name]
        await self.start_servers([name])
        return self._servers[name]

    async def _roots_changed(self) -> None:
        """Tell every ready server its roots changed (``notifications/roots/list_changed``)."""

        async def one(server: ServerLifecycle) -> None:
            client = server.client
            if client is None:
                return
            try:
                await client.roots_changed()
            except Exception as exc:
                logger.info("MCP server %s: roots/list_changed not sent: %s", server.name, exc)

        async with anyio.create_task_group() as tg:
            for server in self.ready_servers():
                tg.start_soon(one, server)

    def status(self) -> Sequence[ServerStatus]:
        out: list[ServerStatus] = []
        for name, definition in self.definitions.items():
            server = self._servers.get(name)
            if server is not None:
                out.append(server.status())
                continue
            detail = "disabled" if not definition.config.enabled else "not started"
            out.append(ServerStatus(name, "mcp", ServerState.STOPPED, detail, 0, definition.source))
        for u in self.unavailable.values():
            out.append(ServerStatus(u.name, "mcp", u.state, u.reason, 0, u.source))
        return out

    # -- lazy activation ----------------------------------------------------------------------
    def _owners(self, tool: str) -> list[str]:
        """Servers whose tools would include ``tool`` (canonical id or exported name)."""
        return [n for n, d in self.definitions.items() if _prefixed(tool, d.config.tool_prefix or n)]

    async def start_for(self, name: str, arguments: Mapping[str, Any]) -> None:
        """Start only the servers that would provide the tool ``name`` (``kairox tools call``)."""
        owners = [n for n in self._owners(name) if self.definitions[n].config.enabled]
        if owners:
            try:
                await self.start_servers(owners)
            except McpStartupError as exc:  # a required one failed: the call says why (why_missing)
                logger.info("%s", exc)

    def why_missing(self, name: str) -> str | None:
        """Why the tool ``name`` of a known server is not registered."""
        for server_name in self._owners(name):
            definition = self.definitions[server_name]
            server = self._servers.get(server_name)
            if not definition.config.enabled:
                return f"MCP server {server_name} is disabled ({definition.source or 'code'})"
            if server is None:
                return f"MCP server {server_name} is not started"
            if server.state is ServerState.FAILED:
                tail = server.stderr_tail(5)
                stderr = f"; its stderr ends: {' | '.join(tail)}" if tail else ""
                return f"MCP server {server_name} failed: {server.detail}{stderr}"
            if server.state is ServerState.NEEDS_AUTHORIZATION:
                return server.detail  # says the command to run: kairox mcp login NAME
            if server.state is not ServerState.READY:
                return f"MCP server {server_name} is {server.state.value}: {server.detail}"
            prefix = definition.config.tool_prefix or server_name
            for tool, why in server.withheld_tools.items():
                if name in (f"{prefix}.{tool}", sanitize_name(f"{prefix}.{tool}")):
                    return f"MCP server {server_name}'s tool {tool} is not offered: {why}"
            return f"MCP server {server_name} has no tool {name!r} (it has {len(server.tool_specs)} tools)"
        for u in self.unavailable.values():
            if _prefixed(name, u.prefix or u.name):
                return f"MCP server {u.name} ({u.source}) is {u.reason}"
        return None

    # -- servers -------------------------------------------------------------------------------
    def server(self, name: str) -> ServerLifecycle:
        """The started server ``name`` (raises :class:`KairoxError` when unknown or not started)."""
        server = self._servers.get(name)
        if server is None:
            if name in self.definitions:
                raise KairoxError(f"MCP server {name} is not started")
            held = self.unavailable.get(name)
            if held is not None:
                raise KairoxError(f"MCP server {name} ({held.source}) is {held.state.value}: {held.reason}")
            raise KairoxError(f"no MCP server named {name!r} (configured: {', '.join(self.definitions) or 'none'})")
        return server

    @property
    def servers(self) -> dict[str, ServerLifecycle]:
        """Started servers by name."""
        return dict(self._servers)

    def ready_servers(self) -> list[ServerLifecycle]:
        return [s for s in self._servers.values() if s.state is ServerState.READY]

    async def refresh_tools(self) -> int:
        """Re-list, concurrently, the tools of every ready server whose listing is older than the
        server let kairox keep it (2026-07-28 ``ttlMs``; ``0`` or none: stale at once), and wait
        for them: call it where the current tools are needed (the gateway does, for each
        ``tools/list``). A handshake-era server's tools are kept until it says ``list_changed``.
        Returns how many servers were re-listed."""
        refreshed: list[str] = []

        async def one(server: ServerLifecycle) -> None:
            if await server.refresh_tools():
                refreshed.append(server.name)

        async with anyio.create_task_group() as tg:
            for server in self.ready_servers():
                if server.tools_stale:
                    tg.start_soon(one, server)
        return len(refreshed)

    def withheld_tools(self) -> list[tuple[str, str]]:
        """Tools of ready servers that are not offered to the model: (canonical id, why)."""
        out: list[tuple[str, str]] = []
        for server in self.ready_servers():
            prefix = server.config.tool_prefix or server.name
            out.extend((f"{prefix}.{tool}", why) for tool, why in server.withheld_tools.items())
        return sorted(out)

    def logs(self, name: str, lines: int = 50) -> list[str]:
        """The server's stderr tail (and MCP log messages)."""
        return self.server(name).stderr_tail(lines)

    # -- resources and prompts ---------------------------------------------------------------
    async def _each(self, server: str | None, feature: str, fn: Callable[[McpClient], Awaitable[list[T]]]) -> list[T]:
        if server is not None:
            return list(await self.server(server).request(lambda c: _with_timeout(fn(c))))
        results: dict[str, list[T]] = {}

        async def one(s: ServerLifecycle) -> None:
            try:
                results[s.name] = await s.request(lambda c: _with_timeout(fn(c)))
            except ToolError as exc:
                logger.warning("MCP server %s: listing %s failed: %s", s.name, feature, exc)

        async with anyio.create_task_group() as tg:
            for s in self.ready_servers():
                if s.client is not None and s.client.supports(feature):
                    tg.start_soon(one, s)
        return [item for name in sorted(results) for item in results[name]]

    async def list_resources(self, server: str | None = None, *, cached: bool = True) -> list[McpResource]:
        """Resources of one server, or of every ready server that has resources.

        ``cached`` (here and in :meth:`list_resource_templates`, :meth:`list_prompts`,
        :meth:`read_resource`): a result a 2026-07-28 server let kairox keep (``ttlMs``) is
        served while fresh; ``False``: asked of the server and not kept, for results that go
        to someone else (the gateway's clients)."""

        from .resources import resource_from_sdk

        async def fn(c: McpClient) -> list[McpResource]:
            return [resource_from_sdk(c.server, r) for r in await c.list_resources(cached=cached)]

        return await self._each(server, "resources", fn)

    async def list_resource_templates(
        self, server: str | None = None, *, cached: bool = True
    ) -> list[McpResourceTemplate]:
        from .resources import template_from_sdk

        async def fn(c: McpClient) -> list[McpResourceTemplate]:
            return [template_from_sdk(c.server, t) for t in await c.list_resource_templates(cached=cached)]

        return await self._each(server, "resources", fn)

    async def read_resource(self, server: str, uri: str, *, cached: bool = True) -> list[ResourceContent]:
        """``resources/read``: the contents (text or base64 blob) of one resource."""
        from .resources import resource_contents_from_sdk

        async def fn(c: McpClient) -> list[ResourceContent]:
            return resource_contents_from_sdk(await c.read_resource(uri, timeout=REQUEST_TIMEOUT, cached=cached))

        result: list[ResourceContent] = await self.server(server).request(fn)
        return result

    async def list_prompts(self, server: str | None = None, *, cached: bool = True) -> list[McpPrompt]:
        from .resources import prompt_from_sdk

        async def fn(c: McpClient) -> list[McpPrompt]:
            return [prompt_from_sdk(c.server, p) for p in await c.list_prompts(cached=cached)]

        return await self._each(server, "prompts", fn)

    async def subscribe(self, server: str, uri: str) -> None:
        """``resources/subscribe``: from now on a change of ``uri`` is an
        :class:`~kairox_mcp.McpResourceUpdated` event. Raises :class:`~kairox.ToolError` when
        the server cannot (it does not declare ``resources.subscribe``, or refuses)."""
        lifecycle = self.server(server)

        async def fn(c: McpClient) -> None:
            caps = c.capabilities
            if caps is None or caps.resources is None or not caps.resources.subscribe:
                raise ToolError(f"MCP server {server} does not support resource subscriptions")
            await _with_timeout(c.subscribe(uri))

        await lifecycle.request(fn)

    async def unsubscribe(self, server: str, uri: str) -> None:
        """``resources/unsubscribe``."""
        await self.server(server).request(lambda c: _with_timeout(c.unsubscribe(uri)))

    async def set_log_level(self, server: str, level: str) -> None:
        """``logging/setLevel`` now (``log_level`` in the config sends it at every start)."""
        await self.server(server).request(lambda c: _with_timeout(c.set_log_level(level)))

    async def complete(
        self,
        server: str,
        *,
        argument: str,
        value: str,
        prompt: str | None = None,
        resource_template: str | None = None,
        context: Mapping[str, str] | None = None,
    ) -> list[str]:
        """``completion/complete``: values the server suggests for ``argument`` (typed so far:
        ``value``) of the prompt ``prompt`` or the resource template ``resource_template``;
        ``context`` holds the arguments already chosen."""
        if (prompt is None) == (resource_template is None):
            raise KairoxError("complete: give exactly one of prompt= or resource_template=")
        ref = (
            {"type": "ref/prompt", "name": prompt}
            if prompt is not None
            else {"type": "ref/resource", "uri": str(resource_template)}
        )

        async def fn(c: McpClient) -> list[str]:
            completion = await _with_timeout(c.complete(ref, argument, value, dict(context) if context else None))
            return list(completion.values)

        values: list[str] = await self.server(server).request(fn)
        return values

    def instructions(self) -> list[tuple[str, str]]:
        """Each ready server's ``instructions`` (from ``initialize``), labelled by server:
        ``turn_context`` shows them, bounded, to the model."""
        out: list[tuple[str, str]] = []
        for server in sorted(self.ready_servers(), key=lambda s: s.name):
            text = server.client.instructions if server.client is not None else None
            if text and text.strip():
                out.append((f"MCP server {server.name}", text))
        return out

    async def get_prompt(self, server: str, name: str, arguments: Mapping[str, str] | None = None) -> McpPromptResult:
        """``prompts/get``: the prompt's messages with ``arguments`` filled in."""
        from .resources import prompt_result_from_sdk

        async def fn(c: McpClient) -> McpPromptResult:
            result = await c.get_prompt(name, dict(arguments or {}), timeout=REQUEST_TIMEOUT)
            return prompt_result_from_sdk(c.server, name, result)

        result: McpPromptResult = await self.server(server).request(fn)
        return result


def _prefixed(tool: str, prefix: str) -> bool:
    """Whether ``tool`` (canonical id or exported name) is one of a ``prefix``'s tools."""
    return tool.startswith(prefix + ".") or tool.startswith(sanitize_name(prefix) + "_")


async def _with_timeout(awaitable: Awaitable[T]) -> T:
    try:
        with anyio.fail_after(REQUEST_TIMEOUT):
            return await awaitable
    except TimeoutError:
        raise ToolError(f"the request timed out after {REQUEST_TIMEOUT:g} s") from None


def _home_of(env: Mapping[str, str]) -> Any:
    from pathlib import Path

    home = env.get("HOME")
    return Path(home) if home else None
