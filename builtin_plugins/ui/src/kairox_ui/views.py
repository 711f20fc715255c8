"""What each page shows, as JSON-ready dicts built from the runtime's public API.

Values that come from config (commands, URLs, env, headers, errors that may quote
them) go through :func:`kairox.ext.redact`, as ``kairox config show`` and ``kairox status``
print them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kairox import Runtime, ServerState, ServerStatus
from kairox.ext import SkillDef, SkillRegistry, redact
from kairox_cli import config_secrets, mask_secrets

from .watch import redact_record

if TYPE_CHECKING:
    from .holder import RuntimeHolder

__all__ = [
    "all_skills",
    "bundle_pill_state",
    "bundle_rows",
    "config_problem",
    "server_actions",
    "plugins_view",
    "skill_view",
    "skills_view",
    "status_view",
    "tools_view",
    "trust_view",
]

logger = logging.getLogger(__name__)

#: a bundle's state (kairox plugin list) -> its pill
_BUNDLE_PILLS = {
    "loaded": "ready",
    "available": "stopped",
    "untrusted": "untrusted",
    "failed": "failed",
    "incompatible": "failed",
    "disabled": "stopped",
    "shadowed": "stopped",
}


def bundle_pill_state(state: str, loader_starting: bool = False) -> str:
    if state == "available" and loader_starting:
        return "starting"
    return _BUNDLE_PILLS.get(state, "stopped")


def _mcp_diagnostics(rt: Runtime, name: str) -> dict[str, Any]:
    try:
        from kairox_mcp import manager_of
    except ImportError:  # kairox-mcp not installed: the event's diagnostic only
        return {}
    try:
        server = manager_of(rt).servers.get(name)
    except Exception:
        return {}
    if server is None:
        return {}
    return {"exit_code": server.diagnostics.exit_code, "stderr_tail": server.stderr_tail(30)}


#: server kinds whose provider restarts and stops them by name (kairox-mcp, kairox-lsp, kairox-dap)
RESTARTABLE = ("mcp", "lsp", "dap")


def _can_act(rt: Runtime, status: ServerStatus) -> bool:
    """Restart and stop apply to a declared server its provider runs (not an untrusted or broken entry)."""
    if status.state is ServerState.UNTRUSTED:
        return False
    if status.kind == "mcp":
        return True
    provider = rt.providers.get(status.kind)
    known = getattr(provider, "servers" if status.kind == "lsp" else "adapters", None)
    return isinstance(known, dict) and status.name in known


#: a server kind -> its config section (where an entry that does not validate is recorded)
_SECTIONS = {"mcp": "mcp_servers", "lsp": "lsp_servers", "dap": "dap_servers"}


def config_problem(rt: Runtime, status: ServerStatus) -> str | None:
    """Why the server's config entry does not validate (the first error), else ``None``."""
    errors = rt.config.broken.get(_SECTIONS.get(status.kind, ""), {}).get(status.name)
    return str(errors[0]) if errors else None


def server_actions(rt: Runtime, status: ServerStatus) -> list[str]:
    """What the page offers for the server in its state: nothing for an entry it cannot run
    (untrusted, not its provider's, a config entry that does not validate: only editing the
    file helps); ``restart`` (the page says *Start*) for a stopped or failed one; ``restart``
    and ``stop`` for one that runs or starts."""
    if status.kind not in RESTARTABLE or not _can_act(rt, status) or config_problem(rt, status) is not None:
        return []
    if status.state in (ServerState.STOPPED, ServerState.FAILED):
        return ["restart"]
    return ["restart", "stop"]


def trust_view(rt: Runtime) -> dict[str, Any]:
    """The workspace's trust: what is pending, and what each pending item would run."""
    items = []
    for item in rt.trust.pending:
        # what `kairox trust` shows: each command line whole, secrets masked by their value
        shown = item.to_dict()
        items.append(
            {
                "key": item.key,
                "kind": item.kind,
                "name": item.name,
                "source": item.source,
                "state": str(rt.trust.state_of(item.key)),
                "runs": shown["commands"],
                "contacts": shown["urls"],
                "reads": shown["env_names"],
                "notes": shown["notes"],
                "refused": shown["refused"],
            }
        )
    return {"trusted": rt.trust.trusted, "pending": items, "problem": rt.trust.problem or ""}


def bundle_rows(rt: Runtime) -> list[dict[str, Any]]:
    """Every plugin bundle as ``kairox plugin list --json`` shows it (and its ``user_config`` keys)."""
    return _bundles(rt)


def _bundles(rt: Runtime) -> list[dict[str, Any]]:
    try:
        from kairox_manifests.loader import survey
    except ImportError:
        return []
    try:
        # "user_config": the keys of the options the plugin asks for (the page fetches their form)
        return [
            {**r.view().to_dict(), "user_config": [o.key for o in r.manifest.user_config] if r.manifest else []}
            for r in survey(rt)
        ]
    except Exception as exc:
        logger.warning("cannot list the plugins: %s", exc)
        return []


def status_view(holder: RuntimeHolder) -> dict[str, Any]:
    """The Status page: a pill per server and per bundle, plugin packages that failed, trust."""
    rt = holder.rt
    status = rt.status()
    providers = {p.name: p for p in status.providers}
    servers = []
    for s in status.servers:
        row = s.to_dict()
        del row["log_tail"]  # a failed server's tail is in its diagnostic
        if s.state is ServerState.FAILED:
            failure = holder.failures.get(s.name, {})
            diag = _mcp_diagnostics(rt, s.name) if s.kind == "mcp" else {}
            tail = diag.get("stderr_tail") or failure.get("stderr_tail") or s.log_tail
            exit_code = failure.get("exit_code", failure.get("returncode", diag.get("exit_code")))
            row["diagnostic"] = {
                "error": failure.get("error") or s.detail,
                "exit_code": exit_code,
                # LSP/DAP failure events carry the tail as one text, MCP diagnostics as lines
                "stderr_tail": tail.splitlines() if isinstance(tail, str) else list(tail),
            }
        row["actions"] = server_actions(rt, s)
        servers.append(row)
    loader = providers.get("plugins")
    loader_starting = loader is not None and loader.state == "starting"
    bundles = [
        {
            "name": b["name"],
            "kind": "bundle",
            "state": bundle_pill_state(b["state"], loader_starting),
            "bundle_state": b["state"],
            "detail": b["reason"],
            "scope": b["scope"],
            "root": b["root"],
        }
        for b in _bundles(rt)
    ]
    data = {
        "generation": holder.generation,
        "workspace": str(rt.workspace),
        "starting": not holder.started.is_set(),
        "servers": servers,
        "bundles": bundles,
        "plugin_failures": [
            {
                "plugin": f.plugin,
                "distribution": f.distribution,
                "version": f.version,
                "stage": f.stage,
                "error": f.error,
            }
            for f in status.failures
        ],
        "providers": [{"name": p.name, "owner": p.owner, "state": p.state, "error": p.error} for p in status.providers],
        "tools": status.tools,
        "skills": status.skills,
    }
    secrets = config_secrets(rt)
    # values hidden, prose as written (a server's detail may carry the hint ``${NAME:-default}``)
    result: dict[str, Any] = mask_secrets(redact_record(data), secrets)
    # kairox's own prose (a file, a field path, what was expected), which pattern redaction
    # garbles (``CLOCK_API_KEY: environment variable ...`` read as a key and its value)
    result["config_errors"] = mask_secrets([str(e) for e in status.config_errors], secrets)
    # what is pending trust, as `kairox trust` shows it: as it will run (masking more would
    # show the user something else than what runs)
    result["trust"] = trust_view(rt)
    return result


# -- skills -------------------------------------------------------------------------------
def skill_group(skill: SkillDef) -> str:
    return "plugin" if skill.namespace else skill.scope.value


def skill_view(
    registry: SkillRegistry, skill: SkillDef, *, full: bool = False, session_id: str | None = None
) -> dict[str, Any]:
    enabled, decided = registry.enabled_state(skill.name)
    data: dict[str, Any] = {
        "name": skill.name,
        "description": skill.description,
        "scope": skill.scope.value,
        "group": skill_group(skill),
        "source": skill.source,
        "path": skill.file,
        "enabled": enabled,
        "enabled_by": decided.value if decided else None,
        # disable-model-invocation: listed and runnable by the user, never offered to the model
        "user_only": not skill.model_invocable,
        "keywords": list(skill.keywords),
        "tools": list(skill.tools),
        "model": skill.model,
        "arguments": [a.to_dict() for a in skill.arguments],
        "shadows": [
            {"scope": s.scope.value, "source": s.source, "path": s.file}
            for s in registry.shadowed(skill.name, session_id=session_id)
        ],
        "warnings": [w.message for w in skill.warnings],
    }
    if full:
        data.update(skill.body_json())
    return data


def all_skills(rt: Runtime, session_id: str | None = None) -> list[SkillDef]:
    """Every effective skill the user may see: disabled ones, user-only ones
    (``disable-model-invocation``) and the session's own (``session_id``)."""
    return rt.skills.skills(session_id=session_id, include_disabled=True, include_user_only=True)


def skills_view(rt: Runtime, session_id: str | None = None) -> dict[str, Any]:
    """The Skills page: every skill by scope (the dashboard's session's under ``session``)."""
    reg = rt.skills
    return {
        "session": session_id,
        "skills": [skill_view(reg, s, session_id=session_id) for s in all_skills(rt, session_id)],
        "errors": [str(e) for e in reg.errors],
        "warnings": [str(w) for w in reg.warnings],
    }


# -- plugins ------------------------------------------------------------------------------
def plugins_view(rt: Runtime) -> dict[str, Any]:
    overrides: dict[str, str] = {}
    problems: list[str] = []
    try:
        from kairox_manifests.settings import SettingsStore

        settings = SettingsStore(rt.workspace, settings_env(rt)).load()
        problems = list(settings.problems)
        for name in settings.plugins:
            path = settings.override_path(name)
            if path:
                overrides[name] = path
    except ImportError:
        pass
    bundles = _bundles(rt)
    for b in bundles:
        b["path_override"] = overrides.get(b["name"], "")
        for item in b["inventory"]:
            item["key"] = f"{item['kind']}/{item['name']}"
    status = rt.status()
    packages = [
        {"name": p.name, "distribution": p.distribution, "version": p.version, "hooks": list(p.hooks)}
        for p in status.plugins
    ]
    failures = [
        {"plugin": f.plugin, "distribution": f.distribution, "version": f.version, "stage": f.stage, "error": f.error}
        for f in status.failures
    ]
    data = {
        "bundles": bundles,
        "packages": packages,
        "failures": failures,
        "problems": problems,
        "trust": trust_view(rt),
    }
    result: dict[str, Any] = redact(data)
    return result


def settings_env(rt: Runtime) -> dict[str, str]:
    """The environment the plugin settings are found with (``KAIROX_HOME`` of this runtime)."""
    env = dict(rt.env)
    if rt.home is not None:
        env["KAIROX_HOME"] = str(rt.home)
    return env


# -- tools --------------------------------------------------------------------------------
def tools_view(rt: Runtime) -> dict[str, Any]:
    from .apps import resource_uri_of  # apps needs actions, which needs this module

    # the same rows as `kairox tools list`, with the schema the call form is built from
    # "app": the ui:// view of an MCP server's tool (MCP Apps, kairox_ui.apps)
    rows = [
        {
            **rt.tool_row(spec),
            "schema": dict(spec.input_schema),
            "app": resource_uri_of(spec.meta) if spec.provider.startswith("mcp:") else None,
        }
        for spec in rt.tools.specs()
    ]
    return {"tools": rows}
