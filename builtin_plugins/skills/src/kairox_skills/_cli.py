"""``kairox skills ...``: list, show, match, render, enable, disable."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

import click

from kairox import Runtime
from kairox.ext import SkillDef, SkillError, SkillRegistry, SkillScope, SkillWarning
from kairox_cli import echo_json, parse_pairs, run_with_runtime, want_json

from ._plugin import home_of
from ._settings import SettingsFile, settings_path

__all__ = ["skills"]

JSON_FLAG = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
SCOPES = click.Choice([s.value for s in SkillScope])


def _one_line(text: str, width: int = 72) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."


def _problem(p: SkillError | SkillWarning) -> dict[str, Any]:
    return {"file": p.file, "line": p.line, "field": p.field, "message": p.message}


def origin_of(skill: SkillDef) -> str:
    """Where a skill comes from, in a word: ``kairox``, ``claude``, ``codex``, ``agents``,
    ``plugin`` or ``session``."""
    if skill.origin:
        return skill.origin
    if skill.scope is SkillScope.PLUGIN:
        return "plugin"
    if skill.scope is SkillScope.SESSION:
        return "session"
    return "kairox"


def skill_dict(registry: SkillRegistry, skill: SkillDef, *, full: bool = False) -> dict[str, Any]:
    enabled, decided = registry.enabled_state(skill.name)
    data: dict[str, Any] = {
        "name": skill.name,
        "description": skill.description,
        "scope": skill.scope.value,
        "source": skill.source,
        "origin": origin_of(skill),
        "model_invocable": skill.model_invocable,
        "kind": skill.kind,
        "path": skill.file,
        "enabled": enabled,
        "enabled_by": decided.value if decided else None,
        "keywords": list(skill.keywords),
        "tools": list(skill.tools),
        "model": skill.model,
        "arguments": [a.to_dict() for a in skill.arguments],
        "shadows": [
            {"scope": s.scope.value, "source": s.source, "origin": origin_of(s), "path": s.file}
            for s in registry.shadowed(skill.name)
        ],
        "warnings": [_problem(w) for w in skill.warnings],
    }
    if full:
        fm = skill.frontmatter
        data.update(
            license=fm.license,
            compatibility=fm.compatibility,
            metadata=dict(fm.metadata),
            allowed_tools=list(fm.allowed_tools),
            extra=dict(fm.extra),
            resources=skill.resources(),
        )
    return data


def _where(shadowed: dict[str, Any]) -> str:
    origin = shadowed.get("origin")
    return f"{shadowed['scope']} {origin}" if origin and origin != "kairox" else shadowed["scope"]


def _echo_problems(errors: list[dict[str, Any]], warnings: list[dict[str, Any]]) -> None:
    for kind, items in (("error", errors), ("warning", warnings)):
        for p in items:
            where = f"{p['file']}:{p['line']}" if p["file"] and p["line"] else (p["file"] or "")
            field = f" [{p['field']}]" if p["field"] else ""
            click.echo(f"{kind}: {where}{field}: {p['message']}", err=True)


def _fail(message: str) -> NoReturn:
    click.echo(f"kairox: {message}", err=True)
    raise click.exceptions.Exit(1)


def _run_or_fail(
    ctx: click.Context, go: Callable[[Runtime], Awaitable[dict[str, Any] | str]], *, start: bool = False
) -> dict[str, Any]:
    """``go`` in a runtime; a message it returns instead of data (no such skill, a refused
    change) ends the command with that message and exit 1."""
    data = run_with_runtime(ctx, go, start=start)
    if isinstance(data, str):
        _fail(data)
    return data


@click.group()
def skills() -> None:
    """Skills: markdown prompts from user, workspace, session and plugin sources."""


@skills.command("list")
@click.option("--scope", type=SCOPES, default=None, help="Only skills of this scope.")
@JSON_FLAG
@click.pass_context
def list_cmd(ctx: click.Context, scope: str | None, as_json: bool) -> None:
    """Every effective skill (one per name), with disabled ones marked, then problems."""

    async def go(rt: Runtime) -> dict[str, Any]:
        reg = rt.skills
        return {
            "skills": [
                skill_dict(reg, s) for s in reg.skills(include_disabled=True, scope=scope, include_user_only=True)
            ],
            "errors": [_problem(e) for e in reg.errors],
            "warnings": [_problem(w) for w in reg.warnings],
        }

    data = run_with_runtime(ctx, go, start=False)
    if want_json(ctx, as_json):
        echo_json(data)
        return
    rows = data["skills"]
    if not rows:
        click.echo("(no skills)")
    else:
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            state = "on " if r["enabled"] else "off"
            notes = []
            if r["shadows"]:
                notes.append(f"shadows {', '.join(_where(s) for s in r['shadows'])}")
            if not r["model_invocable"]:
                notes.append("user only")
            if r["warnings"]:
                count = len(r["warnings"])
                notes.append(f"{count} warning{'s' if count > 1 else ''}")
            tail = f" ({'; '.join(notes)})" if notes else ""
            click.echo(
                f"{r['name']:<{width}}  {r['scope']:<9} {r['origin']:<7} {state} {_one_line(r['description'])}{tail}"
            )
    _echo_problems(data["errors"], data["warnings"])


@skills.command("show")
@click.argument("name")
@JSON_FLAG
@click.pass_context
def show_cmd(ctx: click.Context, name: str, as_json: bool) -> None:
    """One skill: fields, where it came from, what it shadows, resources, body."""

    async def go(rt: Runtime) -> dict[str, Any] | str:
        skill = rt.skills.get(name)
        if skill is None:
            try:
                rt.skills.require(name)
            except SkillError as exc:
                return exc.message
        assert skill is not None
        return {**skill_dict(rt.skills, skill, full=True), **skill.body_json()}

    data = _run_or_fail(ctx, go)
    if want_json(ctx, as_json):
        echo_json(data)
        return
    state = "enabled" if data["enabled"] else "disabled"
    if data["enabled_by"]:
        state += f" (by the {data['enabled_by']} settings)"
    rows: list[tuple[str, str]] = [
        ("name", data["name"]),
        ("description", _one_line(data["description"], 400)),
        ("scope", f"{data['scope']} (source {data['source']}, {data['kind']}, from {data['origin']})"),
        ("path", data["path"] or "(in memory)"),
        ("state", state if data["model_invocable"] else f"{state}; user only (disable-model-invocation)"),
    ]
    for key in ("keywords", "tools", "allowed_tools"):
        if data[key]:
            rows.append((key.replace("_", "-"), ", ".join(data[key])))
    for key in ("model", "license", "compatibility"):
        if data[key]:
            rows.append((key, str(data[key])))
    for a in data["arguments"]:
        extra = "required" if a["required"] else f"default {json.dumps(a['default'])}"
        choices = f", one of {', '.join(map(str, a['choices']))}" if a["choices"] else ""
        rows.append(("argument", f"{a['name']} ({a['type']}, {extra}{choices}) {a['description']}".rstrip()))
    for s in data["shadows"]:
        rows.append(("shadows", f"{s['scope']:<9} {s['path'] or s['source']}"))
    for group, files in data["resources"].items():
        rows.append(("resources", f"{group}: {', '.join(files)}"))
    for w in data["warnings"]:
        rows.append(("warning", f"{w['field'] + ': ' if w['field'] else ''}{w['message']}"))
    for key, value in rows:
        click.echo(f"{key + ':':<13}{value}")
    click.echo("---")
    click.echo(data["body"] if data["body"] is not None else data["body_error"], nl=False)


@skills.command("match")
@click.argument("prompt")
@click.option("--limit", type=int, default=5, show_default=True, help="At most this many matches.")
@JSON_FLAG
@click.pass_context
def match_cmd(ctx: click.Context, prompt: str, limit: int, as_json: bool) -> None:
    """Rank skills for PROMPT (keywords, name, description) and say why."""

    async def go(rt: Runtime) -> list[dict[str, Any]]:
        return [
            {"name": m.skill.name, "score": m.score, "reasons": list(m.reasons), "description": m.skill.description}
            for m in rt.skills.match(prompt, limit=limit)
        ]

    rows = run_with_runtime(ctx, go, start=False)
    if want_json(ctx, as_json):
        echo_json({"prompt": prompt, "matches": rows})
        return
    if not rows:
        click.echo("(no matching skills)")
    for r in rows:
        click.echo(f"{r['score']:5.1f}  {r['name']}  ({'; '.join(r['reasons'])})")


@skills.command("render")
@click.argument("name")
@click.option("--arg", "args", multiple=True, metavar="KEY=VALUE", help="An argument (repeatable).")
@click.option(
    "--check-tools/--no-check-tools",
    default=True,
    show_default=True,
    help="Start the tool providers and require every tool the skill lists.",
)
@JSON_FLAG
@click.pass_context
def render_cmd(ctx: click.Context, name: str, args: tuple[str, ...], check_tools: bool, as_json: bool) -> None:
    """Render a skill's prompt with its arguments, as it would run.

    Exits 1 when the skill is unknown or disabled, a tool it lists is not
    registered, or an argument is missing or invalid.
    """
    arguments = parse_pairs(args, option="--arg")

    async def go(rt: Runtime) -> dict[str, Any] | str:
        try:
            ready = rt.skills.prepare(name, arguments, tools=rt.tools if check_tools else None)
        except SkillError as exc:
            return str(exc)
        return {
            "name": ready.name,
            "model": ready.model,
            "tools": list(ready.tools),
            "arguments": dict(ready.arguments),
            "text": ready.text,
        }

    data = _run_or_fail(ctx, go, start=check_tools)
    if want_json(ctx, as_json):
        echo_json(data)
        return
    if data["model"]:
        click.echo(f"(model: {data['model']})", err=True)
    click.echo(data["text"], nl=False)


def _set_enabled(ctx: click.Context, name: str, scope: str, enabled: bool) -> None:
    async def go(rt: Runtime) -> dict[str, Any] | str:
        known = {s.name for s in rt.skills.skills(include_disabled=True, include_user_only=True)}
        if name not in known:
            try:
                rt.skills.require(name)
            except SkillError as exc:
                return exc.message
        path = settings_path(scope, workspace=rt.workspace, home=home_of(rt), env=rt.env)
        root = rt.workspace_root if scope == SkillScope.WORKSPACE.value else None
        try:
            SettingsFile(path, root=root).set_skill(name, enabled)
        except SkillError as exc:
            return f"{exc}; not changed"
        rt.skills.set_overrides(scope, {**rt.skills.overrides(scope), name: enabled})
        effective, decided = rt.skills.enabled_state(name)
        return {"name": name, "scope": scope, "file": str(path), "enabled": effective, "decided_by": decided}

    data = _run_or_fail(ctx, go)
    word = "enabled" if enabled else "disabled"
    click.echo(f"{name}: {word} in the {scope} settings ({data['file']})")
    if data["enabled"] != enabled and data["decided_by"] is not None:
        state = "enabled" if data["enabled"] else "disabled"
        click.echo(f"note: the {data['decided_by'].value} settings keep it {state}", err=True)


SETTING_SCOPES = click.Choice([SkillScope.USER.value, SkillScope.WORKSPACE.value])


def _toggle_command(enabled: bool) -> click.Command:
    """``kairox skills enable`` or ``disable``: the same command but for the value it sets."""
    word = "Enable" if enabled else "Disable"

    @click.argument("name")
    @click.option("--scope", type=SETTING_SCOPES, default="workspace", show_default=True)
    @click.pass_context
    def command(ctx: click.Context, name: str, scope: str) -> None:
        _set_enabled(ctx, name, scope, enabled)

    command.__doc__ = f"{word} a skill in the user or workspace settings (its file is not touched)."
    return skills.command(word.lower())(command)


enable_cmd = _toggle_command(True)
disable_cmd = _toggle_command(False)
