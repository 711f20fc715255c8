"""The ``plugins`` tool provider: discovers plugin directories and loads each in isolation.

Two stages. ``discover`` finds every plugin (see :mod:`.discovery`) and decides
what may load (:mod:`.inventory`: settings, compatibility, workspace trust); the
bundles that may load put their skills in the skill registry and hand their MCP
and LSP servers to the managers that own them (not started). An untrusted
workspace bundle loads nothing: its servers are listed as untrusted. ``start``
activates each loadable plugin on its own: hook scripts, code (``activate`` of its
format), tools. A plugin that fails is rolled back and reported; the others are
not affected.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from kairox import ServerState, ServerStatus
from kairox.errors import ConfigError
from kairox.ext import package_key

from .location import nothing_to_discover

if TYPE_CHECKING:
    from kairox import Runtime

    from .activation import Activation
    from .discovery import DiscoveryContext
    from .inventory import BundleRecord
    from .loadstate import LoadState
    from .model import BundleManifestView, Contribution
    from .places import PluginPlaces
    from .routing import Routed
    from .userconfig import Resolution

# Discovery (the [plugins] config, the settings) is imported once there is somewhere to look
# (nothing_to_discover), and what loads a plugin (its inventory, events, routing, hook scripts,
# the manifest model) once there is a plugin: a workspace without any opens without those modules.

__all__ = ["BundleLoader", "loader_of", "survey"]

logger = logging.getLogger(__name__)

PROVIDER_NAME = "plugins"


def survey(runtime: Runtime, *, check: bool = True) -> list[BundleRecord]:
    """Discover and evaluate every plugin without loading anything (for ``kairox plugin list``).

    The runtime's own discovery is used when it ran (so a bundle whose inventory
    failed to route says ``failed``); a bundle that would load but failed its last
    load, unchanged since, says ``failed`` with that reason (:class:`LoadState`)."""
    from .discovery import DiscoveryContext, discover
    from .inventory import evaluate
    from .loadstate import LoadState

    loader = loader_of(runtime)
    if loader is not None and loader._discovered and loader.ctx is not None:
        ctx, records = loader.ctx, list(loader.records)
    else:
        ctx = DiscoveryContext.from_runtime(runtime)
        records = [evaluate(c, ctx, check=check) for c in discover(ctx)]
        from .dependencies import resolve_dependencies

        resolve_dependencies(records)
    state = LoadState(ctx.home, ctx.workspace)
    for i, rec in enumerate(records):
        if rec.state == "available":
            reason = state.last_failure(rec.candidate.root)
            if reason is not None:  # a copy: the runtime's own record stays as it is
                records[i] = attrs.evolve(rec, state="failed", reason=reason)
    return records


def _packages_in_disabled(runtime: Runtime, ctx: DiscoveryContext, bundles: set[str]) -> list[ConfigError]:
    """``[plugins] disabled`` names manifest bundles; a Python plugin package named there
    (``"mcp"``, ``"kairox-mcp"``) would be ignored silently, so it is an error that says
    what does keep a package from loading."""
    packages: set[str] = set()
    for info in runtime.host.plugins(include_builtin=True):
        packages.add(package_key(info.name))
        if info.distribution:
            packages.add(package_key(info.distribution))
    errors = []
    for values in (ctx.user_values, ctx.workspace_values):
        listed = values.get("disabled")
        if not isinstance(listed, list):
            continue
        for i, name in enumerate(listed):
            if isinstance(name, str) and ":" not in name and name not in bundles and package_key(name) in packages:
                errors.append(
                    ConfigError(
                        f"{name!r} is a Python plugin package, not a bundle: [plugins] disabled turns off manifest "
                        f"bundles. To keep the package from loading, set KAIROX_DISABLE_PLUGINS={name}",
                        file=ctx.config_sources.get("disabled") or None,
                        path=f"plugins.disabled[{i}]",
                    )
                )
    return errors


def loader_of(runtime: Runtime) -> BundleLoader | None:
    provider = runtime.providers.get(PROVIDER_NAME)
    return provider if isinstance(provider, BundleLoader) else None


class BundleLoader:
    """The ``plugins`` provider."""

    name = PROVIDER_NAME

    def __init__(self, runtime: Runtime | None = None) -> None:
        self.runtime = runtime
        self.records: list[BundleRecord] = []
        self.ctx: DiscoveryContext | None = None
        self._discovered = False

    # -- ToolProvider ------------------------------------------------------------------
    async def discover(self, runtime: Runtime) -> bool:
        """Find and evaluate every plugin; route the inventory (skills, server definitions)
        of those that may load. Runs nothing a plugin declares. ``False`` (idle) when there
        is no plugin anywhere to look at."""
        self.runtime = runtime
        if nothing_to_discover(runtime):  # no [plugins], no settings file, no plugin directory
            self.ctx, self.records, self._discovered = None, [], True
            return False
        from .discovery import DiscoveryContext, discover

        ctx = DiscoveryContext.from_runtime(runtime)
        self.ctx = ctx
        self._discovered = True
        # the global switch is the user's: a workspace's `enabled = false` only stops its own bundles
        off = ctx.user_values.get("enabled") is False if ctx.runtime_config is not None else not ctx.config.enabled
        if off:
            return True
        candidates = await anyio.to_thread.run_sync(discover, ctx)
        if candidates:
            from .inventory import evaluate

            self.records = await anyio.to_thread.run_sync(lambda: [evaluate(c, ctx) for c in candidates])
            from .dependencies import resolve_dependencies

            resolve_dependencies(self.records)
        else:
            self.records = []
        runtime.config.errors.extend(_packages_in_disabled(runtime, ctx, {r.name for r in self.records}))
        runtime.config.errors.extend(ctx.settings.errors)
        for rec in self.records:
            for p in rec.manifest.problems if rec.manifest is not None else ():
                if p.kind == "manifest-conflict":
                    from .events import BundleManifestsDisagree

                    runtime.events.publish(
                        BundleManifestsDisagree(
                            plugin=rec.name,
                            root=str(rec.candidate.root),
                            file=p.file or "",
                            field=p.path,
                            message=p.message,
                        )
                    )
        for rec in self.records:
            if rec.state == "available":
                await self._guarded(rec, self._route_inventory)
            elif rec.state == "untrusted":
                self._hold_servers(rec)
        return True

    async def start(self, runtime: Runtime) -> None:
        if not self._discovered:
            await self.discover(runtime)
        async with anyio.create_task_group() as tg:
            for rec in self.records:
                if rec.state == "available":
                    tg.start_soon(self._guarded, rec, self._activate)
                elif rec.state not in ("loaded", "failed"):
                    from .events import BundleNotLoaded

                    runtime.events.publish(
                        BundleNotLoaded(
                            plugin=rec.name, root=str(rec.candidate.root), state=rec.state, reason=rec.reason
                        )
                    )

    async def stop(self) -> None:
        async with anyio.create_task_group() as tg:
            for rec in self.records:
                if rec.undo:
                    tg.start_soon(self._unload, rec)

    def status(self) -> Sequence[ServerStatus]:
        out: list[ServerStatus] = []
        for rec in self.records:
            state = {
                "loaded": ServerState.READY,
                "failed": ServerState.FAILED,
                "untrusted": ServerState.UNTRUSTED,
            }.get(rec.state, ServerState.STOPPED)
            if rec.state in ("loaded", "available"):
                n = sum(1 for st in rec.items.values() if st.loaded)
                bad = [k for k, st in rec.items.items() if st.enabled and not st.loaded and st.detail]
                fmt = rec.candidate.manifest.format if rec.candidate.manifest else "?"
                detail = f"{fmt}, {n} contributions" + (f", {len(bad)} failed: {'; '.join(bad)}" if bad else "")
                if rec.state == "available":
                    detail += " (not started)"
            else:
                detail = f"{rec.state}: {rec.reason}" if rec.reason else rec.state
            tools = len(self.runtime.tools.by_provider(f"plugin:{rec.name}")) if self.runtime else 0
            out.append(ServerStatus(rec.name, "plugin", state, detail, tools, str(rec.candidate.root)))
            from .activation import Activation

            activation = rec.activation
            if isinstance(activation, Activation) and activation.status is not None:
                try:
                    out.extend(activation.status())
                except Exception:
                    logger.exception("status of plugin %s failed", rec.name)
        return out

    def _load_state(self) -> LoadState:
        from .loadstate import LoadState

        assert self.ctx is not None
        return LoadState(self.ctx.home, self.ctx.workspace)

    # -- queries --------------------------------------------------------------------------
    def views(self) -> list[BundleManifestView]:
        return [r.view() for r in self.records]

    def record(self, name: str) -> BundleRecord | None:
        for rec in self.records:
            if rec.name == name and rec.state != "shadowed":
                return rec
        return None

    async def unload(self, name: str) -> bool:
        """Take a loaded plugin out of the runtime (tools, hooks, servers, skills)."""
        rec = self.record(name)
        if rec is None or rec.state != "loaded":
            return False
        await self._unload(rec)
        rec.state, rec.reason = "disabled", "unloaded"
        return True

    # -- loading -----------------------------------------------------------------------------
    async def _guarded(self, rec: BundleRecord, stage: Any) -> None:
        """Run one stage of a plugin; a failure rolls the plugin back and costs it alone."""
        from .events import BundleLoaded, BundleNotLoaded

        assert self.runtime is not None
        runtime = self.runtime
        try:
            await stage(rec)
        except Exception as exc:
            logger.debug("plugin %s failed to load", rec.name, exc_info=True)
            await self._unload(rec)
            rec.state, rec.reason = "failed", f"{type(exc).__name__}: {exc}"
            for st in rec.items.values():
                st.loaded = False
            if stage == self._activate:  # remembered for `plugin list`, which loads nothing
                await anyio.to_thread.run_sync(self._load_state().failed, rec.candidate.root, rec.reason)
            runtime.events.publish(
                BundleNotLoaded(plugin=rec.name, root=str(rec.candidate.root), state="failed", reason=rec.reason)
            )
            return
        if stage == self._activate:
            await anyio.to_thread.run_sync(self._load_state().loaded, rec.candidate.root)
            rec.state = "loaded"
            m = rec.manifest
            runtime.events.publish(
                BundleLoaded(
                    plugin=rec.name,
                    format=m.format if m else "?",
                    root=str(rec.candidate.root),
                    scope=rec.candidate.scope,
                    contributions=tuple(k for k, st in rec.items.items() if st.loaded),
                )
            )

    def _hold_servers(self, rec: BundleRecord) -> None:
        """An untrusted bundle's MCP servers are listed (as untrusted), never defined or started."""
        from .routing import hold_mcp_servers

        m = rec.manifest
        if m is None or self.runtime is None:
            return
        hold_mcp_servers(self.runtime, m.name, [c for c in m.contributions if c.kind == "mcp_server"], rec.reason)

    def _enabled(self, rec: BundleRecord, key: str) -> bool:
        st = rec.items.get(key)
        if st is not None:
            return st.enabled
        from .inventory import contribution_enabled
        from .model import Contribution

        assert self.ctx is not None
        kind, _, name = key.partition("/")
        return contribution_enabled(self.ctx, rec.name, Contribution(kind, name, Path()))

    def _apply(self, rec: BundleRecord, routed: Routed) -> None:
        from .events import BundleContributionFailed
        from .inventory import ItemState

        assert self.runtime is not None
        rec.undo.extend(routed.undo)
        for key in routed.loaded:
            rec.items.setdefault(key, ItemState()).loaded = True
        for key, reason in routed.failed.items():
            st = rec.items.setdefault(key, ItemState())
            st.loaded, st.detail = False, reason
            self.runtime.events.publish(BundleContributionFailed(plugin=rec.name, contribution=key, error=reason))

    def _places(self, rec: BundleRecord) -> PluginPlaces:
        """The plugin's ``bin/`` and data folder (:mod:`.places`)."""
        from .places import PluginPlaces, data_folder

        assert self.ctx is not None and rec.manifest is not None
        ctx = self.ctx
        data = data_folder(ctx.home, rec.name, scope=rec.candidate.scope, workspace=ctx.workspace)
        return PluginPlaces(bin_dir=rec.manifest.bin_dir, data_dir=data)

    async def _route_inventory(self, rec: BundleRecord) -> None:
        """Discover stage: skills to the registry, server definitions to their managers."""
        from .inventory import ItemState
        from .routing import route_definitions, route_lsp_servers, route_mcp_servers, route_skills

        runtime, m = self.runtime, rec.manifest
        assert runtime is not None and m is not None
        enabled = [c for c in m.contributions if rec.items.get(c.key, ItemState()).enabled]
        skills = [c for c in enabled if c.kind in ("skill", "command")]
        refused = [p for p in m.problems if p.kind == "refused" and p.component in ("skill", "command")]
        self._apply(rec, await route_skills(runtime, m.name, skills, m.root, refused))
        places = self._places(rec)
        res = await self._user_config(rec)
        servers = [c for c in enabled if c.kind == "mcp_server"]
        if "pluginData" in m.metadata:  # Agent Plugins: the data folder its servers are told of
            from .plugindata import ready_servers
            from .routing import Routed

            servers, no_data = await anyio.to_thread.run_sync(ready_servers, m, servers)
            self._apply(rec, Routed(failed=no_data))
        mcp = self._configured(rec, servers, res)
        self._apply(rec, await route_mcp_servers(runtime, m.name, mcp, m.permissions, places))
        lsp = self._configured(rec, [c for c in enabled if c.kind == "lsp_server"], res)
        self._apply(rec, await route_lsp_servers(runtime, m.name, lsp, places))
        for kind in ("agent", "output_style"):
            self._apply(
                rec, await route_definitions(runtime, m.name, kind, [c for c in enabled if c.kind == kind], m.root)
            )

    async def _activate(self, rec: BundleRecord) -> None:
        """Start stage: hook scripts, the plugin's code and the tools it registers."""
        from .hookscripts import ScriptHook, context_deliverer
        from .inventory import ItemState
        from .model import Contribution
        from .routing import route_hooks, route_tools

        runtime, ctx, m = self.runtime, self.ctx, rec.manifest
        assert runtime is not None and ctx is not None and m is not None
        enabled = [c for c in m.contributions if rec.items.get(c.key, ItemState()).enabled]
        hooks: list[tuple[str, Any, str]] = []
        # a workspace's [plugins] hook_timeout never shortens the hooks of the user's own bundles
        from .config import BundlesConfig

        default = BundlesConfig().hook_timeout
        timeout = ctx.values_for(rec.candidate.scope).get("hook_timeout", default)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            timeout = default
        places = self._places(rec)
        res = await self._user_config(rec)
        options = res.environment() if res is not None else {}
        for c in self._configured(rec, [c for c in enabled if c.kind == "hook"], res):
            hook = ScriptHook(
                m.name,
                c.name,
                c.config,
                root=m.root,
                runtime=runtime,
                default_timeout=float(timeout),
                places=places,
                mcp_servers=[s.name for s in enabled if s.kind == "mcp_server"],
                extra_env=options,
            )
            hooks.append((c.config.event, hook, c.key))
        if m.code is not None:
            activation = await self._run_code(rec)
            rec.activation = activation
            if activation.close is not None:
                rec.undo.append(activation.close)
            for key in activation.skipped:
                rec.items.setdefault(key, ItemState(enabled=False, detail="disabled in the settings"))
            keys = {t.spec.id: activation.tool_keys.get(t.spec.id, f"tool/{t.spec.id}") for t in activation.tools}
            for tool in activation.tools:
                key = keys[tool.spec.id]
                if key not in rec.items:
                    name = key.partition("/")[2]
                    rec.extra.append(Contribution("tool", name, m.code.main, {"description": tool.spec.description}))
                    rec.items[key] = ItemState()
            routed = route_tools(runtime, m.name, activation.tools, m.permissions, scope=rec.candidate.scope)
            routed.loaded = [keys[t.spec.id] for t in activation.tools]
            self._apply(rec, routed)
            for _event, _fn, key in activation.hooks:
                if key not in rec.items:
                    rec.extra.append(Contribution("hook", key.partition("/")[2], m.code.main, None))
                    rec.items[key] = ItemState()
            hooks.extend(activation.hooks)
        if any(
            c.kind == "hook" and (c.config.event in ("session_start", "post_tool_call") or c.config.run_async)
            for c in enabled
        ):
            # what these hooks answer reaches the turns of their session (before the bundle's own pre_turn hooks)
            remove = runtime.hooks.add("pre_turn", context_deliverer(m.name), source=f"plugin:{m.name}")

            async def undo_deliverer() -> None:
                remove()

            rec.undo.append(undo_deliverer)
        self._apply(rec, route_hooks(runtime, m.name, hooks))

    async def _user_config(self, rec: BundleRecord) -> Resolution | None:
        """The plugin's ``userConfig`` values (read from the settings and the keychain off the
        event loop), or ``None`` when it declares none."""
        m = rec.manifest
        if m is None or not m.user_config:
            return None
        from .userconfig import resolve

        assert self.ctx is not None and self.runtime is not None
        settings, env = self.ctx.settings, self.runtime.env
        own = rec.candidate.scope == "user"  # only the user's own plugins read the environment
        return await anyio.to_thread.run_sync(lambda: resolve(m, settings=settings, env=env, environment=own))

    def _configured(self, rec: BundleRecord, items: list[Contribution], res: Resolution | None) -> list[Contribution]:
        """``items`` with their ``${user_config.KEY}`` resolved; one that needs a value it has not
        got does not start, failed with the reason (naming the plugin and the key)."""
        from .routing import Routed
        from .userconfig import configure

        ready, failed = configure(items, res)
        if failed:
            self._apply(rec, Routed(failed=failed))
        return ready

    async def _run_code(self, rec: BundleRecord) -> Activation:
        from .activation import Activation, ActivationContext

        runtime, m = self.runtime, rec.manifest
        assert runtime is not None and m is not None and m.code is not None
        # the format that read the code (in a directory read by several formats, not always the first)
        fmt = runtime.manifest_formats.get(m.code.runtime) or runtime.manifest_formats.get(m.format)
        activate = getattr(fmt, "activate", None)
        if activate is None:
            raise RuntimeError(f"manifest format {m.format} cannot run plugin code")
        result = await activate(m, ActivationContext(runtime, m, lambda key: self._enabled(rec, key)))
        if not isinstance(result, Activation):
            raise TypeError(f"format {m.format}: activate() returned {type(result).__name__}, not an Activation")
        return result

    async def _unload(self, rec: BundleRecord) -> None:
        undo, rec.undo = list(reversed(rec.undo)), []
        for fn in undo:
            try:
                with anyio.CancelScope(shield=True):
                    result = fn()
                    if inspect.isawaitable(result):
                        await result
            except Exception:
                logger.exception("unloading plugin %s: a clean-up step failed", rec.name)
        for st in rec.items.values():
            st.loaded = False
