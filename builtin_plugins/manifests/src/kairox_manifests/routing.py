"""Routing contributions to the registries and managers that own them.

One function per kind; each returns a :class:`Routed` saying which
contributions arrived (``loaded``), which did not and why (``failed``), and how
to take them back (``undo``):

- skill (and command) -> the runtime's skill registry, as ``<plugin>:<name>``;
- tool -> ``runtime.tools`` (provider ``plugin:<name>``), with the plugin's permissions;
- hook -> ``runtime.hooks`` (source ``plugin:<name>``);
- mcp_server -> kairox-mcp's manager (server ``<plugin>:<server>``, tools ``<plugin>.<server>.<tool>``);
- lsp_server -> kairox-lsp's provider (server ``<plugin>:<server>``);
- agent, output_style -> kairox-agents' registries (``agents_of``, ``output_styles_of``), as ``<plugin>:<name>``.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from kairox import Allow, Ask, Block, ServerState, Tool, ToolView
from kairox.ext import Permissions, ToolRank

from .errors import Problem
from .model import Contribution

if TYPE_CHECKING:
    from kairox import Runtime
    from kairox_agents import DefinitionRegistry

    from .places import PluginPlaces

__all__ = [
    "Routed",
    "hold_mcp_servers",
    "route_definitions",
    "provider_name",
    "route_hooks",
    "route_lsp_servers",
    "route_mcp_servers",
    "route_skills",
    "route_tools",
    "with_permissions",
]

logger = logging.getLogger(__name__)

Undo = Callable[[], Awaitable[None]]


def provider_name(plugin: str) -> str:
    return f"plugin:{plugin}"


@attrs.define
class Routed:
    loaded: list[str] = attrs.field(factory=list)
    failed: dict[str, str] = attrs.field(factory=dict)
    undo: list[Undo] = attrs.field(factory=list)

    def fail_all(self, items: Sequence[Contribution], reason: str) -> Routed:
        for c in items:
            self.failed[c.key] = reason
        return self


# -- tools ----------------------------------------------------------------------------


def _narrow(declared: Permissions | None, plugin: Permissions | None) -> Permissions | None:
    """Both apply: the stricter approval and sandbox; the plugin's tool list wins when set."""
    if plugin is None:
        return declared
    if declared is None:
        return plugin
    from kairox.ext import APPROVAL_STRICTNESS, SANDBOX_STRICTNESS

    def stricter(a: Any, b: Any, order: list[Any]) -> Any:
        if a is None or b is None:
            return a if b is None else b
        return min(a, b, key=order.index)

    return Permissions(
        approval=stricter(declared.approval, plugin.approval, APPROVAL_STRICTNESS),
        sandbox=stricter(declared.sandbox, plugin.sandbox, SANDBOX_STRICTNESS),
        tools=plugin.tools if plugin.tools is not None else declared.tools,
    )


def with_permissions(tool: Tool, permissions: Permissions | None) -> Tool:
    """``tool`` with ``ToolSpec.permissions`` narrowed by the plugin's declared permissions."""
    if permissions is None:
        return tool
    spec = tool.spec
    return ToolView(tool, attrs.evolve(spec, permissions=_narrow(spec.permissions, permissions)))


def route_tools(
    runtime: Runtime, plugin: str, tools: Sequence[Tool], permissions: Permissions | None, *, scope: str = "user"
) -> Routed:
    """Register the plugin's tools in one atomic change. Raises ``RegistrationError`` on a taken id.

    A bundle's tools rank below the user's own (``ToolRank.BUNDLE``), a workspace
    bundle's below those (``ToolRank.WORKSPACE``), for a contested exported name."""
    provider = provider_name(plugin)
    wrapped = [with_permissions(t, permissions) for t in tools]
    rank = ToolRank.WORKSPACE if scope == "workspace" else ToolRank.BUNDLE
    runtime.tools.replace_provider(provider, wrapped, rank=rank)

    async def undo() -> None:
        runtime.tools.remove_provider(provider)

    return Routed(loaded=[f"tool/{t.spec.id}" for t in tools], undo=[undo])


# -- hooks -----------------------------------------------------------------------------


def route_hooks(runtime: Runtime, plugin: str, hooks: Sequence[tuple[str, Callable[..., Any], str]]) -> Routed:
    """Add ``(event, fn, key)`` hooks to the runtime's hook registry."""
    source = provider_name(plugin)
    removers = []
    out = Routed()
    for event, fn, key in hooks:
        try:
            # a script hook that fails does what its onError says; the runtime's own deadline for
            # a guard is one more failure of the same kind (a hung "ignore" script blocks nothing)
            advisory = bool(getattr(fn, "advisory", False))
            removers.append(runtime.hooks.add(event, fn, source=source, advisory=advisory))
        except ValueError as exc:
            out.failed[key] = str(exc)
            continue
        out.loaded.append(key)

    async def undo() -> None:
        for remove in removers:
            remove()

    out.undo.append(undo)
    return out


# -- MCP servers ---------------------------------------------------------------------------


def permission_guard(runtime: Runtime, providers: set[str], permissions: Permissions) -> Callable[..., Any]:
    """A ``pre_tool_call`` hook applying a plugin's permissions to tools another provider
    registered for it (its MCP servers' tools): when the policy decides otherwise with the
    plugin's permissions on the spec than it already did, a deny blocks the call and an ask
    is answered :class:`~kairox.Ask`, so the runtime asks the approver after the guards (not
    inside this hook, which a guard's deadline would cut short)."""

    async def guard(call: Any) -> Any:
        spec = call.tool
        if spec.provider not in providers:
            return None
        narrowed = attrs.evolve(spec, permissions=_narrow(spec.permissions, permissions))
        decision = runtime.policy.decide(narrowed, call.arguments)
        if isinstance(decision, Allow) or isinstance(runtime.policy.decide(spec, call.arguments), type(decision)):
            return None  # no narrower than what the runtime already decided and asked about
        if isinstance(decision, Ask):
            return Ask(f"the plugin's permissions: {decision.reason}")
        return Block(f"the plugin's permissions: {decision.reason}")

    return guard


def _provider(runtime: Runtime, distribution: str, kind: str, name: str = "") -> tuple[Any, str]:
    """The provider of ``distribution`` (its module's class ``kind``) that ``runtime`` holds as
    ``name`` (the module's ``PROVIDER_NAME`` when empty), or ``None`` and why there is none."""
    try:
        module = importlib.import_module(distribution.replace("-", "_"))
    except ImportError:
        return None, f"{distribution} is not installed (pip install {distribution})"
    provider = runtime.providers.get(name or module.PROVIDER_NAME)
    if not isinstance(provider, getattr(module, kind)):
        return None, f"{distribution}'s provider is not loaded in this runtime"
    return provider, ""


def _routing_to(
    runtime: Runtime, items: Sequence[Contribution], distribution: str, kind: str, name: str = ""
) -> tuple[Routed, Any]:
    """A :class:`Routed` for ``items`` and the provider they go to (:func:`_provider`), or no
    provider and a final answer: nothing to route, or every item failed with the reason."""
    out = Routed()
    if not items:
        return out, None
    provider, why = _provider(runtime, distribution, kind, name)
    if provider is None:
        out.fail_all(items, why)
    return out, provider


async def route_mcp_servers(
    runtime: Runtime,
    plugin: str,
    items: Sequence[Contribution],
    permissions: Permissions | None = None,
    places: PluginPlaces | None = None,
) -> Routed:
    """Add servers to kairox-mcp's manager (``McpServerManager.add_server``; the undo is
    ``remove_server``). At a runtime's discover stage they are only defined: the manager
    starts them with its own start, or when a call needs one of their tools; a bundle
    routed once the manager runs has its servers started at once.

    An entry that cannot be defined (an unset ``${VAR}``, a bad field) is a failed
    server in the manager, with the reason, never a silent loss. kairox-mcp has no
    per-server permissions, so a plugin's declared permissions reach its MCP tools
    through :func:`permission_guard`. ``places``: the plugin's ``bin/`` goes first on its
    servers' ``PATH`` and ``${CLAUDE_PLUGIN_DATA}`` expands (:class:`~.places.PluginPlaces`)."""
    out, manager = _routing_to(runtime, items, "kairox-mcp", "McpServerManager", "mcp")
    if manager is None:
        return out
    from kairox_mcp import ServerDefinition, UnavailableServer

    names: list[str] = []
    for item in items:
        name = f"{plugin}:{item.name}"
        entry = places.server_entry(item.config, runtime.env) if places is not None else item.config
        defs, errors = _definitions(item, entry, runtime.env, provider_name(plugin))
        if errors or not defs:
            reason = "; ".join(str(e) for e in errors) or "not a server"
            out.failed[item.key] = reason
            prefix = f"{plugin}.{item.name}"
            manager.add_unavailable(
                UnavailableServer(name, str(item.source), ServerState.FAILED, reason, prefix, provider_name(plugin))
            )
            continue
        config = defs[0].config
        if config.tool_prefix is None:
            config = attrs.evolve(config, tool_prefix=f"{plugin}.{item.name}")
        try:
            await manager.add_server(
                ServerDefinition(name, config, source=str(item.source), origin=provider_name(plugin))
            )
        except Exception as exc:
            out.failed[item.key] = f"{type(exc).__name__}: {exc}"
            continue
        names.append(name)
        out.loaded.append(item.key)

    out.undo.append(_removing("MCP server", manager.remove_server, names))
    if names and permissions is not None:
        guard = permission_guard(runtime, {f"mcp:{n}" for n in names}, permissions)
        out.undo.append(_async(runtime.hooks.add("pre_tool_call", guard, source=provider_name(plugin))))
    return out


def _definitions(item: Contribution, entry: Any, env: Any, origin: str) -> tuple[list[Any], list[Any]]:
    """The server of one contribution, read in its schema (see :class:`Contribution`)."""
    from kairox.errors import ConfigError
    from kairox_mcp import ServerDefinition, parse_mcp_json, parse_server_table

    if item.schema == "kairox":
        try:
            config = parse_server_table(entry, file=str(item.source), path=item.name, env=env)
        except ConfigError as exc:
            return [], list(exc.errors)
        return [ServerDefinition(item.name, config, source=str(item.source), origin=origin)], []
    defs, errors = parse_mcp_json({"mcpServers": {item.name: entry}}, file=str(item.source), env=env, origin=origin)
    return list(defs), list(errors)


def hold_mcp_servers(runtime: Runtime, plugin: str, items: Sequence[Contribution], reason: str) -> None:
    """List an untrusted bundle's servers in the MCP manager as untrusted (never defined)."""
    manager, _why = _provider(runtime, "kairox-mcp", "McpServerManager", "mcp")
    if manager is None:
        return
    from kairox_mcp import UnavailableServer

    for item in items:
        manager.add_unavailable(
            UnavailableServer(
                f"{plugin}:{item.name}",
                str(item.source),
                ServerState.UNTRUSTED,
                reason,
                f"{plugin}.{item.name}",
                provider_name(plugin),
            )
        )


def _removing(what: str, remove: Callable[[str], Awaitable[Any]], names: list[str]) -> Undo:
    """The undo of servers handed to a manager: ``remove`` each of ``names``, one failing
    (logged) never keeping the others."""

    async def undo() -> None:
        for name in names:
            try:
                await remove(name)
            except Exception:
                logger.exception("stopping %s %s failed", what, name)

    return undo


def _async(fn: Callable[[], Any]) -> Undo:
    async def run() -> None:
        fn()

    return run


# -- LSP servers ---------------------------------------------------------------------------


async def route_lsp_servers(
    runtime: Runtime, plugin: str, items: Sequence[Contribution], places: PluginPlaces | None = None
) -> Routed:
    """Hand Claude-style ``lspServers`` entries to kairox-lsp (servers ``<plugin>:<name>``),
    with the plugin's ``bin/`` first on their ``PATH`` and its data folder expanded."""
    out, provider = _routing_to(runtime, items, "kairox-lsp", "LspToolProvider")
    if provider is None:
        return out
    from kairox_lsp import add_bundle_servers

    added: list[str] = []
    for item in items:
        entry = places.server_entry(item.config, runtime.env) if places is not None else item.config
        errors = add_bundle_servers(runtime, plugin, {item.name: entry}, root=None, file=str(item.source))
        if errors:
            out.failed[item.key] = "; ".join(str(e) for e in errors)
            continue
        added.append(f"{plugin}:{item.name}")
        out.loaded.append(item.key)

    out.undo.append(_removing("LSP server", provider.remove_server, added))
    return out


# -- skills ----------------------------------------------------------------------------------


class _BundleSkillSource:
    """The enabled skills (and commands) of one plugin, through kairox-skills' directory reader.

    The reader scans directories; a plugin may have disabled some of its skills, so
    what it yields is filtered to the enabled skill files (and to their folders, where
    the reader refuses a skill folder that leads outside the bundle).
    """

    def __init__(
        self, name: str, inners: Sequence[Any], allowed: dict[str, Contribution], refused: Sequence[Any] = ()
    ) -> None:
        self.name = name
        self._inners = inners
        self._allowed = allowed
        self._folders = {str(c.source) for c in allowed.values()}
        self._refused = refused

    def scan(self, runtime: Runtime | None = None) -> Any:
        from kairox.ext import SkillError

        for inner in self._inners:
            for item in inner.scan(runtime):
                where = getattr(item, "path", None) or getattr(item, "file", None)
                if where is not None and (str(where) in self._allowed or str(where) in self._folders):
                    yield item
        for problem in self._refused:  # where the skill would have been, the reason it is not
            yield SkillError(problem.message, file=problem.file)


def _skill_file(c: Contribution) -> Path:
    return c.source / "SKILL.md" if c.source.is_dir() else c.source


async def route_skills(
    runtime: Runtime, plugin: str, items: Sequence[Contribution], root: Path, refused: Sequence[Problem] = ()
) -> Routed:
    """Add the plugin's skills and commands to the skill registry as ``<plugin>:<name>``
    (through kairox-skills' reader, so they parse exactly like every other skill), read
    inside the bundle's folder ``root``; ``refused`` (files that would have been skills but
    lead outside the bundle) are listed among the registry's errors."""
    out = Routed()
    if not items and not refused:
        return out
    try:
        from kairox.ext import SkillDef, SkillScope
        from kairox_skills import CommandSkillSource, DirectorySkillSource
    except ImportError:
        return out.fail_all(items, "kairox-skills is not installed (pip install kairox-skills)")
    registry = runtime.skills
    source_name = provider_name(plugin)
    allowed = {str(_skill_file(c)): c for c in items}
    contained = runtime.contained(root, label=f"bundle {plugin}")
    skills = [c for c in items if c.kind != "command"]
    dirs = list(dict.fromkeys(c.source if c.source.is_dir() else c.source.parent for c in skills))
    inners: list[Any] = [DirectorySkillSource(source_name, SkillScope.PLUGIN, dirs, namespace=plugin, root=contained)]
    # a command is named after its file and takes $ARGUMENTS, as in Claude Code (and `plugin lint`)
    commands = [c.source for c in items if c.kind == "command"]
    if commands:
        inners.append(
            CommandSkillSource(source_name, SkillScope.PLUGIN, commands, origin=None, namespace=plugin, root=contained)
        )
    try:
        await registry.add_source(_BundleSkillSource(source_name, inners, allowed, refused), runtime)
    except Exception as exc:
        return out.fail_all(items, f"{type(exc).__name__}: {exc}")
    found = {str(s.path): s for s in registry.all_found() if isinstance(s, SkillDef) and s.source == source_name}
    problems = {str(getattr(p, "file", "")): p for p in getattr(registry, "errors", [])}
    for path, c in allowed.items():
        if path in found:
            out.loaded.append(c.key)
        else:
            why = problems.get(path) or problems.get(str(c.source))
            out.failed[c.key] = f"the skill registry refused it: {why}" if why else "the skill registry did not load it"

    async def undo() -> None:
        registry.remove_source(source_name)

    out.undo.append(undo)
    return out


# -- agents and output styles ------------------------------------------------------------------


async def route_definitions(
    runtime: Runtime, plugin: str, kind: str, items: Sequence[Contribution], root: Path
) -> Routed:
    """Add the plugin's agents (``kind`` ``agent``) or output styles (``output_style``) to
    kairox-agents' registry as ``<plugin>:<name>``; a file that does not parse fails with the
    file and field."""
    import anyio

    out, provider = _routing_to(runtime, items, "kairox-agents", "AgentsProvider")
    if provider is None:
        return out
    registry: DefinitionRegistry[Any] = provider.agents if kind == "agent" else provider.output_styles
    source = provider_name(plugin)

    def read() -> tuple[list[Any], list[Any]]:
        return registry.read_files(
            runtime.contained(root, label=f"bundle {plugin}"),
            [c.source for c in items],
            scope="plugin",
            source=source,
            namespace=plugin,
        )

    found, problems = await anyio.to_thread.run_sync(read)
    registry.set_source(source, found, problems)
    by_file = {str(c.source): c for c in items}
    for item in found:
        c = by_file.get(str(item.file))
        if c is not None:
            out.loaded.append(c.key)
    for problem in problems:
        c = by_file.get(str(problem.file))
        if c is not None:
            out.failed[c.key] = str(problem)

    async def undo() -> None:
        registry.remove_source(source)

    out.undo.append(undo)
    return out
