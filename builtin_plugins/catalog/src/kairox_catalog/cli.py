"""``kairox catalog``: list, search, show, install, uninstall, sources."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kairox.errors import PolicyDenied
from kairox_cli import echo_json, parse_pairs, run_with_runtime, scope_option, tty_approver, want_json

from .catalog import Catalog, CatalogSnapshot, EntryNotFound
from .install import Installer, InstallError, InstallOptions
from .model import KINDS, CatalogEntry, Input, entry_to_dict
from .progress import TerminalProgress
from .requirements import RequirementCheck

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["catalog"]

T = TypeVar("T")

JSON_FLAG = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
REFRESH = click.option("--refresh", is_flag=True, help="Revalidate remote sources now, ignoring the cache TTL.")
KIND = click.option("--kind", type=click.Choice(KINDS), default=None, help="Only this kind of entry.")


def _err(message: str) -> None:
    click.echo(message, err=True)


def _progress() -> TerminalProgress:
    return TerminalProgress(_err, heartbeat=5.0)


def _run(ctx: click.Context, fn: Callable[[Runtime], Awaitable[T]], *, yes: bool = False) -> T:
    try:
        result: T = run_with_runtime(ctx, fn, start=False, approver=tty_approver(yes))
        return result
    except EntryNotFound as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None


async def _snapshot(rt: Runtime, *, sources: tuple[str, ...] = (), refresh: bool = False) -> CatalogSnapshot:
    return await Catalog(rt, progress=_progress()).load(sources=sources or None, refresh=refresh)


def _row(entry: CatalogEntry) -> str:
    what = entry.title if entry.title and entry.title != entry.name else ""
    desc = entry.description if len(entry.description) <= 70 else entry.description[:67] + "..."
    if entry.unavailable:
        desc = "(not installable: a template) " + desc
    return f"{entry.name:<22} {entry.kind:<11} {entry.source:<10} {(what + ': ' if what else '') + desc}"


def _report_skipped(snap: CatalogSnapshot) -> None:
    skipped = [e for e in snap.errors if e.where != "document"]
    for err in snap.errors:
        if err.where == "document":
            _err(f"kairox: catalog source {err.source}: {err.reason}")
    if skipped:
        _err(f"kairox: {len(skipped)} catalog entries were skipped (kairox catalog sources shows why)")


@click.group()
def catalog() -> None:
    """Browse and install MCP servers, plugins and skills from the catalog sources."""


@catalog.command("list")
@click.option("--source", "sources", multiple=True, help="Only entries of this source (repeatable).")
@KIND
@REFRESH
@JSON_FLAG
@click.pass_context
def list_cmd(ctx: click.Context, sources: tuple[str, ...], kind: str | None, refresh: bool, as_json: bool) -> None:
    """Every entry of the catalog (name, kind, source, description)."""
    snap = _run(ctx, lambda rt: _snapshot(rt, sources=sources, refresh=refresh))
    entries = [e for e in snap.entries if kind is None or e.kind == kind]
    if want_json(ctx, as_json):
        echo_json(
            {
                "entries": [entry_to_dict(e) for e in entries],
                "errors": [str(e) for e in snap.errors],
                "warnings": list(snap.warnings),
            }
        )
        return
    if not entries:
        click.echo("(no entries)")
    for entry in entries:
        click.echo(_row(entry))
    _report_skipped(snap)


@catalog.command("search")
@click.argument("query", nargs=-1, required=True)
@KIND
@click.option("--limit", type=int, default=20, show_default=True, help="At most this many results.")
@REFRESH
@JSON_FLAG
@click.pass_context
def search_cmd(
    ctx: click.Context, query: tuple[str, ...], kind: str | None, limit: int, refresh: bool, as_json: bool
) -> None:
    """Entries matching every word of QUERY, best first (name, title, tags, description)."""
    text = " ".join(query)
    snap = _run(ctx, lambda rt: _snapshot(rt, refresh=refresh))
    hits = snap.search(text, limit=limit, kinds=[kind] if kind else None)
    if want_json(ctx, as_json):
        echo_json({"query": text, "results": [{"score": h.score, **entry_to_dict(h.entry)} for h in hits]})
        return
    _report_skipped(snap)
    if not hits:
        click.echo(f"nothing matches {text!r}")
        ctx.exit(1)
    for hit in hits:
        click.echo(_row(hit.entry))


def _input_line(item: Input) -> str:
    flags = [w for w, on in (("required", item.required), ("secret", item.secret)) if on]
    if item.default is not None:
        flags.append(f"default {item.default!r}")
    label = {"env": item.name, "header": f"header {item.name}", "arg": f"argument {item.placeholder}"}.get(
        item.kind, f"url {item.placeholder}"
    )
    return (
        f"  {label}"
        + (f" ({', '.join(flags)})" if flags else "")
        + (f": {item.description}" if item.description else "")
    )


def _print_entry(entry: CatalogEntry, checks: list[RequirementCheck]) -> None:
    click.echo(f"{entry.name}  ({entry.kind}, from {entry.source})")
    if entry.title and entry.title != entry.name:
        click.echo(f"  {entry.title}")
    if entry.description:
        click.echo(f"  {entry.description}")
    if entry.version:
        click.echo(f"version:  {entry.version}")
    if entry.launch is not None:
        click.echo(f"launch:   {entry.launch.command_line()}")
    if entry.install is not None:
        click.echo(f"from:     {entry.install.describe()}")
    if entry.install_hint:
        click.echo(f"install:  {entry.install_hint}")
    for label, value in (("homepage", entry.homepage), ("repo", entry.repository)):
        if value:
            click.echo(f"{label + ':':<10}{value}")
    if entry.tags:
        click.echo(f"tags:     {', '.join(entry.tags)}")
    if checks:
        click.echo("requirements on this machine:")
        for check in checks:
            click.echo(f"  {'ok' if check.ok else '!!'} {check.describe()}")
    if entry.inputs:
        click.echo("inputs:")
        for item in entry.inputs:
            click.echo(_input_line(item))
    for note in entry.notes:
        click.echo(f"note: {note}")
    if entry.unavailable:
        click.echo(f"warning: not installable: {entry.unavailable}")


@catalog.command("show")
@click.argument("name")
@JSON_FLAG
@click.pass_context
def show_cmd(ctx: click.Context, name: str, as_json: bool) -> None:
    """One entry in full, and whether its requirements are met on this machine."""

    async def go(rt: Runtime) -> tuple[CatalogEntry, list[RequirementCheck], list[CatalogEntry]]:
        snap = await _snapshot(rt)
        entry = snap.get(name)
        return entry, await Installer(rt).check(entry), snap.find(name)[1:]

    entry, checks, others = _run(ctx, go)
    if want_json(ctx, as_json):
        echo_json({**entry_to_dict(entry), "checks": [c.to_dict() for c in checks]})
        return
    _print_entry(entry, checks)
    for other in others:
        click.echo(f"also in source {other.source}: kairox catalog show {other.key}")


def _prompter(interactive: bool) -> Callable[[Input, bool], str | None]:
    def ask(item: Input, secret: bool) -> str | None:
        if not interactive:
            return None
        what = f"{item.name}" + (f" ({item.description})" if item.description else "")
        if secret:
            _err(f"{item.variable} is a secret: it is not written to the file (the config reads ${{{item.variable}}}).")
            _err("Enter it to verify the install now, or leave it empty and export it later.")
            value: str = click.prompt(what, hide_input=True, default="", show_default=False, err=True)
            return value or None
        answer: str = click.prompt(what, default=item.default, err=True)
        return answer

    return ask


@catalog.command("install")
@click.argument("name")
@scope_option("Write to the workspace kairox.toml or the user's ($KAIROX_HOME).")
@click.option("--input", "inputs", multiple=True, metavar="NAME=VALUE", help="A value for a declared input.")
@click.option("--yes", "-y", is_flag=True, help="Approve the policy's questions (never overrides a deny).")
@click.option("--force", is_flag=True, help="Replace an existing entry of the same name.")
@click.option("--no-prepare", is_flag=True, help="Do not pre-install the packages.")
@click.option("--no-verify", is_flag=True, help="Do not start the server once after installing.")
@click.option("--ignore-requirements", is_flag=True, help="Install even when a requirement is not met.")
@JSON_FLAG
@click.pass_context
def install_cmd(
    ctx: click.Context,
    name: str,
    scope: str,
    inputs: tuple[str, ...],
    yes: bool,
    force: bool,
    no_prepare: bool,
    no_verify: bool,
    ignore_requirements: bool,
    as_json: bool,
) -> None:
    """Install NAME: check requirements, write the config, pre-install, start once to verify."""
    values = parse_pairs(inputs, option="--input", metavar="NAME")
    interactive = sys.stdin.isatty() and sys.stderr.isatty()
    options = InstallOptions(
        scope=scope,  # type: ignore[arg-type]
        values=values,
        prepare=not no_prepare,
        verify=not no_verify,
        force=force,
        ignore_requirements=ignore_requirements,
    )

    async def go(rt: Runtime) -> dict[str, Any]:
        progress = _progress()
        snap = await _snapshot(rt)
        entry = snap.get(name)
        installer = Installer(rt, progress=progress, prompter=_prompter(interactive))
        try:
            report = await installer.install(entry, options)
        except (InstallError, PolicyDenied) as exc:
            return {"ok": False, "error": str(exc)}
        return report.to_dict()

    data = _run(ctx, go, yes=yes)
    if want_json(ctx, as_json):
        echo_json(data)
    if "error" in data:
        if not want_json(ctx, as_json):
            _err(f"kairox: install failed: {data['error']}")
        ctx.exit(1)
    if not want_json(ctx, as_json):
        _print_report(data)
    ctx.exit(0 if data["ok"] else 1)


def _print_report(data: dict[str, Any]) -> None:
    for warning in data["warnings"]:
        _err(f"  ! {warning}")
    v = data["verification"]
    where = f"{data['target']} ({data['scope']})"
    if v is None:
        click.echo(f"installed {data['name']} into {where}")
    elif v["outcome"] == "ready":
        click.echo(f"installed {data['name']} into {where}: it starts and offers {v['tools']} tools")
    elif v["outcome"] == "unavailable":
        click.echo(f"installed {data['name']} into {where}; not started: {v['detail']}")
    else:
        click.echo(f"installed {data['name']} into {where}, but it did not reach Ready: {v['detail']}")
        click.echo(f"  fix it, or remove it with: kairox catalog uninstall {data['name']}")


@catalog.command("uninstall")
@click.argument("name")
@click.option("--scope", type=click.Choice(["user", "workspace"]), default=None, help="Only this scope.")
@click.option("--yes", "-y", is_flag=True, help="Approve the policy's questions (never overrides a deny).")
@JSON_FLAG
@click.pass_context
def uninstall_cmd(ctx: click.Context, name: str, scope: str | None, yes: bool, as_json: bool) -> None:
    """Remove what `kairox catalog install NAME` added (config entry, plugin or skill directory)."""

    async def go(rt: Runtime) -> dict[str, Any]:
        try:
            removed = await Installer(rt).uninstall(name, scope=scope)  # type: ignore[arg-type]
        except (InstallError, PolicyDenied) as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True, "removed": removed}

    data = _run(ctx, go, yes=yes)
    if want_json(ctx, as_json):
        echo_json(data)
    elif data["ok"]:
        for item in data["removed"]:
            click.echo(f"removed {item}")
    else:
        _err(f"kairox: uninstall failed: {data['error']}")
    ctx.exit(0 if data["ok"] else 1)


@catalog.command("sources")
@REFRESH
@JSON_FLAG
@click.pass_context
def sources_cmd(ctx: click.Context, refresh: bool, as_json: bool) -> None:
    """Catalog sources, how many entries each gave, and the entries skipped (with the reason)."""
    snap = _run(ctx, lambda rt: _snapshot(rt, refresh=refresh))
    if want_json(ctx, as_json):
        echo_json(
            {
                "sources": [
                    {
                        "name": s.name,
                        "owner": s.owner,
                        "description": s.description,
                        "entries": s.entries,
                        "skipped": s.errors,
                        "origin": s.origin,
                        "warnings": list(s.warnings),
                        "failed": s.failed,
                    }
                    for s in snap.sources
                ],
                "skipped": [
                    {"source": e.source, "where": e.where, "name": e.name, "reason": e.reason} for e in snap.errors
                ],
            }
        )
        return
    for s in snap.sources:
        origin = f", {s.origin}" if s.origin else ""
        click.echo(f"{s.name:<14} {s.entries:>5} entries, {s.errors} skipped{origin}  {s.description}  [{s.owner}]")
        if s.failed:
            click.echo(f"  ! failed: {s.failed}")
        for warning in s.warnings:
            click.echo(f"  ! {warning}")
    for err in snap.errors:
        click.echo(f"skipped {err}")
