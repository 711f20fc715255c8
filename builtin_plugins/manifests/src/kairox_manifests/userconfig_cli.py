"""Asking for a plugin's ``userConfig`` on the command line: ``kairox plugin config``, and the
questions ``kairox plugin enable`` / ``trust`` ask (:mod:`.userconfig` keeps the values).

A prompt shows the option's title, description and default; a sensitive one is read without
echo and shown afterwards only as set or not (never its value, nor its length)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import click

from .userconfig import (
    MASK,
    Resolution,
    SecretStore,
    UserConfigError,
    UserOption,
    check_value,
    env_name,
    resolve,
    store_values,
)

if TYPE_CHECKING:
    from kairox import Runtime

    from .model import BundleManifest
    from .settings import SettingsStore

__all__ = ["ConfigTarget", "apply_answers", "config_rows", "parse_sets", "target_of"]

#: how often a prompt asks again after an answer that does not fit
TRIES = 3


@attrs.frozen
class ConfigTarget:
    """The plugin whose options are asked for, and where its values go."""

    manifest: BundleManifest
    store: SettingsStore
    env: dict[str, str]
    #: the plugin is the user's own (only those read their options from the environment)
    own: bool = True

    @property
    def plugin(self) -> str:
        return self.manifest.name

    @property
    def root(self) -> Path:
        return Path(os.path.realpath(self.manifest.root))

    @property
    def options(self) -> tuple[UserOption, ...]:
        return self.manifest.user_config

    def resolution(self) -> Resolution:
        return resolve(self.manifest, settings=self.store.load(), env=self.env, environment=self.own)


def target_of(rt: Runtime, name: str) -> ConfigTarget:
    """The plugin ``name`` (the one that loads, where several have that name)."""
    from .loader import survey
    from .settings import SettingsStore

    records = [r for r in survey(rt, check=False) if r.name == name and r.manifest is not None]
    winner = next((r for r in records if r.state != "shadowed"), records[0] if records else None)
    if winner is None or winner.manifest is None:
        raise click.BadParameter(f"no plugin named {name!r} was found", param_hint="NAME")
    env = dict(rt.env)
    if rt.home is not None:
        env["KAIROX_HOME"] = str(rt.home)
    own = winner.candidate.scope == "user"
    return ConfigTarget(winner.manifest, SettingsStore(rt.workspace, env), env, own)


def parse_sets(target: ConfigTarget, pairs: Iterable[str]) -> dict[str, Any]:
    """``KEY=VALUE`` options (a ``multiple`` option's repeated ones make a list)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {key or pair!r}", param_hint="--set")
        option = next((o for o in target.options if o.key == key), None)
        if option is not None and option.multiple:
            out.setdefault(key, []).append(value)
        else:
            out[key] = value
    return out


def _store(target: ConfigTarget, values: dict[str, Any], unset: Iterable[str] = ()) -> None:
    try:
        store_values(target.store, target.plugin, target.root, target.options, values, unset)
    except UserConfigError as exc:
        raise click.ClickException(str(exc)) from None


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(map(str, value))
    return "" if value is None else str(value)


def _ask_one(option: UserOption, current: Any, source: str) -> Any:
    """One answer; ``None`` keeps what there is (a stored value, the default, or nothing)."""
    kept = source in ("settings", "keychain")
    click.echo(option.label + (f": {option.description}" if option.description else ""), err=True)
    if option.sensitive:
        hint = " (set; Enter keeps it)" if kept else "" if option.required else " (Enter leaves it unset)"
        default = ""
    else:
        hint = " (comma-separated)" if option.multiple else ""
        default = _shown(current if current is not None else option.default)
    for _ in range(TRIES):
        answer = click.prompt(
            f"  {option.key}{hint}",
            default=default,
            show_default=bool(default),
            hide_input=option.sensitive,
            err=True,
        )
        if answer == default:  # Enter: what there is stays
            if answer == "" and option.required and not kept:
                click.echo(f"  {option.key} is required", err=True)
                continue
            return None
        raw: Any = [a.strip() for a in answer.split(",") if a.strip()] if option.multiple else answer
        try:
            check_value(option, raw)
        except UserConfigError as exc:
            click.echo(f"  {exc}", err=True)
            continue
        return raw
    raise click.ClickException(f"{option.key}: no usable answer after {TRIES} tries")


def apply_answers(target: ConfigTarget, sets: dict[str, Any], *, ask: bool | None, every: bool = False) -> None:
    """Store ``sets``; then, when asking (``ask`` ``None``: when stdin and stderr are a
    terminal), ask for each other option that has no stored value (``every``: each option).
    Without asking, say which required values are missing and how to give them."""
    if not target.options:
        if sets:
            raise click.ClickException(f"{target.plugin} declares no userConfig options")
        return
    if sets:
        _store(target, sets)
    if ask is None:
        ask = sys.stdin.isatty() and sys.stderr.isatty()
    res = target.resolution()
    if ask:
        answers: dict[str, Any] = {}
        for option in target.options:
            source = res.sources.get(option.key, "")
            if option.key in sets or (not every and source in ("settings", "keychain")):
                continue
            answer = _ask_one(option, res.values.get(option.key), source)
            if answer is not None:
                answers[option.key] = answer
        if answers:
            _store(target, answers)
        res = target.resolution()
    keychain = None
    for option in target.options:
        if option.required and option.key in res.missing:
            if keychain is None:
                keychain = SecretStore(target.plugin, target.root).available if option.sensitive else True
            where = (
                f" (no keychain here: set {env_name(target.plugin, option.key)} in the environment)"
                if option.sensitive and not keychain
                else ""
            )
            click.echo(
                f"{target.plugin} needs {option.label} ({option.key}): "
                f"kairox plugin config {target.plugin} --set {option.key}=VALUE{where}; "
                "what uses it does not start until then",
                err=True,
            )


def config_rows(target: ConfigTarget) -> list[dict[str, Any]]:
    """Each option with its value (a sensitive one: only whether it is set) and its source."""
    res = target.resolution()
    rows = []
    for o in target.options:
        has = o.key in res.values
        row = o.to_dict(with_default=not o.sensitive)
        row.update(
            set=has,
            source=res.sources.get(o.key, ""),
            value=None if o.sensitive or not has else res.values[o.key],
            variable=env_name(target.plugin, o.key),
        )
        rows.append(row)
    return rows


def show(target: ConfigTarget, rows: list[dict[str, Any]]) -> None:
    click.echo(f"{target.plugin}  ({target.root})")
    if not rows:
        click.echo("  (no userConfig options)")
        return
    w = max(len(r["key"]) for r in rows)
    for r in rows:
        if not r["set"]:
            value = "(not set)"
        elif r["sensitive"]:
            value = f"{MASK} ({r['source']})"
        else:
            v = r["value"]
            value = ", ".join(map(str, v)) if isinstance(v, list) else str(v).lower() if isinstance(v, bool) else str(v)
            value += f" ({r['source']})"
        flags = ", ".join(f for f in ("required" if r["required"] else "", "sensitive" if r["sensitive"] else "") if f)
        click.echo(f"  {r['key']:<{w}}  {r['type']:<9}  {value}" + (f"  [{flags}]" if flags else ""))
        if r["title"] or r["description"]:
            click.echo(f"  {'':<{w}}  {' - '.join(x for x in (r['title'], r['description']) if x)}")
