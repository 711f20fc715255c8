"""Core commands: status, plugins, config show, tools list/call."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import attrs
import click

from kairox import KairoxError, PolicyDenied, ToolError
from kairox.ext import TrustState, toml_key
from kairox.ext import terminal_safe as safe
from kairox.protocols import WithholdsTools

from ._config_show import shown_config
from ._lazy import lazy_command
from ._policy_notes import allow_rule_marks, unmatched_rules
from ._util import config_secrets, echo_json, mask_secrets, run_with_runtime, state_of, tty_approver, want_json

if TYPE_CHECKING:
    from kairox import Runtime, RuntimeStatus
    from kairox.ext import PluginHost

__all__ = ["register_core_commands"]

JSON_FLAG = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def _failure_dict(f: Any) -> dict[str, Any]:
    return {
        "plugin": f.plugin,
        "distribution": f.distribution,
        "version": f.version,
        "stage": f.stage,
        "error": f.error,
    }


def _distribution_dict(host: PluginHost) -> dict[str, Any] | None:
    choice = host.distribution
    if choice.distribution is None:
        return None
    dist = choice.distribution
    return {"name": dist.name, "package": choice.package, "version": choice.version, "plugins": list(dist.plugins)}


def _not_loaded(host: PluginHost) -> list[dict[str, Any]]:
    return [{"plugin": name, "distribution": dist, "why": why} for name, (dist, why) in sorted(host.not_loaded.items())]


def status_dict(rt: Runtime, status: RuntimeStatus) -> dict[str, Any]:
    """What ``kairox status`` shows, the config's secret values masked wherever they occur: an
    error about a non-secret field quotes its value, which may be a secret's too
    (``tool_timeout = "<the API key>"``: "expected a number, got '...'"). Not in ``trust``:
    what is pending trust is shown as it will run (the trust display hides a URL's password
    and the secrets an entry hands its process itself; masking more would show the user
    something else than what runs)."""
    data = _status_dict(rt, status)
    secrets = config_secrets(rt)
    return {key: value if key == "trust" else mask_secrets(value, secrets) for key, value in data.items()}


def _status_dict(rt: Runtime, status: RuntimeStatus) -> dict[str, Any]:
    marks = allow_rule_marks(rt)
    return {
        "ok": status.ok,
        "workspace": str(rt.workspace),
        "config_files": [str(p) for p in rt.config.files],
        "plugins": [
            {"name": p.name, "distribution": p.distribution, "version": p.version, "hooks": list(p.hooks)}
            for p in status.plugins
        ],
        "failures": [_failure_dict(f) for f in status.failures],
        "distribution": _distribution_dict(rt.host),
        "not_loaded": _not_loaded(rt.host),
        "config_errors": [str(e) for e in status.config_errors],
        "providers": [attrs.asdict(p) for p in status.providers],
        "servers": [s.to_dict() for s in status.servers],
        "trust": {
            "trusted": rt.trust.trusted,
            "pending": [i.to_dict() | {"state": str(rt.trust.state_of(i.key))} for i in rt.trust.pending],
            "hint": rt.trust.hint(TrustState.CHANGED if rt.trust.trusted else None) if rt.trust.pending else "",
            "problem": rt.trust.problem,
        },
        "config_not_applied": [
            *(f"{n.file}: {n.section}.{n.key}: {n.reason}" for n in rt.config.not_applied),
            *(f"{file}: policy.{key}: {why}" for file, key, why, none in marks if none),
        ],
        "rule_warnings": [
            *(
                f"[policy.rules] {pattern!r} matches no registered tool (by canonical id or exported name)"
                for pattern in unmatched_rules(rt.policy, rt.tools.specs())
            ),
            *(f'{file}: policy.{key} = "allow" {why}' for file, key, why, _none in marks),
        ],
        "tools": status.tools,
        "skills": status.skills,
        "skill_errors": status.skill_errors,
    }


def _print_status(data: dict[str, Any]) -> None:
    click.echo(f"workspace: {data['workspace']}")
    click.echo(f"config:    {', '.join(data['config_files']) or '(no kairox.toml found)'}")
    not_loaded = f", {len(data['not_loaded'])} not loaded" if data["not_loaded"] else ""
    dist = data["distribution"]
    of = f" (distribution {dist['name']}, {dist['package']})" if dist else ""
    click.echo(f"plugin packages: {len(data['plugins'])} loaded, {len(data['failures'])} failed{not_loaded}{of}")
    for f in data["failures"]:
        who = f["distribution"] or f["plugin"]
        click.echo(f"  ! {who} {f['version'] or ''} ({f['stage']}): {f['error']}")
    failed = [p for p in data["providers"] if p["state"] == "failed"]
    for p in failed:
        click.echo(f"  ! provider {p['name']} ({p['owner']}) failed: {p['error']}")
    if data["servers"]:
        click.echo("servers:")
        width = max(len(safe(s["name"])) for s in data["servers"])
        for s in data["servers"]:
            mark = "!" if s["state"] == "failed" else "?" if s["state"] in ("untrusted", "needs_authorization") else " "
            tools = f"{s['tools']} tools" if s["state"] == "ready" else ""
            detail = f"  {safe(s['detail'])}" if s["detail"] else ""
            click.echo(f" {mark} {safe(s['name']):<{width}}  {s['kind']:<4} {s['state']:<9} {tools}{detail}")
            for line in s.get("log_tail", []):
                click.echo(f"      | {safe(line)}")
    trust = data.get("trust") or {}
    if trust.get("problem"):
        click.echo(f"trust:     ! {safe(trust['problem'])}")
    askable = [p for p in trust.get("pending", []) if p.get("state") != "refused"]
    if askable:
        what = "changed since trusted" if trust.get("trusted") else "untrusted"
        n = len(askable)
        click.echo(f"trust:     {n} item{'s' if n != 1 else ''} of this workspace {what}, not run; {trust['hint']}")
    for p in trust.get("pending", []):
        if p.get("state") == "refused":
            click.echo(f"trust:     ! {safe(p['key'])} refused, not run: {safe(p['refused'])}")
    click.echo(f"tools:     {data['tools']}")
    click.echo(f"skills:    {data['skills']}")
    if data["skill_errors"]:
        click.echo("skill problems (those files were skipped):")
        for e in data["skill_errors"]:
            click.echo(f"  ! {e}")
    if data["config_errors"]:
        click.echo("config problems:")
        for e in data["config_errors"]:
            click.echo(f"  ! {safe(e)}")
    for w in data.get("rule_warnings", []):
        click.echo(f"warning:   {safe(w)}")
    if data.get("config_not_applied"):
        click.echo("config not applied (each names its file and field):")
        for e in data["config_not_applied"]:
            click.echo(f"  - {safe(e)}")


@click.command()
@JSON_FLAG
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Start what the workspace declares and show plugins, servers, tools and skills.

    Exits 1 when something declared failed (a plugin, a server, the config).
    """

    async def go(rt: Runtime) -> dict[str, Any]:
        return status_dict(rt, rt.status())

    data = run_with_runtime(ctx, go, warn_config=False)  # the status lists them
    if want_json(ctx, as_json):
        echo_json(data)
    else:
        _print_status(data)
    ctx.exit(0 if data["ok"] else 1)


@click.command()
@click.option("--all", "show_all", is_flag=True, help="Include the kernel's own built-in plugins.")
@JSON_FLAG
@click.pass_context
def plugins(ctx: click.Context, show_all: bool, as_json: bool) -> None:
    """Plugin packages (Python distributions) and load errors.

    Every registration hook runs (as a runtime over this workspace makes them, without
    starting anything), so a plugin that fails to register is listed with its error.
    Exits 1 when one failed under KAIROX_STRICT_PLUGINS=1.

    Bundles (.claude-plugin, .codex-plugin, ... directories) are `kairox plugin list`."""
    from kairox import Runtime

    state = state_of(ctx)
    host = state.get_host()
    strict_error: Exception | None = None
    try:
        Runtime(state.workspace, host=host)  # the registration hooks; nothing starts
    except Exception as exc:  # strict: the first failure is raised (it is recorded too)
        strict_error = exc
    infos = host.plugins(include_builtin=show_all)
    data: dict[str, Any] = {
        "plugins": [
            {
                "name": p.name,
                "distribution": p.distribution,
                "version": p.version,
                "hooks": list(p.hooks),
                "builtin": p.builtin,
            }
            for p in infos
        ],
        "failures": [_failure_dict(f) for f in host.failures],
        "distribution": _distribution_dict(host),
        "not_loaded": _not_loaded(host),
    }
    if want_json(ctx, as_json):
        echo_json(data)
        if strict_error is not None or (host.strict and host.failures):
            ctx.exit(1)
        return
    if data["distribution"]:
        d = data["distribution"]
        click.echo(f"distribution {d['name']} ({d['package']} {d['version'] or ''}): {', '.join(d['plugins'])}")
    for p in data["plugins"]:
        dist = f"{p['distribution']} {p['version'] or ''}".strip() if p["distribution"] else "(inline)"
        click.echo(f"{p['name']:<18} {dist:<32} {', '.join(h.removeprefix('kairox_') for h in p['hooks'])}")
    for f in data["failures"]:
        dist = f"{f['distribution'] or ''} {f['version'] or ''}".strip()
        click.echo(f"! {f['plugin']:<16} {dist:<32} failed ({f['stage']}): {f['error']}")
    for n in data["not_loaded"]:
        click.echo(f"- {n['plugin']:<16} {n['distribution'] or '':<32} installed, not loaded: {n['why']}")
    if strict_error is not None or (host.strict and host.failures):
        ctx.exit(1)


@click.group()
def config() -> None:
    """Inspect the merged configuration."""


@config.command("show")
@JSON_FLAG
@click.pass_context
def config_show(ctx: click.Context, as_json: bool) -> None:
    """Show the merged config with the file each entry came from (secrets redacted)."""

    async def go(rt: Runtime) -> dict[str, Any]:
        sections = shown_config(rt.config, redacted=True)
        # which tools a workspace allow rule cannot apply to is known once servers run (status
        # names them); config show starts nothing, so it says what such a rule depends on
        allows = [p for p, a in rt.policy.config.workspace_rules.items() if a == "allow"]
        for row in sections.get("policy", {}).values():
            rules = row["value"] if isinstance(row["value"], dict) else {}
            mine = [p for p in allows if rules.get(p) == "allow" and rt.config.scope_of(row["source"]) == "workspace"]
            if mine:
                row["note"] = (
                    f"{', '.join(toml_key(p, 'rules') for p in mine)}: a workspace allow rule applies only to a "
                    "tool whose capability is not execute (a server's tools are execute unless its entry "
                    "declares one) and that no rule of yours matches; kairox status names each tool it does not "
                    "apply to"
                )
        return {
            "files": [str(p) for p in rt.config.files],
            "sections": sections,
            "errors": [str(e) for e in rt.config.errors],
        }

    data = run_with_runtime(ctx, go, start=False, warn_config=False)
    if want_json(ctx, as_json):
        echo_json(data)
        return
    if not data["sections"]:
        click.echo("(empty configuration)")
    for section, entries in data["sections"].items():
        click.echo(f"[{safe(section)}]")
        for key, entry in entries.items():
            value = safe(json.dumps(entry["value"], ensure_ascii=False))
            # where several layers set a single value (rows "key" and "key (file)"), the one that applies
            layers = sum(1 for k in entries if k.split(" (", 1)[0] == key.split(" (", 1)[0])
            single = not isinstance(entry["value"], (dict, list))
            note = "  (in effect)" if layers > 1 and single and entry["in_effect"] else ""
            note += f"  (not applied: {safe(entry['not_applied'])})" if entry.get("not_applied") else ""
            note += f"  (note: {safe(entry['note'])})" if entry.get("note") else ""
            click.echo(f"  {safe(key)} = {value}    # {safe(entry['source'])}{note}")
    for err in data["errors"]:
        click.echo(f"! {err}", err=True)


@click.group()
def tools() -> None:
    """List and call tools."""


@tools.command("list")
@JSON_FLAG
@click.pass_context
def tools_list(ctx: click.Context, as_json: bool) -> None:
    """Every tool with its provider, domain, capability and policy decision."""

    async def go(rt: Runtime) -> tuple[list[dict[str, Any]], list[dict[str, str]], list[str]]:
        rows = []
        for spec in rt.tools.specs():
            # with what the tool says about itself; it decides nothing unless the user trusts its server
            rows.append({**rt.tool_row(spec), "annotations": dict(spec.annotations)})
        # tools a server lists that are not offered (an optional provider method), with why
        withheld = []
        for provider in list(rt.providers):
            if isinstance(provider, WithholdsTools):
                for tool_id, why in provider.withheld_tools():
                    withheld.append({"id": tool_id, "provider": provider.name, "reason": why})
        return rows, withheld, rt.broken_parts()

    rows, withheld, broken = run_with_runtime(ctx, go)
    if want_json(ctx, as_json):
        echo_json({"tools": rows, "not_offered": withheld, "failed": broken})
        return
    for line in broken:  # its tools are missing from the list: say why first
        click.echo(f"! {safe(line)}", err=True)
    if not rows and not withheld:
        click.echo("(no tools)")
        return
    w_id = max((len(r["id"]) for r in rows), default=0)
    w_prov = max((len(r["provider"]) for r in rows), default=0)
    for r in rows:
        decision = r["decision"]
        if "decisions" in r:
            inside, outside = r["decisions"]["inside"]["decision"], r["decisions"]["outside"]["decision"]
            if inside != outside:
                decision = f"{inside} inside the writable roots, {outside} outside"
        click.echo(f"{r['id']:<{w_id}}  {r['provider']:<{w_prov}}  {r['domain']:<7} {r['capability']:<7} {decision}")
    for w in withheld:
        click.echo(f"{safe(w['id'])}  {w['provider']}  not offered: {safe(w['reason'])}")


@tools.command("call")
@click.argument("name")
@click.option("--args", "args_json", default="{}", help="Arguments as a JSON object.")
@click.option("--yes", "-y", is_flag=True, help="Approve calls the policy would ask about (never overrides a deny).")
@click.option("--timeout", type=float, default=None, help="Give up after this many seconds.")
@JSON_FLAG
@click.pass_context
def tools_call(ctx: click.Context, name: str, args_json: str, yes: bool, timeout: float | None, as_json: bool) -> None:
    """Call a tool through the runtime (policy, hooks) and print its result.

    Exits 1 when the tool reports an error, fails, or the call is denied.
    """
    try:
        arguments = json.loads(args_json)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="--args") from None
    if not isinstance(arguments, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--args")
    json_out = want_json(ctx, as_json)

    async def go(rt: Runtime) -> tuple[int, Any]:
        try:
            result = await rt.call_tool(name, arguments, timeout=timeout)
        except PolicyDenied as exc:
            return 1, {"error": "denied", "message": str(exc)}
        except ToolError as exc:
            return 1, {"error": "failed", "message": str(exc)}
        return (1 if result.is_error else 0), result

    code, outcome = run_with_runtime(ctx, go, start="lazy", approver=tty_approver(yes))
    if isinstance(outcome, dict):
        if json_out:
            echo_json(outcome)
        else:
            click.echo(f"kairox: {outcome['error']}: {outcome['message']}", err=True)
    elif json_out:
        echo_json(outcome.to_dict())
    else:
        click.echo(outcome.text)
    ctx.exit(code)


def register_core_commands(group: click.Group) -> None:
    from ._context import context
    from ._trust import trust

    for command in (status, plugins, config, tools, context, trust):
        group.add_command(command)
    # imported when it runs: it is all templates
    group.add_command(lazy_command("new", "kairox_cli._new:new", "Start something new: a plugin package."))


_ = KairoxError
