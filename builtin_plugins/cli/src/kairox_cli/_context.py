"""``kairox context PROMPT``: exactly what a model would be given this turn."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ._util import echo_json, run_with_runtime, want_json

if TYPE_CHECKING:
    from kairox import Runtime


@click.command("context")
@click.argument("prompt")
@click.option("--tool-budget", type=int, default=None, help="Cut the tool list to about this many tokens.")
@click.option(
    "--skill-budget",
    type=click.IntRange(min=0),
    default=None,
    help="Cut the skills index to about this many tokens (default 4000; 0 lists none, the rest findable).",
)
@click.option(
    "--cwd",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory the agent works in (for nearest AGENTS.md/CLAUDE.md); default: the workspace.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def context(
    ctx: click.Context, prompt: str, tool_budget: int | None, skill_budget: int | None, cwd: Path | None, as_json: bool
) -> None:
    """Show what a model would be given for PROMPT in this workspace: instructions,
    the skills index and matches, injected context, and the tools."""

    where = cwd.resolve() if cwd else None

    async def go(rt: Runtime) -> dict[str, object]:
        async with rt.session() as session:
            budget = {} if skill_budget is None else {"skill_budget": skill_budget}
            tc = await session.turn_context(prompt, tool_budget=tool_budget, cwd=where, **budget)
            return {"rendered": tc.render(), **tc.to_dict()}

    data = run_with_runtime(ctx, go)
    if want_json(ctx, as_json):
        echo_json(data)
        return
    click.echo(str(data["rendered"]) or "(no instructions, skills or injected context)")
    tools = data["tools"]
    assert isinstance(tools, list)
    click.echo(f"\n# tools given to the model ({len(tools)}, {data['omitted_tools']} more findable via tools.search)")
    for tool in tools:
        click.echo(f"- {tool['name']}: {str(tool['description']).splitlines()[0] if tool['description'] else ''}")
    for problem in data["problems"]:  # type: ignore[attr-defined]
        click.echo(f"! {problem}", err=True)
