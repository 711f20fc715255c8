"""What the dashboard changes, each through the runtime or the settings files the CLI writes:

- skills: ``kairox skills enable/disable`` (``kairox_skills.SettingsFile``); the dashboard's
  session's own skills (``Session.add_skill``);
- plugins: ``kairox plugin enable/disable/trust`` (``kairox_manifests.settings.SettingsStore``,
  ``kairox_manifests.trust.bundle_item``) and path overrides in the same settings file;
- the workspace: ``kairox trust`` (``Runtime.trust_workspace``);
- servers: the MCP manager's ``restart`` / ``stop_server``, kairox-lsp's and kairox-dap's
  ``restart_server`` / ``stop_server``;
- the catalog: ``kairox catalog install/uninstall`` (``Installer``).

An action that cannot be done raises :class:`ActionError` (the page shows the message).
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kairox import PolicyDenied, Runtime, Session, ToolError, ToolNotFound
from kairox.ext import SkillDef, SkillError, SkillScope, TrustStore, redact, user_home
from kairox_catalog.bundles import Scope, installed_bundles
from kairox_catalog.catalog import Catalog, CatalogSnapshot, EntryNotFound
from kairox_catalog.install import Installer, InstallError, config_target
from kairox_catalog.model import CatalogEntry, entry_to_dict
from kairox_catalog.tomledit import TomlEditError, read_document
from kairox_skills import SettingsFile, settings_path

from .forms import InstallRequest, SessionSkillRequest
from .hub import Hub, JobProgress
from .views import all_skills, bundle_rows, config_problem, server_actions, settings_env, skill_view, trust_view

if TYPE_CHECKING:
    from .holder import RuntimeHolder

__all__ = [
    "ActionError",
    "Marketplace",
    "install_problem",
    "add_session_skill",
    "call_tool",
    "override_path",
    "plugin_config",
    "remove_session_skill",
    "render_skill",
    "server_action",
    "set_plugin_config",
    "set_plugin_enabled",
    "set_skill_enabled",
    "trust_bundle",
    "trust_workspace",
]

logger = logging.getLogger(__name__)


class ActionError(Exception):
    """An action the dashboard could not do; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


# -- skills -------------------------------------------------------------------------------
def set_skill_enabled(
    rt: Runtime, name: str, scope: str, enabled: bool, session_id: str | None = None
) -> dict[str, Any]:
    """``kairox skills enable|disable NAME --scope SCOPE``: the same settings file, then the registry."""
    known = {s.name for s in all_skills(rt, session_id)}
    if name not in known:
        raise ActionError(f"no skill named {name!r}", 404)
    path = settings_path(scope, workspace=rt.workspace, home=rt.home or user_home(rt.env), env=rt.env)
    try:
        SettingsFile(path).set_skill(name, enabled)
    except SkillError as exc:
        raise ActionError(f"{exc}; not changed") from None
    rt.skills.set_overrides(scope, {**rt.skills.overrides(scope), name: enabled})
    effective, decided = rt.skills.enabled_state(name)
    skill = rt.skills.get(name, session_id=session_id) or next(s for s in all_skills(rt, session_id) if s.name == name)
    return {
        "file": str(path),
        "skill": skill_view(rt.skills, skill, session_id=session_id),
        "enabled": effective,
        "decided_by": decided.value if isinstance(decided, SkillScope) else None,
    }


def add_session_skill(rt: Runtime, session: Session | None, request: SessionSkillRequest) -> dict[str, Any]:
    """Add a skill to the dashboard's session (``Session.add_skill``): it shadows workspace and
    user skills of its name and is gone when the session ends."""
    if session is None or session.closed:
        raise ActionError("the dashboard's session is not open (the runtime is being reopened); try again", 409)
    skill = session.add_skill(SkillDef.create(request.name, request.description, request.body))
    return {"skill": skill_view(rt.skills, skill, session_id=session.id)}


def remove_session_skill(rt: Runtime, session: Session | None, name: str) -> dict[str, Any]:
    """Remove a skill of the dashboard's session (the one it shadowed, if any, is back)."""
    if session is None or session.closed:
        raise ActionError("the dashboard's session is not open (the runtime is being reopened); try again", 409)
    if name not in {s.name for s in rt.skills.session_skills(session.id)}:
        raise ActionError(f"the dashboard's session has no skill named {name!r}", 404)
    rt.skills.remove_session_skill(session.id, name)
    return {"removed": name}


def render_skill(rt: Runtime, name: str, arguments: dict[str, str], session_id: str | None = None) -> dict[str, Any]:
    """``kairox skills render NAME --arg K=V --no-check-tools`` (in the dashboard's session)."""
    try:
        ready = rt.skills.prepare(name, arguments, tools=None, session_id=session_id)
    except SkillError as exc:
        raise ActionError(str(exc)) from None
    return {"name": ready.name, "model": ready.model, "tools": list(ready.tools), "text": ready.text}


# -- plugins ------------------------------------------------------------------------------
def _records(rt: Runtime, name: str) -> list[Any]:
    try:
        from kairox_manifests.loader import survey
    except ImportError:
        raise ActionError("kairox-manifests is not installed: there are no plugins to change", 404) from None
    return [r for r in survey(rt, check=False) if r.name == name]


def set_plugin_enabled(rt: Runtime, name: str, scope: str, enabled: bool, contribution: str | None) -> dict[str, Any]:
    """``kairox plugin enable|disable NAME[:KIND/NAME] --scope SCOPE``."""
    from kairox_manifests.settings import SettingsStore

    records = _records(rt, name)
    if not records:
        raise ActionError(f"no plugin named {name!r} was found", 404)
    if scope == "workspace" and {r.candidate.scope for r in records} == {"user"}:
        raise ActionError(
            f"{name} is one of your own plugins: a workspace's settings never change it "
            "(a cloned repository could switch off your guards); use the user scope"
        )
    if contribution is not None:
        manifest = next((r.manifest for r in records if r.manifest is not None), None)
        keys = [c.key for c in manifest.contributions] if manifest is not None else []
        if keys and contribution not in keys and not contribution.startswith("tool/"):
            raise ActionError(f"plugin {name} has no contribution {contribution!r} (it has: {', '.join(keys)})")
    store = SettingsStore(rt.workspace, settings_env(rt))
    store.set_enabled(scope, name, enabled, contribution)
    return {"plugin": name, "contribution": contribution, "enabled": enabled, "file": str(store.file(scope))}


def _config_target(rt: Runtime, name: str) -> Any:
    """The plugin ``name`` whose ``userConfig`` is shown or changed (the one that loads)."""
    from kairox_manifests.settings import SettingsStore
    from kairox_manifests.userconfig_cli import ConfigTarget

    records = [r for r in _records(rt, name) if r.manifest is not None]
    winner = next((r for r in records if r.state != "shadowed"), records[0] if records else None)
    if winner is None:
        raise ActionError(f"no plugin named {name!r} was found", 404)
    env = settings_env(rt)
    return ConfigTarget(winner.manifest, SettingsStore(rt.workspace, env), env)


def plugin_config(rt: Runtime, name: str) -> dict[str, Any]:
    """``kairox plugin config NAME --json``: each option; a sensitive one only as set or not."""
    from kairox_manifests.userconfig_cli import config_rows

    target = _config_target(rt, name)
    return {"plugin": target.plugin, "options": config_rows(target)}


def set_plugin_config(rt: Runtime, name: str, values: dict[str, Any], unset: list[str]) -> dict[str, Any]:
    """``kairox plugin config NAME --set K=V --unset K``: a sensitive value goes to the system
    keychain (refused, naming the environment variable, where there is none); the answer
    never holds it."""
    from kairox_manifests.userconfig import UserConfigError, store_values

    target = _config_target(rt, name)
    try:
        store_values(target.store, target.plugin, target.root, target.options, values, unset)
    except UserConfigError as exc:
        raise ActionError(str(exc)) from None
    return plugin_config(rt, name)


def override_path(rt: Runtime, name: str, scope: str, path: str | None) -> dict[str, Any]:
    """Load plugin ``name`` from ``path`` instead (``plugins.NAME.path`` of the plugin settings)."""
    from kairox_manifests.settings import SettingsStore

    store = SettingsStore(rt.workspace, settings_env(rt))

    def change(data: dict[str, Any]) -> None:
        entry = data["plugins"].setdefault(name, {})
        if path is None:
            entry.pop("path", None)
            if not entry:
                data["plugins"].pop(name, None)
        else:
            entry["path"] = path

    store.update(scope, change)
    return {"plugin": name, "path": path, "file": str(store.file(scope))}


def trust_bundle(rt: Runtime, name: str) -> str:
    """``kairox plugin trust NAME``: trust one workspace plugin as it is now."""
    from kairox_manifests.trust import bundle_item

    records = [r for r in _records(rt, name) if r.manifest is not None]
    winner = next((r for r in records if r.state != "shadowed"), None)
    if winner is None or winner.manifest is None:
        raise ActionError(f"no plugin named {name!r} was found", 404)
    if winner.candidate.scope == "user":
        return f"{name} is a user plugin ({winner.candidate.root}), trusted already"
    item = bundle_item(winner.manifest, rt.workspace)
    TrustStore(rt.home or user_home(rt.env)).trust(rt.workspace, [item], replace=False)
    return f"trusting {name} ({winner.candidate.root})"


def trust_workspace(rt: Runtime) -> dict[str, Any]:
    """``kairox trust``: record the user's trust of everything the workspace declares now."""
    items = [i.key for i in rt.trust.declared.values()]
    rt.trust_workspace()
    return {"workspace": str(rt.workspace), "trusted": items}


# -- servers ------------------------------------------------------------------------------
#: the kinds of server the Status page can restart and stop
SERVER_KINDS = ("mcp", "lsp", "dap")


def server_kind(rt: Runtime, name: str) -> str | None:
    """The kind (``mcp``, ``lsp``, ``dap``) of the first server called ``name`` in the runtime's status."""
    return next((s.kind for s in rt.status().servers if s.name == name), None)


async def server_action(rt: Runtime, name: str, action: str, kind: str | None = None) -> dict[str, Any]:
    """Restart or stop the server ``name`` through its provider: the MCP manager's ``restart`` /
    ``stop_server``, kairox-lsp's and kairox-dap's ``restart_server`` / ``stop_server``."""
    from kairox import KairoxError

    if action not in ("restart", "stop"):
        raise ActionError(f"unknown action {action!r} (restart or stop)", 404)
    kind = kind or server_kind(rt, name)
    if kind not in SERVER_KINDS:
        raise ActionError(f"no MCP, LSP or DAP server named {name!r} that can be started here", 404)
    status = next((s for s in rt.status().servers if s.name == name and s.kind == kind), None)
    if status is not None and action not in server_actions(rt, status):
        problem = config_problem(rt, status)
        if problem is not None:
            raise ActionError(f"{name} cannot start until its entry is fixed: {problem}", 409)
        raise ActionError(f"{name} is {status.state}: nothing to {action}", 409)
    try:
        if kind == "mcp":
            return await _mcp_action(rt, name, action)
        if kind == "lsp":
            return await _peer_action(rt, name, action, "lsp")
        return await _peer_action(rt, name, action, "dap")
    except KairoxError as exc:
        raise ActionError(str(exc)) from None


async def _peer_action(rt: Runtime, name: str, action: str, kind: str) -> dict[str, Any]:
    """A language server (kairox-lsp) or a debug adapter (kairox-dap)."""
    try:
        if kind == "lsp":
            import kairox_lsp

            known = set(kairox_lsp.provider_of(rt).servers)
            restart, stop = kairox_lsp.restart_server, kairox_lsp.stop_server
        else:
            import kairox_dap

            known = set(kairox_dap.provider_of(rt).adapters)
            restart, stop = kairox_dap.restart_server, kairox_dap.stop_server
    except ImportError:
        raise ActionError(f"kairox-{kind} is not installed", 404) from None
    if name not in known:
        raise ActionError(f"no {kind.upper()} server named {name!r} that can be started here", 404)
    status = await (restart if action == "restart" else stop)(rt, name)
    return {"server": name, "kind": kind, "state": status.state.value, "detail": status.detail}


async def _mcp_action(rt: Runtime, name: str, action: str) -> dict[str, Any]:
    try:
        from kairox_mcp import manager_of
    except ImportError:
        raise ActionError("kairox-mcp is not installed", 404) from None
    manager = manager_of(rt)
    if name not in manager.definitions:
        raise ActionError(f"no MCP server named {name!r} that can be started here", 404)
    if action == "restart":
        server = await manager.restart(name)
        return {"server": name, "kind": "mcp", "state": server.state.value, "detail": server.detail}
    if name in manager.servers:
        await manager.stop_server(name)
    return {"server": name, "kind": "mcp", "state": "stopped"}


# -- tools --------------------------------------------------------------------------------
async def call_tool(
    rt: Runtime, name: str, arguments: dict[str, Any], session: Session | None = None
) -> dict[str, Any]:
    """``kairox tools call NAME --args JSON``: through the policy (an Ask is asked in the page),
    in the dashboard's ``session`` (an approval "for the session" is remembered there)."""
    try:
        result = await (session.call_tool(name, arguments) if session is not None else rt.call_tool(name, arguments))
    except ToolNotFound as exc:
        raise ActionError(str(exc), 404) from None
    except PolicyDenied as exc:
        return {"ok": False, "error": "denied", "message": str(exc)}
    except ToolError as exc:
        return {"ok": False, "error": "failed", "message": str(exc)}
    return {"ok": not result.is_error, "result": result.to_dict()}


# -- the catalog --------------------------------------------------------------------------
class Marketplace:
    """The catalog of the current runtime (loaded once per runtime, ``refresh`` reloads)."""

    def __init__(self, holder: RuntimeHolder, hub: Hub) -> None:
        self.holder = holder
        self.hub = hub
        self._snapshot: tuple[int, CatalogSnapshot] | None = None
        self.jobs: dict[str, JobProgress] = {}

    async def snapshot(self, *, refresh: bool = False) -> CatalogSnapshot:
        generation = self.holder.generation
        if self._snapshot is None or self._snapshot[0] != generation or refresh:
            snap = await Catalog(self.holder.rt).load(refresh=refresh)
            self._snapshot = (generation, snap)
        return self._snapshot[1]

    async def search(self, query: str, kind: str | None, *, refresh: bool = False) -> dict[str, Any]:
        snap = await self.snapshot(refresh=refresh)
        kinds = [kind] if kind else None
        if query.strip():
            entries = [h.entry for h in snap.search(query, kinds=kinds)]
        else:
            entries = [e for e in snap.entries if kinds is None or e.kind in kinds]
        installed = installed_state(self.holder.rt)
        rows = [
            {
                "key": e.key,
                "name": e.name,
                "kind": e.kind,
                "source": e.source,
                "title": e.title,
                "description": e.description,
                "tags": list(e.tags),
                "requirements": [str(r) for r in e.requirements],
                "icon": shown_icon(e),
                **installed(e),
            }
            for e in entries
        ]
        return {
            "query": query,
            "entries": rows,
            "sources": [{"name": s.name, "entries": s.entries, "failed": s.failed} for s in snap.sources],
            "errors": [str(e) for e in snap.errors],
        }

    async def detail(self, key: str) -> dict[str, Any]:
        snap = await self.snapshot()
        try:
            entry = snap.get(key)
        except EntryNotFound as exc:
            raise ActionError(str(exc).strip("'\""), 404) from None
        checks = await Installer(self.holder.rt).check(entry)
        data: dict[str, Any] = {**entry_to_dict(entry), "key": entry.key, "icon": shown_icon(entry)}
        data.update(installed_state(self.holder.rt)(entry))
        data["checks"] = [{**c.to_dict(), "describe": c.describe()} for c in checks]
        data["requirements_met"] = all(c.ok for c in checks)
        if entry.launch is not None:
            data["command_line"] = entry.launch.command_line()
        if entry.install is not None:
            data["from"] = entry.install.describe()
        result: dict[str, Any] = redact_entry(data)
        return result

    def start_install(self, request: InstallRequest) -> str:
        """Start an install job; its steps arrive as ``install`` messages. Returns the job id.

        The job outlives the runtime (it waits for the reopen it asks for): when what it wrote
        to the workspace does not run until the workspace is trusted again, its outcome says
        so, with what trusting would let run (``trust``), for the page to offer."""
        job = secrets.token_hex(6)
        progress = JobProgress(self.hub, job)
        self.jobs[job] = progress
        rt = self.holder.rt
        options = request.options

        async def run() -> None:
            outcome: dict[str, Any]
            try:
                snap = await self.snapshot()
                entry = snap.get(request.name)
                progress.info(f"installing {entry.key} into the {options.scope} scope")
                async with progress.step("Checking requirements") as step:
                    checks = await Installer(rt).check(entry)
                    unmet = [c for c in checks if not c.ok]
                    step.detail = "all met" if not unmet else "; ".join(c.describe() for c in unmet)
                    step.ok = not unmet or options.ignore_requirements
                installer = Installer(rt, progress=progress, approver=self.holder.approvals)
                report = await installer.install(entry, options)
                outcome = {"ok": report.ok, "report": report.to_dict()}
            except InstallError as exc:
                outcome = {"ok": False, "error": install_problem(exc)}
            except (PolicyDenied, EntryNotFound) as exc:
                outcome = {"ok": False, "error": str(exc).strip("'\"")}
            except Exception as exc:
                logger.exception("install of %s failed", request.name)
                outcome = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            written = outcome.get("report", {})
            if written.get("written"):
                fresh = await self.holder.reopen()  # the new server, plugin or skill shows up in it
                pending = trust_view(fresh)["pending"]
                if options.scope == "workspace" and any(i["name"] == written["name"] for i in pending):
                    outcome["trust"] = pending
            progress.finish(outcome)

        self.holder.spawn(run, name=f"kairox-ui: install {request.name}")
        return job

    async def uninstall(self, name: str, scope: str | None) -> dict[str, Any]:
        try:
            removed = await Installer(self.holder.rt, approver=self.holder.approvals).uninstall(
                name,
                scope=scope,  # type: ignore[arg-type]
            )
        except InstallError as exc:
            raise ActionError(install_problem(exc)) from None
        except PolicyDenied as exc:
            raise ActionError(str(exc)) from None
        self.holder.reload()
        return {"ok": True, "removed": removed}


#: an icon the page shows: a ``data:`` image. The page's CSP (``img-src 'self' data:``) lets
#: no remote image load, which would tell the catalog's host each time the list is looked at;
#: ``https:`` icons stay in the catalog and are not shown.
_DATA_IMAGE = re.compile(r"data:image/(?:png|jpeg|gif|webp|svg\+xml|x-icon|vnd\.microsoft\.icon)[;,]")


def shown_icon(entry: CatalogEntry) -> str:
    """The first of the entry's icons the page can show (see :data:`_DATA_IMAGE`), else ``""``."""
    return next((src for src in entry.icons if _DATA_IMAGE.match(src)), "")


def installed_state(rt: Runtime) -> Callable[[CatalogEntry], dict[str, Any]]:
    """For each entry: ``installed``, the scopes it is installed in (the places *Uninstall*
    removes it from: a ``[mcp_servers.NAME]`` table of the workspace's or the user's
    ``kairox.toml``, a catalog install's plugin or skill directory), each with whether it is
    enabled there; and ``state``, what runs now (a server's or plugin's pill state). The
    config files are read once for all the entries."""
    scopes: tuple[Scope, ...] = ("workspace", "user")
    tables: dict[str, Mapping[str, Any]] = {}
    for scope in scopes:
        try:
            servers = read_document(config_target(rt, scope)).get("mcp_servers")
        except TomlEditError:
            servers = None
        tables[scope] = servers if isinstance(servers, Mapping) else {}
    servers_now = {s.name: str(s.state) for s in rt.status().servers if s.kind == "mcp"}
    plugins: dict[str, dict[str, Any]] | None = None

    def of(entry: CatalogEntry) -> dict[str, Any]:
        nonlocal plugins
        places: list[dict[str, Any]] = []
        state: str | None = None
        if entry.kind == "mcp-server":
            for scope, servers in tables.items():
                table = servers.get(entry.name)
                if isinstance(table, Mapping):
                    places.append({"scope": scope, "enabled": table.get("enabled", True) is not False})
            state = servers_now.get(entry.name) if places else None
        else:
            for scope in scopes:
                if installed_bundles(rt, entry.name, [scope]):
                    places.append({"scope": scope, "enabled": True})
            if places and entry.kind == "plugin":
                if plugins is None:
                    plugins = {b["name"]: b for b in bundle_rows(rt)}
                bundle = plugins.get(entry.name)
                state = bundle["state"] if bundle else None
                for place in places:
                    place["enabled"] = state != "disabled"
            elif places and entry.kind == "skill":
                enabled = rt.skills.enabled_state(entry.name)[0]
                for place in places:
                    place["enabled"] = enabled
        return {"installed": places, "state": state}

    return of


def install_problem(exc: InstallError) -> str:
    """Why an install was refused, with the remedy the page offers (the CLI's flags mean nothing there)."""
    if exc.kind == "exists":
        return f"{exc.reason}; tick \u201creplace an existing entry\u201d to replace it"
    if exc.kind == "requirements":
        return f"{exc.reason}\ninstall what is missing on this machine, then install again"
    if exc.kind == "inputs":
        return f"{exc.reason}: fill in {', '.join(exc.missing)}"
    return exc.reason


def redact_entry(data: dict[str, Any]) -> dict[str, Any]:
    """An entry's launch recipe and command line as ``kairox catalog show`` would print them
    (its inputs' ``secret`` flags stay: they say which fields to hide in the form)."""
    out = dict(data)
    for key in ("launch", "install", "command_line", "from"):
        if key in out:
            out[key] = redact(out[key], key)
    return out
