"""``kairox plugin ...``: list, inspect, install, uninstall, enable, disable, trust, config."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kairox.errors import KairoxError
from kairox_cli import echo_json, run_with_runtime, scope_option, tty_approver, want_json

if TYPE_CHECKING:
    from kairox import Runtime

    from .inventory import BundleRecord

__all__ = ["plugin_group"]

JSON_FLAG = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
SCOPE = scope_option("user: $KAIROX_HOME; workspace: <workspace>/.kairox.", default="user")
STATE_WORDS = {"available": "enabled"}


@click.group("plugin")
def plugin_group() -> None:
    """Bundles: the plugin directories of Claude Code, Codex, Philont and kairox.

    A bundle is a directory with a manifest (.claude-plugin/, .codex-plugin/,
    .kairox-plugin/, Philont plugin.json) that brings skills, hooks, MCP and
    language servers. Python packages that extend kairox are `kairox plugins`."""


def _summary(inventory: list[dict[str, Any]]) -> str:
    counts = Counter(i["kind"] for i in inventory if i["enabled"])
    return ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in sorted(counts.items())) or "-"


@plugin_group.command("list")
@JSON_FLAG
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool) -> None:
    """Every plugin found, its format, scope and whether it loads (and why not)."""
    from .loader import survey

    async def go(rt: Runtime) -> list[dict[str, Any]]:
        return [r.view().to_dict() for r in survey(rt)]

    views = _run(ctx, go)
    if want_json(ctx, as_json):
        echo_json({"plugins": views})
        return
    if not views:
        click.echo("(no plugins found)")
        return
    w = max(len(v["name"]) for v in views)
    for v in views:
        state = STATE_WORDS.get(v["state"], v["state"])
        fmt = "+".join(v.get("formats") or [v["format"]])
        click.echo(f"{v['name']:<{w}}  {fmt:<13} {v['scope']:<9} {state:<12} {_summary(v['inventory'])}")
        if v["reason"]:
            click.echo(f"{'':<{w}}  ! {v['reason']}")
        # two manifests of one directory that disagree, and files not read (a link leading
        # outside the bundle): each said here (the rest is in `plugin inspect`)
        for p in v["problems"]:
            if p.get("kind") in ("manifest-conflict", "refused"):
                click.echo(f"{'':<{w}}  ! {p['file'] or v['root']}: {p['message']}")


def _inspect_record(rt: Runtime, target: str) -> BundleRecord:
    from .discovery import Candidate, DiscoveryContext, Location, probe
    from .errors import ManifestError
    from .inventory import evaluate
    from .loader import survey

    path = Path(target).expanduser()
    if os.sep in target or target.startswith(".") or path.is_dir():
        if not path.is_dir():
            raise click.BadParameter(f"{target} is not a directory", param_hint="PATH")
        ctx = DiscoveryContext.from_runtime(rt)
        root = Path(os.path.realpath(path))
        manifest, error = probe(root, ctx.formats, reader=ctx.bundle(root), home=ctx.home)
        if manifest is None and error is None:
            error = ManifestError("not a plugin (no manifest format recognises it)", file=str(root))
        inside_ws = str(root).startswith(str(rt.workspace) + os.sep)
        location = Location(root, "workspace" if inside_ws else "user", 0, "command line", "plugin")
        rec = evaluate(Candidate(root, location, manifest, error), ctx)
        from .dependencies import resolve_dependencies

        resolve_dependencies([rec], survey(rt))
        return rec
    records = [r for r in survey(rt) if r.name == target]
    if not records:
        raise click.BadParameter(f"no plugin named {target!r} was found", param_hint="NAME")
    return next((r for r in records if r.state != "shadowed"), records[0])


@plugin_group.command("inspect")
@click.argument("target", metavar="PATH|NAME")
@JSON_FLAG
@click.pass_context
def inspect_cmd(ctx: click.Context, target: str, as_json: bool) -> None:
    """Inventory, permissions, compatibility, trust and problems of one plugin."""

    async def go(rt: Runtime) -> dict[str, Any]:
        return _inspect_record(rt, target).view().to_dict()

    data = _run(ctx, go)
    if want_json(ctx, as_json):
        echo_json(data)
    else:
        _print_view(data)
    ctx.exit(1 if data["state"] == "failed" else 0)


def _print_view(d: dict[str, Any]) -> None:
    fmt = "+".join(d.get("formats") or [d["format"]])
    click.echo(f"{d['name']} {d['version'] or ''}".rstrip() + f"  ({fmt}, {d['scope']})")
    if d["description"]:
        click.echo(f"  {d['description']}")
    click.echo(f"root:          {d['root']}")
    state = STATE_WORDS.get(d["state"], d["state"])
    click.echo(f"state:         {state}" + (f" ({d['reason']})" if d["reason"] else ""))
    pub = d["publisher"] or {}
    click.echo(f"trust:         {d['trust']} (declared){', trusted here' if d['trusted'] else ', not trusted here'}")
    if pub:
        click.echo(
            f"publisher:     {' '.join(str(v) for v in (pub.get('name'), pub.get('email'), pub.get('url')) if v)}"
        )
    perms = d["permissions"]
    if perms:
        parts = [f"{k}={v}" for k, v in perms.items() if v is not None]
        click.echo(f"permissions:   {', '.join(parts) or '(none)'}")
    compat = d["compatibility"]
    declared = [f"kairox {compat['kairoxVersion']}"] if compat.get("kairoxVersion") else []
    declared += [f"platforms {', '.join(compat['platforms'])}"] if compat.get("platforms") else []
    declared += [f"requires {r}" for r in compat.get("requires", [])]
    ok = "compatible" if compat.get("compatible", True) else "INCOMPATIBLE: " + "; ".join(compat.get("problems", []))
    click.echo(f"compatibility: {ok}" + (f" ({'; '.join(declared)})" if declared else ""))
    meta = d.get("metadata") or {}
    if meta.get("pluginData"):
        click.echo(f"data folder:   {meta['pluginData']}")
    extensions = meta.get("extensions") or {}
    if extensions:  # Agent Plugins client data: kept and shown, never run (kairox implements none)
        click.echo("extensions:    (kept, not used by kairox)")
        for namespace, value in extensions.items():
            click.echo(f"  {namespace}: {json.dumps(value, sort_keys=True)}")
    click.echo("inventory:")
    if not d["inventory"]:
        click.echo("  (nothing)")
    for item in d["inventory"]:
        flag = "on " if item["enabled"] else "off"
        loaded = " loaded" if item["loaded"] else ""
        detail = f"  ({item['detail']})" if item["detail"] else ""
        click.echo(f"  [{flag}] {item['kind']}/{item['name']}{loaded}  {item['source']}{detail}")
    if d["problems"]:
        click.echo("problems:")
        for p in d["problems"]:
            where = ": ".join(x for x in (p["file"], p["path"]) if x)
            click.echo(f"  {p['severity']}: {where}: {p['message']}" if where else f"  {p['severity']}: {p['message']}")


@plugin_group.command("lint")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@JSON_FLAG
@click.pass_context
def lint_cmd(ctx: click.Context, path: Path, as_json: bool) -> None:
    """Check the plugin directory PATH against every format that claims it.

    Each manifest format that recognises PATH (Claude Code, Codex, Agent Plugins, kairox,
    Philont, ...) reads it on its own; then every skill, command, agent and output style
    and every MCP server entry it names is read as kairox would load it. Runs nothing.
    Exits 1 when there is an error."""
    root = Path(os.path.realpath(path))
    report = _run(ctx, lambda rt: _lint(rt, root))
    if want_json(ctx, as_json):
        echo_json(report.to_dict())
    else:
        formats = ", ".join(report.formats) or "none"
        click.echo(f"{report.root}: read as {formats}")
        for finding in report.findings:
            click.echo(f"  {finding.render()}")
        warnings = len(report.findings) - report.errors
        click.echo(f"{report.errors} error{'s' * (report.errors != 1)}, {warnings} warning{'s' * (warnings != 1)}")
    ctx.exit(1 if report.errors else 0)


async def _lint(rt: Runtime, path: Path) -> Any:
    from .lint import lint_plugin

    return lint_plugin(rt, path)


@plugin_group.command("install")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@SCOPE
@click.option("--force", is_flag=True, help="Replace an installed plugin of the same name.")
@click.option("--yes", "-y", is_flag=True, help="Approve what the policy would ask about (never overrides a deny).")
@JSON_FLAG
@click.pass_context
def install_cmd(ctx: click.Context, path: Path, scope: str, force: bool, yes: bool, as_json: bool) -> None:
    """Copy the plugin at PATH into the user or workspace plugin directory."""
    from .install import install_bundle

    approver = tty_approver(yes)

    async def go(rt: Runtime) -> dict[str, Any]:
        result = await install_bundle(rt, path, scope=scope, approver=approver, force=force)
        return {"name": result.name, "path": str(result.path), "scope": scope, "replaced": result.replaced}

    data = _run(ctx, go, approver)
    if want_json(ctx, as_json):
        echo_json(data)
    else:
        verb = "replaced" if data["replaced"] else "installed"
        click.echo(f"{verb} {data['name']} in {data['path']} ({scope})")


@plugin_group.command("uninstall")
@click.argument("name")
@SCOPE
@click.option("--yes", "-y", is_flag=True, help="Approve what the policy would ask about.")
@click.pass_context
def uninstall_cmd(ctx: click.Context, name: str, scope: str, yes: bool) -> None:
    """Remove an installed plugin from the user or workspace plugin directory."""
    from .install import uninstall_bundle

    approver = tty_approver(yes)

    async def go(rt: Runtime) -> str:
        return str(await uninstall_bundle(rt, name, scope=scope, approver=approver))

    removed = _run(ctx, go, approver)
    click.echo(f"removed {removed}")


def _run(ctx: click.Context, fn: Any, approver: Any = None) -> Any:
    """Run ``fn(runtime)`` (no providers started); a kairox or OS error is one line on stderr and exit 1."""

    async def guarded(rt: Runtime) -> tuple[str, Any]:
        try:
            return "ok", await fn(rt)
        except (KairoxError, OSError) as exc:
            return "error", exc
        except click.ClickException as exc:
            return "click", exc

    kind, value = run_with_runtime(ctx, guarded, start=False, approver=approver)
    if kind == "click":
        raise value
    if kind == "error":
        click.echo(f"kairox: {value}", err=True)
        ctx.exit(1)
    return value


def _toggle(
    ctx: click.Context, target: str, scope: str, enabled: bool, sets: tuple[str, ...] = (), ask: bool | None = None
) -> None:
    from .settings import SettingsStore

    plugin, _, contribution = target.partition(":")

    async def go(rt: Runtime) -> str | None:
        key: str | None = None
        if contribution:
            key = _resolve_contribution(rt, plugin, contribution)
        if scope == "workspace":
            from .loader import survey

            scopes = {r.candidate.scope for r in survey(rt, check=False) if r.name == plugin}
            if scopes == {"user"}:
                raise click.BadParameter(
                    f"{plugin} is one of your own plugins: a workspace's settings never change it "
                    "(a cloned repository could switch off your guards); use --scope user",
                    param_hint="--scope",
                )
        env = dict(rt.env)
        if rt.home is not None:
            env["KAIROX_HOME"] = str(rt.home)
        SettingsStore(rt.workspace, env).set_enabled(scope, plugin, enabled, key)
        return key

    key = _run(ctx, go)
    what = f"{plugin}:{key}" if key else plugin
    click.echo(f"{'enabled' if enabled else 'disabled'} {what} ({scope} settings)")
    if enabled and not contribution:
        _ask_user_config(ctx, plugin, sets, ask)


def _ask_user_config(ctx: click.Context, name: str, sets: tuple[str, ...], ask: bool | None) -> None:
    """The plugin's ``userConfig``: ``--set`` values, then questions (:mod:`.userconfig_cli`)."""
    from .userconfig_cli import apply_answers, parse_sets, target_of

    async def go(rt: Runtime) -> Any:
        return target_of(rt, name)

    target = _run(ctx, go)
    apply_answers(target, parse_sets(target, sets), ask=ask)


def _resolve_contribution(rt: Runtime, plugin: str, contribution: str) -> str:
    from .loader import survey

    records = [r for r in survey(rt, check=False) if r.name == plugin and r.manifest is not None]
    if not records:
        if "/" in contribution:
            return contribution
        raise click.BadParameter(f"no plugin named {plugin!r}; write the contribution as KIND/NAME", param_hint="NAME")
    manifest = records[0].manifest
    assert manifest is not None
    keys = [c.key for c in manifest.contributions]
    if contribution in keys:
        return contribution
    matches = [c.key for c in manifest.contributions if c.name == contribution]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise click.BadParameter(f"{contribution!r} is ambiguous: {', '.join(matches)}", param_hint="NAME")
    if "/" in contribution:  # e.g. a tool a code plugin registers when it runs
        return contribution
    raise click.BadParameter(
        f"plugin {plugin} has no contribution {contribution!r} (it has: {', '.join(keys) or 'none'})", param_hint="NAME"
    )


def user_config_options(fn: Any) -> Any:
    """``--set KEY=VALUE`` and ``--ask/--no-ask``: the plugin's ``userConfig`` values."""
    fn = click.option(
        "--ask/--no-ask",
        "ask",
        default=None,
        help="Ask for the plugin's userConfig values it has not got (default: when on a terminal).",
    )(fn)
    return click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="KEY=VALUE",
        help="A userConfig value (repeatable); a sensitive one goes to the system keychain.",
    )(fn)


def _toggle_command(enabled: bool, doc: str) -> click.Command:
    """``kairox plugin enable`` or ``disable``: the same command but for the value it sets."""

    @click.argument("target", metavar="NAME[:CONTRIBUTION]")
    @SCOPE
    @click.pass_context
    def command(ctx: click.Context, /, target: str, scope: str, **config: Any) -> None:
        _toggle(ctx, target, scope, enabled, config.get("sets", ()), config.get("ask"))

    command.__doc__ = doc
    if enabled:
        command = user_config_options(command)
    return plugin_group.command("enable" if enabled else "disable")(command)


enable_cmd = _toggle_command(True, "Enable a plugin, or one contribution of it (NAME:KIND/NAME or NAME:NAME).")
disable_cmd = _toggle_command(False, "Disable a plugin, or one contribution of it; its files stay where they are.")


@plugin_group.command("trust")
@click.argument("name")
@click.option("--revoke", is_flag=True, help="Stop trusting it.")
@user_config_options
@click.pass_context
def trust_cmd(ctx: click.Context, name: str, revoke: bool, sets: tuple[str, ...], ask: bool | None) -> None:
    """Trust one workspace plugin as it is now (its files' fingerprint): it then loads.

    A change to its files needs trust again. ``kairox trust`` trusts everything the
    workspace declares at once."""
    from kairox.ext import TrustStore, user_home

    from .loader import survey
    from .trust import bundle_item

    async def go(rt: Runtime) -> str:
        records = [r for r in survey(rt, check=False) if r.name == name and r.manifest is not None]
        winner = next((r for r in records if r.state != "shadowed"), None)
        if winner is None or winner.manifest is None:
            raise click.BadParameter(f"no plugin named {name!r} was found", param_hint="NAME")
        if winner.candidate.scope == "user":
            others = [str(r.candidate.root) for r in records if r is not winner]
            ignored = f"; the workspace copy at {', '.join(others)} stays ignored" if others else ""
            return f"{name} is a user plugin ({winner.candidate.root}), trusted already{ignored}"
        item = bundle_item(winner.manifest, rt.workspace, env=rt.env)
        store = TrustStore(rt.home or user_home(rt.env))
        if item.refused and not revoke:
            raise click.ClickException(f"{name} is refused: {item.refused}; it cannot be trusted as it is")
        if revoke:
            store.revoke(rt.workspace, [item.key])
        else:
            store.trust(rt.workspace, [item], replace=False)
        return f"{'no longer trusting' if revoke else 'trusting'} {name} ({winner.candidate.root})"

    click.echo(_run(ctx, go))
    if not revoke:
        _ask_user_config(ctx, name, sets, ask)


@plugin_group.command("config")
@click.argument("name")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Set a value (repeatable).")
@click.option("--unset", multiple=True, metavar="KEY", help="Remove a stored value (repeatable).")
@click.option("--ask", is_flag=True, help="Ask for every option, showing what is set.")
@JSON_FLAG
@click.pass_context
def config_cmd(
    ctx: click.Context, name: str, sets: tuple[str, ...], unset: tuple[str, ...], ask: bool, as_json: bool
) -> None:
    """Show or change the values a plugin asks its user for (its userConfig).

    A sensitive value is kept in the system keychain, never in a file, and shown only as set
    or not; where no keychain exists it is read from KAIROX_PLUGIN_<PLUGIN>_<KEY>. Changes
    apply when a runtime next opens."""
    from .userconfig import UserConfigError, store_values
    from .userconfig_cli import apply_answers, config_rows, parse_sets, show, target_of

    async def go(rt: Runtime) -> Any:
        return target_of(rt, name)

    target = _run(ctx, go)
    if unset:
        try:
            store_values(target.store, target.plugin, target.root, target.options, {}, unset)
        except UserConfigError as exc:
            raise click.ClickException(str(exc)) from None
    values = parse_sets(target, sets)
    if values or ask:
        apply_answers(target, values, ask=ask, every=True)
    rows = config_rows(target)
    if want_json(ctx, as_json):
        echo_json({"plugin": target.plugin, "root": str(target.root), "options": rows})
    else:
        show(target, rows)
