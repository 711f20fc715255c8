"""``kairox mcp list | status | tools SERVER | logs SERVER``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kairox.ext import known_errors_for
from kairox.ext import terminal_safe as safe
from kairox_cli import echo_json, lazy_command, run_with_runtime, want_json

from .config import redact_config, redact_url
from .manager import SECTION, McpServerManager, McpStartupError, manager_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from kairox import Runtime

    from .lifecycle import ServerLifecycle

__all__ = ["mcp"]

JSON_FLAG = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def _target(config: Any) -> str:
    if config.url:
        return redact_url(config.url)
    redacted = redact_config(config)
    return " ".join([str(config.command or ""), *[str(a) for a in redacted.get("args", [])]]).strip()


def _errors(rt: Runtime) -> list[str]:
    return [str(e) for e in known_errors_for(rt.config, SECTION)] + [str(e) for e in manager_of(rt).errors]


def _unknown(server: str, manager: McpServerManager) -> str:
    configured = ", ".join(sorted(manager.definitions)) or "none"
    return f"no MCP server named {server!r} (configured: {configured})"


async def _start(manager: McpServerManager, names: list[str] | None) -> None:
    try:
        await manager.start_servers(names)
    except McpStartupError:
        pass  # the server rows say which failed


def _started_alone(
    ctx: click.Context, server: str, describe: Callable[[Runtime, ServerLifecycle], dict[str, Any]]
) -> dict[str, Any]:
    """Start ``server`` alone, describe it (its name, state and detail, plus ``describe``'s
    fields), stop it. A server that is not configured is the command's error."""

    async def go(rt: Runtime) -> dict[str, Any]:
        manager = manager_of(rt)
        if server not in manager.definitions:
            return {"unknown": _unknown(server, manager)}
        try:
            await _start(manager, [server])
            s = manager.server(server)
            return {"server": server, "state": s.state.value, "detail": s.detail, **describe(rt, s)}
        finally:
            await manager.stop()

    data: dict[str, Any] = run_with_runtime(ctx, go, start=False)
    if "unknown" in data:
        raise click.ClickException(data["unknown"])
    return data


@click.group()
def mcp() -> None:
    """MCP servers: what is configured, their state, tools, logs and OAuth logins."""


mcp.add_command(lazy_command("login", "kairox_mcp.auth_cli:login", "Log in to an HTTP MCP server with OAuth."))
mcp.add_command(lazy_command("logout", "kairox_mcp.auth_cli:logout", "Forget an HTTP MCP server's OAuth tokens."))
mcp.add_command(
    lazy_command(
        "import",
        "kairox_mcp.import_cli:import_cmd",
        "Import the MCP servers other clients configured (Claude, Cursor, VS Code, Codex, Gemini CLI, Zed, Windsurf).",
    )
)


@mcp.command("list")
@JSON_FLAG
@click.pass_context
def mcp_list(ctx: click.Context, as_json: bool) -> None:
    """Configured servers with their transport and the file that declared them (secrets redacted).

    Does not start anything.
    """

    async def go(rt: Runtime) -> dict[str, Any]:
        manager = manager_of(rt)
        rows = [
            {
                "name": name,
                "transport": d.config.type,
                "enabled": d.config.enabled,
                "target": _target(d.config),
                "source": d.source,
                "origin": d.origin,
                "config": redact_config(d.config),
            }
            for name, d in sorted(manager.definitions.items())
        ]
        held = [
            {"name": u.name, "state": u.state.value, "reason": u.reason, "source": u.source, "origin": u.origin}
            for u in manager.unavailable.values()
        ]
        return {"servers": rows, "unavailable": held, "errors": _errors(rt)}

    data = run_with_runtime(ctx, go, start=False)
    if want_json(ctx, as_json):
        echo_json(data)
        return
    if not data["servers"] and not data["unavailable"]:
        click.echo("(no MCP servers configured)")
    elif data["servers"]:
        wn = max(len(safe(r["name"])) for r in data["servers"])
        wt = max(len(r["transport"]) for r in data["servers"])
        for r in data["servers"]:
            off = "" if r["enabled"] else "  (disabled)"
            click.echo(f"{safe(r['name']):<{wn}}  {safe(r['transport']):<{wt}}  {safe(r['target'])}{off}")
            click.echo(f"{'':<{wn}}  {'':<{wt}}  from {safe(r['source'] or r['origin'])}")
    for u in data["unavailable"]:
        click.echo(f"{safe(u['name'])}  ({u['state']})  from {safe(u['source'] or u['origin'])}")
        click.echo(f"  {safe(u['reason'])}")
    for err in data["errors"]:
        click.echo(f"! {safe(err)}", err=True)


@mcp.command("status")
@JSON_FLAG
@click.pass_context
def mcp_status(ctx: click.Context, as_json: bool) -> None:
    """Start every enabled server and show its state. Exits 1 when one failed."""

    async def go(rt: Runtime) -> dict[str, Any]:
        manager = manager_of(rt)
        try:
            await _start(manager, None)
            rows = []
            for s in manager.status():
                server = manager.servers.get(s.name)
                rows.append(
                    {
                        "name": s.name,
                        "state": s.state.value,
                        "tools": s.tools,
                        "detail": s.detail,
                        "source": s.source,
                        "startup_s": round(server.startup_s, 3) if server and server.startup_s else None,
                        "stderr_tail": server.diagnostics.stderr.tail(10)
                        if server and s.state.value == "failed"
                        else [],
                    }
                )
            return {"servers": rows, "errors": _errors(rt)}
        finally:
            await manager.stop()

    data = run_with_runtime(ctx, go, start=False)
    failed = any(r["state"] == "failed" for r in data["servers"])
    if want_json(ctx, as_json):
        echo_json(data)
    else:
        if not data["servers"]:
            click.echo("(no MCP servers configured)")
        width = max((len(r["name"]) for r in data["servers"]), default=0)
        for r in data["servers"]:
            mark = "!" if r["state"] == "failed" else "?" if r["state"] == "needs_authorization" else " "
            tools = f"{r['tools']} tools" if r["state"] == "ready" else ""
            took = f" in {r['startup_s']:g} s" if r["startup_s"] else ""
            click.echo(f"{mark} {r['name']:<{width}}  {r['state']:<8} {tools:<9} {r['detail']}{took}")
            for line in r["stderr_tail"]:
                click.echo(f"    | {line}")
        for err in data["errors"]:
            click.echo(f"! {err}", err=True)
    ctx.exit(1 if failed else 0)


@mcp.command("tools")
@click.argument("server")
@JSON_FLAG
@click.pass_context
def mcp_tools(ctx: click.Context, server: str, as_json: bool) -> None:
    """Start SERVER and list its tools (canonical id, exported name, domain/capability)."""

    def tools(rt: Runtime, s: ServerLifecycle) -> dict[str, Any]:
        specs = rt.tools.by_provider(s.provider_key)
        return {
            "tools": [
                {
                    "id": spec.id,
                    "exported_name": spec.exported_name,
                    "domain": spec.domain.value,
                    "capability": spec.capability.value,
                    "description": spec.description,
                }
                for spec in specs
            ],
            # listed by the server, not offered to the model (a tool that must run as a task)
            "not_offered": [
                {"id": f"{s.config.tool_prefix or s.name}.{tool}", "reason": why}
                for tool, why in s.withheld_tools.items()
            ],
        }

    data = _started_alone(ctx, server, tools)
    if want_json(ctx, as_json):
        echo_json(data)
    elif data["state"] != "ready":
        click.echo(f"kairox: MCP server {server} is {data['state']}: {data['detail']}", err=True)
    else:
        rows = data["tools"]
        if not rows:
            click.echo("(no tools)")
        wid = max((len(r["id"]) for r in rows), default=0)
        for r in rows:
            first = (r["description"] or "").strip().splitlines()
            click.echo(f"{r['id']:<{wid}}  {r['domain']:<7} {r['capability']:<7} {safe(first[0] if first else '')}")
        for r in data.get("not_offered", []):
            click.echo(f"- {safe(r['id'])}  not offered: {safe(r['reason'])}")
    ctx.exit(0 if data["state"] == "ready" else 1)


@mcp.command("logs")
@click.argument("server")
@click.option("--lines", "-n", default=50, show_default=True, help="How many lines to show.")
@JSON_FLAG
@click.pass_context
def mcp_logs(ctx: click.Context, server: str, lines: int, as_json: bool) -> None:
    """Start SERVER and show the tail of its stderr (and MCP log messages)."""

    def logs(rt: Runtime, s: ServerLifecycle) -> dict[str, Any]:
        return {"exit_code": s.diagnostics.exit_code, "lines": s.stderr_tail(lines)}

    data = _started_alone(ctx, server, logs)
    if want_json(ctx, as_json):
        echo_json(data)
        return
    click.echo(f"# {server}: {data['state']}" + (f" ({data['detail']})" if data["detail"] else ""))
    for line in data["lines"]:
        click.echo(line)
    if not data["lines"]:
        click.echo("(nothing on stderr)")
