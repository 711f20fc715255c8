"""``kairox trust``: trust a workspace (what it declares may run), list and revoke trust; the terminal prompt."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ._util import echo_json, run_with_runtime, state_of, want_json

if TYPE_CHECKING:
    from kairox import Runtime, TrustPrompt, TrustRequest
    from kairox.ext import Declared

__all__ = ["describe_items", "trust", "tty_trust_prompt"]

_KIND_NAMES = {
    "mcp_servers": "MCP server",
    "mcp_server": "MCP server",
    "lsp_servers": "language server",
    "lsp_server": "language server",
    "dap_servers": "debug adapter",
    "dap_server": "debug adapter",
    "bundle": "bundle",
    "policy": "policy",
    "config": "config",
}


def describe_items(items: Iterable[Declared], *, states: dict[str, str] | None = None) -> list[str]:
    """Lines showing what each item would run: each command line whole, as it will run (the
    secrets the item itself sets masked), URLs (passwords redacted), every variable its ``env``
    sets, every variable it reads, notes, and why an item is refused. Text from the workspace is made terminal-safe."""
    from kairox.ext import terminal_safe as safe

    lines: list[str] = []
    for item in items:
        shown = item.to_dict()
        # a workspace file's table of a section ([tools], [philont]) is config, whoever owns it
        kind = _KIND_NAMES.get(item.kind, "config" if item.name.startswith("[") else item.kind)
        state = f"  [{states[item.key]}]" if states and item.key in states else ""
        lines.append(f"  {kind} {safe(item.name)}  ({safe(item.source)}){state}")
        for command in shown["commands"]:
            lines.append(f"      runs:     {safe(command)}")
        for url in shown["urls"]:
            lines.append(f"      contacts: {safe(url)}")
        for setting in shown["env"]:
            lines.append(f"      env:      {safe(setting)}")
        if item.env_names:
            lines.append(f"      reads:    {safe(', '.join(item.env_names))}")
        for note in item.notes:
            lines.append(f"      note:     {safe(note)}")
        if item.refused:
            lines.append(f"      refused:  {safe(item.refused)}; it cannot be trusted as it is")
    return lines


def tty_trust_prompt() -> TrustPrompt | None:
    """On a terminal: show what the workspace would run and ask once. Elsewhere: ``None`` (never asks)."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None
    import anyio

    async def ask(request: TrustRequest) -> bool:
        def prompt() -> bool:
            what = "has changed since you trusted it" if request.changed else "is not trusted"
            click.echo(f"\nkairox: the workspace {request.workspace} {what}.", err=True)
            click.echo("Trusting it lets these run (and read the variables named):", err=True)
            states = {i.key: "changed" for i in request.pending} if request.changed else {}
            states.update((i.key, "refused") for i in request.declared if i.refused)
            for line in describe_items(request.declared, states=states):
                click.echo(line, err=True)
            return click.confirm("Trust this workspace?", default=False, err=True)

        return await anyio.to_thread.run_sync(prompt)

    return ask


@click.command()
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--list", "list_", is_flag=True, help="List the trusted workspaces.")
@click.option("--revoke", is_flag=True, help="Stop trusting the workspace.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def trust(ctx: click.Context, path: Path | None, list_: bool, revoke: bool, as_json: bool) -> None:
    """Trust the workspace PATH (default: the current one): what it declares may run.

    Shows every server, bundle and section the workspace declares that would run a
    command or contact a URL, and records their fingerprints. When any of them
    changes later, it does not run until you trust the workspace again.
    """
    from kairox.ext import TrustStore, user_home, workspace_key

    state = state_of(ctx)
    if path is not None:
        state.workspace = path
    store = TrustStore(user_home())
    if list_:
        records = store.records()
        if want_json(ctx, as_json):
            echo_json(
                {
                    "workspaces": [
                        {"path": r.path, "trusted_at": r.trusted_at, "items": sorted(r.items)} for r in records.values()
                    ]
                }
            )
            return
        if store.problem:
            click.echo(f"kairox: {store.problem}", err=True)
        if not records:
            click.echo("(no trusted workspaces)")
        for record in sorted(records.values(), key=lambda r: r.path):
            click.echo(f"{record.path}  ({len(record.items)} items)")
        return
    if revoke:
        key = workspace_key(state.workspace)
        found = store.revoke(key)
        click.echo(f"{'no longer trusting' if found else 'was not trusted:'} {key}")
        return

    async def go(rt: Runtime) -> tuple[str, list[Declared]]:
        items = list(rt.trust.declared.values())
        rt.trust_workspace()
        return str(rt.workspace), items

    workspace, items = run_with_runtime(ctx, go, start=False)
    trusted = [i for i in items if not i.refused]
    refused = [i for i in items if i.refused]
    if want_json(ctx, as_json):
        echo_json(
            {
                "workspace": workspace,
                "trusted": [i.to_dict() for i in trusted],
                "refused": [i.to_dict() for i in refused],
            }
        )
        return
    click.echo(f"trusting {workspace}")
    if not items:
        click.echo(
            "  (it declares nothing that waits for trust; its skills, instructions and narrowing settings apply anyway)"
        )
    for line in describe_items(trusted):
        click.echo(line)
    if refused:
        n = len(refused)
        click.echo(f"not trusted: {n} item{'s' if n != 1 else ''} refused (they do not run until that changes):")
        for line in describe_items(refused):
            click.echo(line)
