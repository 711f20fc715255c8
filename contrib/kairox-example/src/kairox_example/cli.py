"""``kairox example ...``: commands that go through the runtime like any tool call."""

from __future__ import annotations

from typing import Any

import click

from kairox import PolicyDenied, Runtime, ToolError
from kairox_cli import echo_json, run_with_runtime, want_json

__all__ = ["example"]


@click.group()
def example() -> None:
    """kairox-example: count words, check files against the protected list."""


@example.command()
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def wordcount(ctx: click.Context, path: str, as_json: bool) -> None:
    """Count lines, words and characters of PATH (through the policy and hooks)."""

    async def go(rt: Runtime) -> tuple[int, dict[str, Any]]:
        try:
            result = await rt.call_tool("example.wordcount", {"path": path})
        except (PolicyDenied, ToolError) as exc:
            return 1, {"error": str(exc)}
        if result.is_error:
            return 1, {"error": result.text}
        return 0, result.structured or {}

    code, data = run_with_runtime(ctx, go)
    if want_json(ctx, as_json):
        echo_json(data)
    elif code:
        click.echo(f"kairox example: {data['error']}", err=True)
    else:
        click.echo(f"{data['lines']:>8} {data['words']:>8} {data['chars']:>8} {data['path']}")
    ctx.exit(code)


@example.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def protected(ctx: click.Context, as_json: bool) -> None:
    """Show the protected globs and the file that set them."""

    async def go(rt: Runtime) -> dict[str, Any]:
        config = rt.config.section("example")
        return {"protected": list(config.protected), "source": rt.config.source_of("example", "protected")}

    data = run_with_runtime(ctx, go, start=False)
    if want_json(ctx, as_json):
        echo_json(data)
        return
    for glob in data["protected"]:
        click.echo(glob)
    click.echo(f"# from {data['source'] or 'the defaults'}", err=True)
