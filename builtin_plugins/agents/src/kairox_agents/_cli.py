"""``kairox agents list|show``: the agents a host can run, and where each comes from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kairox.ext import terminal_safe as safe
from kairox_cli import echo_json, run_with_runtime, want_json

from ._model import AgentError
from ._plugin import agents_of

if TYPE_CHECKING:
    from kairox import Runtime

    from ._model import AgentDef
    from ._registry import AgentRegistry

__all__ = ["agents"]

JSON_FLAG = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def _one_line(text: str, width: int = 72) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."


def agent_dict(registry: AgentRegistry, agent: AgentDef) -> dict[str, Any]:
    return {
        "name": agent.name,
        "description": agent.description,
        "scope": agent.scope,
        "origin": agent.source,
        "file": agent.file,
        "tools": None if agent.tools is None else list(agent.tools),
        "disallowed_tools": list(agent.disallowed_tools),
        "model": agent.model,
        "shadows": [{"scope": s.scope, "origin": s.source, "file": s.file} for s in registry.shadowed(agent.name)],
        "warnings": list(agent.warnings),
    }


def _problems(registry: AgentRegistry) -> tuple[list[str], list[str]]:
    return [str(e) for e in registry.errors], list(registry.warnings)


@click.group()
def agents() -> None:
    """Agents (Claude Code subagents): from bundles, .claude/agents/ and ~/.claude/agents/."""


@agents.command("list")
@JSON_FLAG
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool) -> None:
    """Every agent (one per name) with where it comes from, then the files that did not load."""

    async def go(rt: Runtime) -> dict[str, Any]:
        reg = agents_of(rt)
        errors, warnings = _problems(reg)
        return {"agents": [agent_dict(reg, a) for a in reg.all()], "errors": errors, "warnings": warnings}

    data = run_with_runtime(ctx, go, start=False)
    if want_json(ctx, as_json):
        echo_json(data)
        return
    if not data["agents"]:
        click.echo("no agents (put them in .claude/agents/ or ~/.claude/agents/, or install a bundle that has some)")
    for a in data["agents"]:
        tools = "all tools" if a["tools"] is None else ", ".join(a["tools"]) or "no tools"
        model = f"  model {a['model']}" if a["model"] else ""
        click.echo(safe(f"{a['name']:<28} {a['origin']:<20} {_one_line(a['description'], 60)}"))
        click.echo(safe(f"{'':<28} {tools}{model}"))
    for error in data["errors"]:
        click.echo(f"error: {safe(error)}", err=True)
    for warning in data["warnings"]:
        click.echo(f"warning: {safe(warning)}", err=True)


@agents.command("show")
@click.argument("name")
@click.option("--check-tools", is_flag=True, help="Start the tool providers and check the agent's tools against them.")
@JSON_FLAG
@click.pass_context
def show_cmd(ctx: click.Context, name: str, check_tools: bool, as_json: bool) -> None:
    """One agent: where it comes from, its tools, model and prompt (exit 1 when there is none)."""

    async def go(rt: Runtime) -> dict[str, Any] | str:
        reg = agents_of(rt)
        try:
            agent = reg.require(name)
        except AgentError as exc:
            return exc.message
        data = agent_dict(reg, agent) | {"prompt": agent.prompt, "extra": dict(agent.extra)}
        if check_tools:
            run = reg.prepare(agent.name, rt.tools)
            data["resolved_tools"] = list(run.tools)
            data["unknown_tools"] = list(run.unknown_tools)
        return data

    data = run_with_runtime(ctx, go, start=check_tools)
    if isinstance(data, str):
        click.echo(f"kairox: {safe(data)}", err=True)
        raise click.exceptions.Exit(1)
    if want_json(ctx, as_json):
        echo_json(data)
        return
    tools = "all tools" if data["tools"] is None else ", ".join(data["tools"]) or "no tools"
    lines = [
        f"name:        {data['name']}",
        f"description: {data['description']}",
        f"origin:      {data['origin']} ({data['scope']})",
        f"file:        {data['file']}",
        f"tools:       {tools}",
    ]
    if data["disallowed_tools"]:
        lines.append(f"disallowed:  {', '.join(data['disallowed_tools'])}")
    lines.append(f"model:       {data['model'] or '(the host model)'}")
    if "resolved_tools" in data:
        lines.append(f"resolves to: {', '.join(data['resolved_tools']) or '(no registered tool)'}")
        if data["unknown_tools"]:
            lines.append(f"unknown:     {', '.join(data['unknown_tools'])} (no registered tool has these names)")
    for s in data["shadows"]:
        lines.append(f"shadows:     {s['origin']} ({s['scope']}) {s['file']}")
    for w in data["warnings"]:
        lines.append(f"warning:     {w}")
    click.echo(safe("\n".join(lines), newlines=True))
    click.echo("")
    click.echo(safe(data["prompt"], newlines=True))
