"""``kairox mcp import``: bring in the MCP servers configured in other clients."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kairox import ApprovalAnswer
from kairox.errors import ConfigError
from kairox.ext import file_write_spec, user_home, workspace_config_files
from kairox.ext import terminal_safe as safe
from kairox_cli import CommandFailed, echo_json, run_with_runtime, scope_option, want_json

from .importer import KINDS, ImportPlan, read_sources, server_names_in, write_servers

if TYPE_CHECKING:
    from kairox import ApprovalRequest, Runtime

__all__ = ["WRITE_SPEC", "import_cmd"]

#: the write the policy engine is asked about (as the built-in file-write tool)
WRITE_SPEC = file_write_spec("write a file (kairox mcp import)", provider="mcp")


def _kinds(values: tuple[str, ...]) -> tuple[str, ...]:
    picked: list[str] = []
    for value in values:
        for kind in (k.strip() for k in value.split(",")):
            if not kind:
                continue
            if kind not in KINDS:
                raise click.BadParameter(f"{kind!r} is not one of {', '.join(KINDS)}", param_hint="--from")
            if kind not in picked:
                picked.append(kind)
    return tuple(picked) or KINDS


def config_target(rt: Runtime, scope: str) -> Path:
    """The ``kairox.toml`` an import of ``scope`` writes."""
    if scope == "user":
        home: Path = rt.home if rt.home is not None else user_home(rt.env)
        return home / "kairox.toml"
    hidden, plain = workspace_config_files(rt.workspace)
    return hidden if hidden.exists() and not plain.exists() else plain


def _present(rt: Runtime, target: Path) -> dict[str, str]:
    """Servers kairox already has, by name, with where from."""
    from .manager import manager_of

    present: dict[str, str] = {}
    manager = manager_of(rt)
    for name, definition in manager.definitions.items():
        present[name] = f"already configured (from {definition.source or definition.origin})"
    for name, held in manager.unavailable.items():
        present.setdefault(name, f"already configured (from {held.source or held.origin})")
    for name in server_names_in(target):
        present[name] = f"already in {target}"
    return present


def _echo_plan(plan: ImportPlan, target: Path, *, heading: str) -> None:
    if plan.servers:
        n = len(plan.servers)
        click.echo(f"{heading} {n} server{'s' if n != 1 else ''} to {safe(str(target))}:")
        rows = [s.row() for s in plan.servers]
        wn = max(len(safe(r["name"])) for r in rows)
        wt = max(len(r["transport"]) for r in rows)
        for r in rows:
            target_text = r.get("url") or " ".join([r.get("command", ""), *r.get("args", [])])
            click.echo(f"  {safe(r['name']):<{wn}}  {r['transport']:<{wt}}  {safe(target_text)}")
            click.echo(f"  {'':<{wn}}  {'':<{wt}}  from {r['from']}: {safe(r['file'])}")
            for note in r.get("notes", []):
                click.echo(f"  {'':<{wn}}  {'':<{wt}}  note: {safe(note)}")
    else:
        click.echo("nothing to import")
    if plan.skipped:
        click.echo("skipped:")
        for s in plan.skipped:
            click.echo(f"  {safe(s.name)}  ({s.kind}: {safe(s.file)})  {safe(s.reason)}")
    for error in plan.errors:
        click.echo(f"kairox: not imported: {safe(str(error))}", err=True)
    needed = [v for v in plan.variables() if v.kind != "reference"]
    if needed:
        click.echo("set these environment variables for kairox (the file holds only ${VAR} references):")
        for v in needed:
            what = (
                f"the value of {v.where} in {v.file}"
                if v.kind == "secret" and not v.where.startswith("inputs.")
                else f"input {v.where.removeprefix('inputs.')} of {v.file}"
                + (f" ({v.description})" if v.description else "")
            )
            click.echo(f"  {v.name}  for {safe(v.server)}: {safe(what)}")


def _can_ask() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


@click.command("import")
@click.option(
    "--from",
    "kinds",
    multiple=True,
    metavar="KIND",
    help=f"Only these clients (repeatable or comma-separated): {', '.join(KINDS)}.",
)
@scope_option("Write ./kairox.toml (workspace) or $KAIROX_HOME/kairox.toml (user).")
@click.option("--dry-run", is_flag=True, help="Only show what would be imported.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--yes", "-y", is_flag=True, help="Write without asking.")
@click.pass_context
def import_cmd(ctx: click.Context, kinds: tuple[str, ...], scope: str, dry_run: bool, as_json: bool, yes: bool) -> None:
    """Import the MCP servers configured in Claude Desktop, Claude Code, Cursor, VS Code,
    Codex, Gemini CLI, Zed and Windsurf into kairox.toml.

    Servers kairox already has are skipped. A secret found in a source (an env value, an
    Authorization header, a token in a URL) is written as a ${VAR} reference, and you are
    told which variable to set. Asks before writing (--yes does not).
    """
    picked = _kinds(kinds)
    json_out = want_json(ctx, as_json)

    async def go(rt: Runtime) -> dict[str, Any]:
        plan = read_sources(
            rt.workspace, rt.env, kinds=picked, user_scope=scope == "user", workspace_root=rt.workspace_root
        )
        target = config_target(rt, scope)
        try:
            plan.skip(_present(rt, target))
        except ConfigError as exc:  # the target cannot be edited: show the plan, write nothing
            return {"plan": plan, "target": target, "written": False, "refused": str(exc)}
        result: dict[str, Any] = {"plan": plan, "target": target, "written": False, "refused": None}
        if dry_run or not plan.servers:
            return result
        if not yes:
            if not _can_ask():
                result["refused"] = (
                    f"not writing {target}: nobody can confirm here (no terminal); "
                    "pass --yes to write, or --dry-run to only look"
                )
                return result
            if not json_out:
                _echo_plan(plan, target, heading="kairox mcp import would add")
                result["shown"] = True
            import anyio.to_thread

            n = len(plan.servers)
            question = f"add {n} server{'s' if n != 1 else ''} to {target}?"
            ok = await anyio.to_thread.run_sync(lambda: click.confirm(question, default=False, err=True))
            if not ok:
                result["refused"] = f"not written: {target} is unchanged"
                return result

        def confirmed(_request: ApprovalRequest) -> ApprovalAnswer:  # the user said yes (or --yes)
            return ApprovalAnswer.ALLOW_ONCE

        await rt.authorize(WRITE_SPEC, {"path": str(target), "purpose": "kairox mcp import"}, approver=confirmed)
        write_servers(target, plan.servers)
        result["written"] = True
        return result

    result = run_with_runtime(ctx, go, start=False)
    plan: ImportPlan = result["plan"]
    target: Path = result["target"]
    if json_out:
        echo_json(
            {
                **plan.to_dict(),
                "target": str(target),
                "scope": scope,
                "dry_run": dry_run,
                "written": result["written"],
            }
        )
    elif result.get("shown"):
        if result["written"]:
            n = len(plan.servers)
            click.echo(f"added {n} server{'s' if n != 1 else ''} to {safe(str(target))}")
    else:
        _echo_plan(plan, target, heading="added" if result["written"] else "kairox mcp import would add")
    if result["refused"]:
        raise CommandFailed("error", result["refused"])
    if result["written"] and scope == "workspace":
        click.echo("the workspace's kairox.toml changed: `kairox trust` lets its servers run", err=True)
