"""Shared helpers for CLI commands: state, runtime opening, output, approval prompt."""

from __future__ import annotations

import json
import math
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import click

from kairox import Event, HookFailed
from kairox.ext import REDACTED, LoadFailure, PluginHost, build_plugin_host, redact

if TYPE_CHECKING:  # imported when a command runs: `kairox plugins` and `--help` never load the runtime
    from click.decorators import FC

    from kairox import ApprovalAnswer, ApprovalRequest, Approver, HostCallback, Runtime, StartMode

__all__ = [
    "CliState",
    "CommandFailed",
    "FormField",
    "coerce_answer",
    "echo_json",
    "parse_form_schema",
    "parse_pairs",
    "run_with_runtime",
    "scope_option",
    "tty_approver",
    "tty_elicitation",
    "want_json",
]

T = TypeVar("T")


@attrs.define
class CliState:
    host: PluginHost | None = None
    workspace: Path = attrs.field(factory=Path.cwd)
    json: bool = False

    def get_host(self) -> PluginHost:
        if self.host is None:
            self.host = build_plugin_host()
        return self.host


def scope_option(help: str, *, default: str = "workspace") -> Callable[[FC], FC]:
    """The ``--scope user|workspace`` option of a command that writes the user's or the
    workspace's settings (``kairox catalog install``, ``kairox mcp import``, ``kairox plugin
    enable``); ``help`` says which file each scope is."""
    return click.option(
        "--scope", type=click.Choice(["user", "workspace"]), default=default, show_default=True, help=help
    )


def state_of(ctx: click.Context) -> CliState:
    return ctx.ensure_object(CliState)


def want_json(ctx: click.Context, local: bool) -> bool:
    """Whether the command prints JSON: its own ``--json`` (``local``) or the global one."""
    return local or state_of(ctx).json


def echo_json(data: Any) -> None:
    """Print ``data`` as indented JSON (what is not JSON as its ``str``)."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


class CommandFailed(click.ClickException):
    """A kairox error that ends a command: ``kairox: <kind>: <message>`` on stderr, exit 1."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    def show(self, file: Any = None) -> None:
        click.echo(f"kairox: {self.kind}: {self.format_message()}", err=True, file=file)


def parse_pairs(values: Iterable[str], *, option: str, metavar: str = "KEY") -> dict[str, str]:
    """``KEY=VALUE`` option values (``--arg a=1 --arg b=2``) as a dict; the value may hold
    ``=``; a value without ``=`` or with an empty key is a usage error naming ``option``."""
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected {metavar}=VALUE, got {item!r}", param_hint=option)
        out[key] = value
    return out


def _as_command_failure(exc: Exception) -> Exception:
    """A :class:`~kairox.KairoxError` as a clean CLI error; anything else unchanged."""
    from kairox import KairoxError, PolicyDenied, ToolError

    if isinstance(exc, click.ClickException) or not isinstance(exc, KairoxError):
        return exc
    kind = "denied" if isinstance(exc, PolicyDenied) else "failed" if isinstance(exc, ToolError) else "error"
    return CommandFailed(kind, str(exc))


def run_with_runtime(
    ctx: click.Context,
    fn: Callable[[Runtime], Awaitable[T]],
    *,
    start: StartMode = True,
    approver: Approver | None = None,
    warn_config: bool = True,
) -> T:
    """Open a runtime over the CLI's workspace, run ``fn`` in it, close it.

    A :class:`~kairox.KairoxError` out of ``fn`` (a denied call, a failed tool)
    ends the command with ``kairox: denied: ...`` / ``kairox: failed: ...`` on
    stderr and exit code 1, not a traceback. With ``warn_config`` (the default),
    config errors are written to stderr first: the part of the config they are in
    does not apply, which the user must not miss (``status`` and ``config show``
    report them themselves). So are the plugin packages that failed to load (their hooks,
    tools and commands are absent: a guard among them guards nothing) and, while ``fn``
    runs, every hook that failed (a ``HookFailed`` event).

    ``start`` is the runtime's :data:`~kairox.StartMode`. When it activates
    something and stdin and stderr are a terminal, an untrusted (or changed)
    workspace is shown and the user asked once whether to trust it; without a
    terminal nobody is asked and the workspace's servers stay untrusted.

    SIGTERM and SIGHUP cancel the work like Ctrl-C does, so the runtime closes
    (every server's process group is reaped) before the CLI exits with 128+signal.
    A signal that was ignored when the CLI started (``nohup`` ignores SIGHUP) stays
    ignored, as it does for Python's own SIGINT handling.
    """
    import anyio

    from kairox import Runtime
    from kairox.ext import TrustState, terminal_safe

    from ._trust import tty_trust_prompt

    state = state_of(ctx)
    results: list[T] = []
    received: list[int] = []
    errors: list[Exception] = []

    async def go() -> None:
        async with anyio.create_task_group() as tg:

            async def watch_signals() -> None:
                if sys.platform == "win32":  # no SIGHUP, and no signal receivers on Windows' event loops
                    return
                watched = [s for s in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(s) is not signal.SIG_IGN]
                if not watched:
                    return
                with anyio.open_signal_receiver(*watched) as signals:
                    async for signum in signals:
                        received.append(signum)
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch_signals)
            try:
                prompt = tty_trust_prompt() if start is not False else None
                async with Runtime.open(
                    state.workspace,
                    host=state.get_host(),
                    start=start,
                    approver=approver,
                    trust_prompt=prompt,
                    # a server may ask the user (elicitation): a form on the terminal, else declined
                    elicitation_callback=tty_elicitation() if start is not False else None,
                ) as rt:
                    if warn_config:
                        secrets = config_secrets(rt)  # an error may quote a secret's value
                        for error in rt.config.errors:
                            shown = mask_secrets(str(error), secrets)
                            click.echo(f"kairox: config problem: {terminal_safe(shown)}", err=True)
                        pending = rt.trust.pending
                        if start is not False and pending:
                            n = len(pending)
                            click.echo(
                                f"kairox: {n} item{'s' if n != 1 else ''} of this workspace "
                                f"{'do' if n != 1 else 'does'} not run: "
                                f"{rt.trust.hint(TrustState.CHANGED if rt.trust.trusted else None)}",
                                err=True,
                            )
                        for failure in state.get_host().failures:
                            click.echo(f"kairox: {describe_failure(failure)}", err=True)
                    unsubscribe = rt.events.subscribe(_say_hook_failed, HookFailed) if warn_config else None
                    try:
                        results.append(await fn(rt))
                    finally:
                        if unsubscribe is not None:
                            unsubscribe()
            except Exception as exc:  # re-raised as is below, not inside an ExceptionGroup
                errors.append(exc)
            tg.cancel_scope.cancel()

    try:
        anyio.run(go)
    except BaseException as exc:
        # Python 3.10: anyio answers Ctrl-C by cancelling the main task and, without
        # Task.uncancel(), lets that CancelledError out of anyio.run; 3.11+ raise
        # KeyboardInterrupt, which the commands that own their Ctrl-C (`kairox watch`:
        # exit 130) catch. Nothing else cancels the main task, so it is the same event.
        if sys.version_info < (3, 11) and _is_cancellation(exc):
            raise KeyboardInterrupt from None
        raise
    if errors and not received:
        raise _as_command_failure(errors[0]) from errors[0]
    if received or not results:
        signum = received[0] if received else signal.SIGTERM
        click.echo(f"kairox: stopped by {signal.Signals(signum).name}; every server was shut down", err=True)
        raise SystemExit(128 + signum)
    return results[0]


def describe_failure(failure: LoadFailure) -> str:
    """A plugin package that failed to load, in one line for stderr."""
    dist = " ".join(x for x in (failure.distribution, failure.version) if x)
    return (
        f"plugin {failure.plugin}{f' ({dist})' if dist else ''} failed to load ({failure.stage}): {failure.error}; "
        "its hooks, tools and commands are absent (`kairox plugins` lists the failures)"
    )


def _say_hook_failed(event: Event) -> None:
    """A hook failed while a command ran: said on stderr (a guard's failure also denies the call)."""
    if isinstance(event, HookFailed):
        click.echo(f"kairox: hook {event.hook} of plugin {event.plugin} failed: {event.error}", err=True)


def _is_cancellation(exc: BaseException) -> bool:
    import asyncio

    return isinstance(exc, asyncio.CancelledError)


def tty_approver(assume_yes: bool) -> Approver | None:
    """``--yes`` approves every Ask; on a TTY the user is asked; otherwise no approver (Ask = Deny)."""
    import anyio

    from kairox import ApprovalAnswer

    if assume_yes:
        return lambda request: ApprovalAnswer.ALLOW_ONCE
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    async def ask(request: ApprovalRequest) -> ApprovalAnswer:
        def prompt() -> ApprovalAnswer:
            from kairox.ext import terminal_safe as safe

            args = json.dumps(request.arguments, ensure_ascii=False)
            if len(args) > 400:
                args = args[:400] + "..."
            # a reason may quote what a server sent (its sampling prompt, its elicitation message)
            click.echo(f"\nkairox: {safe(request.tool.id)} asks for approval: {safe(request.reason)}", err=True)
            click.echo(f"  arguments: {safe(args)}", err=True)
            choice = click.prompt(
                "  allow [o]nce, allow for this [s]ession, or [d]eny?",
                type=click.Choice(["o", "s", "d"]),
                default="d",
                err=True,
            )
            return {"o": ApprovalAnswer.ALLOW_ONCE, "s": ApprovalAnswer.ALLOW_SESSION}.get(choice, ApprovalAnswer.DENY)

        return await anyio.to_thread.run_sync(prompt)

    return ask


# -- elicitation: a form on the terminal ----------------------------------------------------

#: the kinds of field an elicitation schema may ask for (MCP 2025-11-25 "restricted" schemas)
FieldKind = str  # "string" | "number" | "integer" | "boolean" | "enum" | "multi"


@attrs.frozen
class FormField:
    """One field of an elicitation form (``requestedSchema.properties.NAME``)."""

    name: str
    kind: FieldKind
    title: str = ""
    description: str = ""
    required: bool = False
    default: Any = None
    #: (value, label) of an ``enum`` or ``multi`` field
    choices: tuple[tuple[str, str], ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    format: str | None = None


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _choices(prop: dict[str, Any]) -> tuple[tuple[str, str], ...] | None:
    """``enum`` (with the legacy ``enumNames``) or ``oneOf``/``anyOf`` of ``{const, title}``."""
    if isinstance(prop.get("enum"), list):
        values = [v for v in prop["enum"] if isinstance(v, str)]
        names = prop.get("enumNames")
        labels = (
            [n if isinstance(n, str) else v for v, n in zip(values, names, strict=False)]
            if isinstance(names, list)
            else []
        )
        labels += values[len(labels) :]
        return tuple(zip(values, labels, strict=True))
    for key in ("oneOf", "anyOf"):
        options = prop.get(key)
        if isinstance(options, list):
            out = []
            for option in options:
                if isinstance(option, dict) and isinstance(option.get("const"), str):
                    title = option.get("title")
                    out.append((option["const"], title if isinstance(title, str) else option["const"]))
            return tuple(out)
    return None


def parse_form_schema(schema: Any) -> list[FormField]:
    """The fields of an elicitation's ``requestedSchema``: a flat object of string, number,
    integer, boolean, single-select enum and multi-select (array of enum) properties.

    Raises :class:`ValueError` naming the property when the schema asks for something else
    (a nested object, an enum with no choices): the form cannot be shown, so it is declined."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise ValueError('requestedSchema: expected an object schema ({"type": "object", "properties": ...})')
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise ValueError("requestedSchema.properties: expected an object")
    required = schema.get("required", [])
    required = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    fields: list[FormField] = []
    for name, prop in props.items():
        where = f"requestedSchema.properties.{name}"
        if not isinstance(name, str) or not isinstance(prop, dict):
            raise ValueError(f"{where}: expected an object")
        kind = prop.get("type")
        common: dict[str, Any] = {
            "name": name,
            "title": prop["title"] if isinstance(prop.get("title"), str) else "",
            "description": prop["description"] if isinstance(prop.get("description"), str) else "",
            "required": name in required,
        }
        choices = _choices(prop)
        if kind == "string" and choices is not None:
            if not choices:
                raise ValueError(f"{where}: an enum with no choices")
            default = prop.get("default")
            default = default if any(default == v for v, _ in choices) else None
            fields.append(FormField(kind="enum", choices=choices, default=default, **common))
        elif kind == "string":
            fmt = prop.get("format")
            default = prop.get("default")
            fields.append(
                FormField(
                    kind="string",
                    default=default if isinstance(default, str) else None,
                    min_length=_count(prop.get("minLength")),
                    max_length=_count(prop.get("maxLength")),
                    format=fmt if isinstance(fmt, str) else None,
                    **common,
                )
            )
        elif kind in ("number", "integer"):
            default = _num(prop.get("default"))
            if kind == "integer" and default is not None and not default.is_integer():
                default = None
            fields.append(
                FormField(
                    kind=kind,
                    default=(int(default) if kind == "integer" and default is not None else default),
                    minimum=_num(prop.get("minimum")),
                    maximum=_num(prop.get("maximum")),
                    **common,
                )
            )
        elif kind == "boolean":
            default = prop.get("default")
            fields.append(FormField(kind="boolean", default=default if isinstance(default, bool) else None, **common))
        elif kind == "array":
            items = prop.get("items")
            options = _choices(items) if isinstance(items, dict) else None
            if not options:
                raise ValueError(f"{where}: only an array of enum choices can be asked for")
            default = prop.get("default")
            values = {v for v, _ in options}
            if not (isinstance(default, list) and all(isinstance(d, str) and d in values for d in default)):
                default = None
            fields.append(
                FormField(
                    kind="multi",
                    choices=options,
                    default=tuple(default) if default is not None else None,
                    min_items=_count(prop.get("minItems")),
                    max_items=_count(prop.get("maxItems")),
                    **common,
                )
            )
        else:
            raise ValueError(f"{where}: cannot ask for a field of type {json.dumps(kind)[:40]}")
    return fields


def _pick(field: FormField, token: str) -> str:
    token = token.strip()
    for value, label in field.choices:
        if token == value or token == label:
            return value
    if token.isdigit() and 1 <= int(token) <= len(field.choices):
        return field.choices[int(token) - 1][0]
    raise ValueError(f"{token!r} is not one of the choices")


def coerce_answer(field: FormField, text: str) -> Any:
    """The value of ``field`` that ``text`` (what the user typed) gives, checked against the
    field's constraints. Raises :class:`ValueError` saying what is wrong."""
    if field.kind == "string":
        if field.min_length is not None and len(text) < field.min_length:
            raise ValueError(f"at least {field.min_length} characters")
        if field.max_length is not None and len(text) > field.max_length:
            raise ValueError(f"at most {field.max_length} characters")
        return text
    if field.kind in ("number", "integer"):
        value: float | int
        try:
            value = int(text.strip()) if field.kind == "integer" else float(text.strip())
        except ValueError:
            raise ValueError(f"expected {'an integer' if field.kind == 'integer' else 'a number'}") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("expected a finite number")
        if field.minimum is not None and value < field.minimum:
            raise ValueError(f"at least {field.minimum:g}")
        if field.maximum is not None and value > field.maximum:
            raise ValueError(f"at most {field.maximum:g}")
        return value
    if field.kind == "boolean":
        answer = text.strip().lower()
        if answer in ("y", "yes", "true", "1"):
            return True
        if answer in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer yes or no")
    if field.kind == "enum":
        return _pick(field, text)
    # multi
    picked: list[str] = []
    for token in (t for t in text.split(",") if t.strip()):
        choice = _pick(field, token)
        if choice not in picked:
            picked.append(choice)
    if field.min_items is not None and len(picked) < field.min_items:
        raise ValueError(f"pick at least {field.min_items}")
    if field.max_items is not None and len(picked) > field.max_items:
        raise ValueError(f"pick at most {field.max_items}")
    return picked


def _render_default(field: FormField) -> str | None:
    if field.default is None:
        return None
    if field.kind == "boolean":
        return "yes" if field.default else "no"
    if field.kind == "multi":
        return ",".join(field.default)
    if isinstance(field.default, float) and field.default.is_integer():
        return repr(field.default)
    return str(field.default)


def _ask_form(message: str, fields: list[FormField]) -> tuple[str, dict[str, Any] | None]:
    """Show the form on the terminal (stderr); ``("accept", content)``, ``("decline", None)``
    or ``("cancel", None)``."""
    from kairox.ext import terminal_safe as safe

    click.echo(f"\nkairox: an MCP server asks you: {safe(message)}", err=True)
    choice = click.prompt(
        "  [a]nswer, [d]ecline, or [c]ancel?", type=click.Choice(["a", "d", "c"]), default="a", err=True
    )
    if choice != "a":
        return ("decline" if choice == "d" else "cancel"), None
    content: dict[str, Any] = {}
    for field in fields:
        label = safe(field.title or field.name)
        if field.description:
            click.echo(f"  {label}: {safe(field.description)}", err=True)
        if field.choices:
            for i, (_value, shown) in enumerate(field.choices, 1):
                click.echo(f"    {i}. {safe(shown)}", err=True)
        hint = {"multi": " (numbers or values, comma-separated)", "boolean": " (yes/no)"}.get(field.kind, "")
        optional = "" if field.required else " (optional: Enter skips)"
        while True:
            default = _render_default(field)
            text = click.prompt(
                f"  {label}{hint}{optional}",
                default=default if default is not None else "",
                show_default=default is not None,
                err=True,
            )
            if text == "" and not field.required:
                break
            try:
                content[field.name] = coerce_answer(field, text)
                break
            except ValueError as exc:
                click.echo(f"  ! {exc}", err=True)
    return "accept", content


def tty_elicitation() -> HostCallback:
    """An ``elicitation_callback`` (the MCP SDK's signature) for the CLI: on a terminal a
    form for the requested schema (string, number, integer, boolean, enum, multi-select),
    or, in URL mode, the link to open; without a terminal every request is declined."""
    import anyio

    async def answer(context: Any, params: Any) -> Any:
        import mcp.types as types  # only a connected MCP server calls this: mcp is loaded

        from kairox.ext import terminal_safe as safe

        interactive = sys.stdin.isatty() and sys.stderr.isatty()
        if getattr(params, "mode", None) == "url":
            url = safe(str(params.url))
            if not interactive:
                click.echo(f"kairox: an MCP server asks you to open {url} (declined: no terminal)", err=True)
                return types.ElicitResult(action="decline")

            def open_link() -> str:
                click.echo(f"\nkairox: an MCP server asks you to open a link: {safe(params.message)}", err=True)
                click.echo(f"  {url}", err=True)
                return str(
                    click.prompt(
                        "  will you open it? [a]ccept, [d]ecline, or [c]ancel",
                        type=click.Choice(["a", "d", "c"]),
                        default="d",
                        err=True,
                    )
                )

            picked = await anyio.to_thread.run_sync(open_link)
            return types.ElicitResult(action="accept" if picked == "a" else "decline" if picked == "d" else "cancel")
        if not interactive:
            click.echo("kairox: an MCP server asked you a question (declined: no terminal)", err=True)
            return types.ElicitResult(action="decline")
        try:
            fields = parse_form_schema(getattr(params, "requested_schema", None))
        except ValueError as exc:
            click.echo(f"kairox: an MCP server asked for a form that cannot be shown ({exc}); declined", err=True)
            return types.ElicitResult(action="decline")
        try:
            action, content = await anyio.to_thread.run_sync(_ask_form, str(params.message), fields)
        except click.Abort:
            return types.ElicitResult(action="cancel")
        return types.ElicitResult.model_validate({"action": action, "content": content})

    return answer


#: tables whose values name environment variables (Codex's ``env_http_headers``: header ->
#: variable), which redaction hides as header values but which are no secrets
_NAMES_TABLES = frozenset({"env_http_headers"})


def _secret_values(raw: Any, shown: Any) -> set[str]:
    """The string values of ``raw`` that :func:`redact` hid whole (``shown`` is its answer).
    Not a value that refers to a variable (``${TOKEN}``, ``Bearer ${TOKEN}``): the secret is in
    the environment, and the reference is what tells the user which variable to set."""
    if isinstance(raw, dict) and isinstance(shown, dict):
        keys = (raw.keys() & shown.keys()) - _NAMES_TABLES
        return {v for k in keys for v in _secret_values(raw[k], shown[k])}
    if isinstance(raw, list) and isinstance(shown, list):
        return {v for a, b in zip(raw, shown, strict=True) for v in _secret_values(a, b)}
    if not isinstance(raw, str) or shown != REDACTED or raw == REDACTED or "${" in raw:
        return set()
    return {raw} if len(raw) >= 4 else set()  # a value of a few characters would mask words of the prose


def mask_secrets(value: Any, secrets: list[str]) -> Any:
    """``value`` (strings, lists and dicts of them) with each of ``secrets`` replaced by
    ``<redacted>`` wherever it occurs in a string (values, not the words around them)."""
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {k: mask_secrets(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_secrets(v, secrets) for v in value]
    return value


def config_secrets(rt: Runtime) -> list[str]:
    """The config's secret values (those :func:`kairox.ext.redact` hides whole: env and header
    values, secret-looking keys), longest first: an error about another field may quote one
    (``tool_timeout = "<the key>"``), which pattern redaction cannot know is a secret."""
    return sorted(_secret_values(rt.config.raw, redact(rt.config.raw)), key=len, reverse=True)
