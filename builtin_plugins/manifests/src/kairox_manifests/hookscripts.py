"""Manifest hooks: scripts run as subprocesses on lifecycle events.

The hook gets one JSON object on stdin and may answer one on stdout:

- stdin: ``event`` (kairox name), ``hook_event_name`` (the manifest's name,
  e.g. ``PreToolUse``), ``session_id``, ``cwd``, ``plugin``, ``plugin_root`` and
  per event ``prompt``; ``tool``/``tool_name``/``tool_input``; ``tool_response``;
  ``reason``.
- stdout: ``{"context": "..."}`` (also Claude's ``additionalContext`` /
  ``hookSpecificOutput.additionalContext``) adds context to the turn;
  ``{"decision": "block", "reason": "..."}`` (also
  ``hookSpecificOutput.permissionDecision = "deny"`` or ``"continue": false``)
  refuses a tool call; ``hookSpecificOutput.permissionDecision = "ask"`` has the user
  asked first (:class:`kairox.Ask`: refused when nobody can be asked);
  ``{"arguments": {...}}`` (``hookSpecificOutput.updatedInput``) rewrites its arguments.
  For ``pre_turn``/``session_start`` plain text on stdout is context. Exit code 2 blocks
  a tool call with stderr as the reason (Claude's rule). Stdout must hold only the JSON
  object (Claude Code's rule: a shell profile's banner before it, or a log line after
  it, is a parse error); a guard whose stdout holds a ``{`` kairox cannot read as one
  answer blocks the call: it may have said "block", and a guard that did not say yes
  has not said yes.

The interpreter follows the file type (``.py`` -> this Python, ``.js``/``.mjs``
-> node, ``.sh`` -> sh, else the file itself); a Claude ``command`` that is not a
single script path runs through ``sh -c``. Each run has a timeout, runs in its
own process group and is killed with its children when it overruns. Failures
are :class:`~kairox_manifests.events.BundleHookFailed` events, never errors.

Context that does not answer a ``pre_turn`` reaches the turn context too, through
the session (:class:`SessionHookContext` in ``session.state``, handed to
``session.turn_context`` by :func:`context_deliverer`, a ``pre_turn`` hook the
loader adds for each bundle): what a ``session_start`` hook answers (Claude's
``SessionStart``) is given on every turn of that session; what a ``post_tool_call``
hook or an ``async`` hook answers is given on the next turn only.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from subprocess import PIPE
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from kairox import Ask, Block, ContextPiece
from kairox.files import loads_bounded
from kairox_process import OutputTail, describe_exit, reap

from ._matcher import compile_matcher
from ._proc import drain_into, interpreter_for, read_bounded
from .events import BundleHookFailed, BundleHookRan
from .model import HookDecl

if TYPE_CHECKING:
    from kairox import Runtime

    from .places import PluginPlaces

__all__ = [
    "DEFAULT_TIMEOUT",
    "HookAnswer",
    "HookError",
    "STATE_KEY",
    "ScriptHook",
    "SessionHookContext",
    "claude_aliases",
    "context_deliverer",
    "parse_answer",
    "session_context",
]

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0
MAX_STDOUT = 1024 * 1024
#: of a hook's stderr: the last bytes kept, and the last lines a failure shows
MAX_STDERR = 16 * 1024
STDERR_LINES = 20
#: Claude Code tool names for kairox's built-in tools, so Claude matchers ("Write|Edit") still match
_CLAUDE_NAMES: dict[str, tuple[str, ...]] = {
    "fs.read": ("Read",),
    "fs.write": ("Write", "Edit", "MultiEdit"),
    "fs.list": ("LS", "Glob"),
    "shell.exec": ("Bash",),
    "search.grep": ("Grep",),
}


def claude_aliases(tool_id: str) -> tuple[str, ...]:
    """Names a Claude hook matcher may use for a kairox tool (``mcp__server__tool`` for MCP tools)."""
    names = _CLAUDE_NAMES.get(tool_id, ())
    if "." in tool_id and tool_id not in _CLAUDE_NAMES:
        server, _, tool = tool_id.rpartition(".")
        names = (*names, f"mcp__{server.replace('.', '_')}__{tool}")
    return names


#: where a session keeps the context its bundles' hooks gave (``session.state[STATE_KEY][plugin]``)
STATE_KEY = "kairox_manifests.hook_context"
#: what a kairox session is to a Claude ``SessionStart`` matcher (sessions always start fresh)
SESSION_SOURCE = "startup"


@attrs.define
class SessionHookContext:
    """One bundle's hook context in one session: ``lasting`` pieces are given on every
    turn (``SessionStart``), ``once`` pieces on the next turn only."""

    lasting: list[ContextPiece] = attrs.field(factory=list)
    once: list[ContextPiece] = attrs.field(factory=list)


def session_context(session: Any, plugin: str) -> SessionHookContext | None:
    """The hook context ``plugin`` keeps in ``session`` (``None`` without a session)."""
    state = getattr(session, "state", None)
    if not isinstance(state, dict):
        return None
    by_plugin = state.setdefault(STATE_KEY, {})
    ctx = by_plugin.get(plugin)
    if ctx is None:
        ctx = by_plugin[plugin] = SessionHookContext()
    return ctx  # type: ignore[no-any-return]


def context_deliverer(plugin: str) -> Any:
    """A ``pre_turn`` hook giving the turn what ``plugin``'s other hooks left for it."""

    def deliver(session: Any = None, prompt: str = "") -> list[ContextPiece] | None:
        ctx = session_context(session, plugin)
        if ctx is None or not (ctx.lasting or ctx.once):
            return None
        pieces = [*ctx.lasting, *ctx.once]
        ctx.once.clear()
        return pieces

    deliver.__qualname__ = f"context_deliverer[{plugin}]"
    return deliver


@attrs.frozen
class HookAnswer:
    context: str | None = None
    block: str | None = None
    arguments: dict[str, Any] | None = None
    #: the reason to ask the user first (Claude's ``permissionDecision: "ask"``)
    ask: str | None = None


def _first_str(*values: Any) -> str | None:
    for v in values:
        if isinstance(v, str) and v:
            return v
    return None


def parse_answer(stdout: str, *, text_is_context: bool) -> HookAnswer:
    """Read a hook's stdout. Raises ``ValueError`` when it is neither empty, one JSON value, nor
    allowed text."""
    text = stdout.strip()
    if not text:
        return HookAnswer()
    try:
        data = loads_bounded(text, json.loads)
    except ValueError as exc:
        if text_is_context:
            return HookAnswer(context=text)
        if "Extra data" in str(exc):
            raise ValueError(
                f"stdout holds more than the JSON object ({exc}): it must hold only the JSON object "
                "(Claude Code's rule; a log line belongs on stderr)"
            ) from None
        raise ValueError(f"expected a JSON object on stdout, got {text[:80]!r}") from None
    if not isinstance(data, dict):
        if text_is_context and isinstance(data, str):
            return HookAnswer(context=data)
        raise ValueError(f"expected a JSON object on stdout, got {type(data).__name__}")
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    context = _first_str(data.get("context"), data.get("additionalContext"), specific.get("additionalContext"))
    block: str | None = None
    ask: str | None = None
    decision = data.get("decision")
    if decision in ("block", "deny") or data.get("block") is True:
        block = _first_str(data.get("reason"), data.get("stopReason")) or "blocked by a plugin hook"
    elif specific.get("permissionDecision") == "deny":
        block = _first_str(specific.get("permissionDecisionReason"), data.get("reason")) or "denied by a plugin hook"
    elif data.get("continue") is False:
        block = _first_str(data.get("stopReason"), data.get("reason")) or "stopped by a plugin hook"
    elif specific.get("permissionDecision") == "ask":
        ask = _first_str(specific.get("permissionDecisionReason"), data.get("reason")) or "a plugin hook asks"
    arguments = data.get("arguments", specific.get("updatedInput"))
    if arguments is not None and not isinstance(arguments, dict):
        raise ValueError("`arguments` must be a JSON object")
    return HookAnswer(context=context, block=block, arguments=arguments, ask=ask)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class ScriptHook:
    """One manifest hook bound to a runtime; register it with ``runtime.hooks.add(decl.event, hook, ...)``."""

    def __init__(
        self,
        plugin: str,
        name: str,
        decl: HookDecl,
        *,
        root: Path,
        runtime: Runtime,
        default_timeout: float = DEFAULT_TIMEOUT,
        places: PluginPlaces | None = None,
        mcp_servers: Collection[str] = (),
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        self.plugin = plugin
        #: the plugin's ``bin/`` and data folder (:mod:`.places`)
        self.places = places
        #: the names of the plugin's own MCP servers (an ``mcp_tool`` hook's ``server`` is one first)
        self.mcp_servers = frozenset(mcp_servers)
        #: the plugin's ``userConfig`` values (``CLAUDE_PLUGIN_OPTION_<KEY>``)
        self.extra_env = dict(extra_env or {})
        self.name = name
        self.decl = decl
        self.root = root
        self.runtime = runtime
        self.timeout = decl.timeout or default_timeout
        #: why this guard blocks every call: its matcher is one RE2 cannot run (the manifest
        #: reader lets only a ``pre_tool_call`` hook's through, reported)
        self.refused: str | None = None
        self._matcher = None
        if decl.matcher:
            try:
                self._matcher = compile_matcher(decl.matcher)
            except ValueError as exc:
                if decl.event != "pre_tool_call":
                    raise
                self.refused = f"its matcher {decl.matcher!r} is {exc}"
        from .rules import parse_rule

        self._rule = parse_rule(decl.condition) if decl.condition else None

    # -- what to run ---------------------------------------------------------------
    def argv(self, env: Mapping[str, str]) -> list[str]:
        if self.decl.script is not None:
            return interpreter_for(self.decl.script, env)
        command = self.decl.command or ""
        if self.places is not None:
            command = self.places.expand(command)
        try:
            parts = shlex.split(command)
        except ValueError:
            parts = []
        if len(parts) == 1 and Path(parts[0]).is_file():
            return interpreter_for(Path(parts[0]), env)
        sh = shutil.which("sh", path=env.get("PATH", os.defpath)) or "/bin/sh"
        return [sh, "-c", command]

    def environment(self) -> dict[str, str]:
        env = dict(self.runtime.env)
        env.update(self.extra_env)
        env.update(
            KAIROX_PLUGIN_ROOT=str(self.root),
            CLAUDE_PLUGIN_ROOT=str(self.root),
            PLUGIN_ROOT=str(self.root),  # Codex's name
            KAIROX_WORKSPACE=str(self.runtime.workspace),
            CLAUDE_PROJECT_DIR=str(self.runtime.workspace),
            KAIROX_HOOK_EVENT=self.decl.event,
        )
        if self.places is not None:
            data = self.places.data()
            if data is not None:
                env.update(KAIROX_PLUGIN_DATA=str(data), CLAUDE_PLUGIN_DATA=str(data), PLUGIN_DATA=str(data))
            if self.places.bin_dir is not None:  # the plugin's own tools, for its own hook alone
                env["PATH"] = self.places.path(env.get("PATH", os.defpath)) or os.defpath
        return env

    def matches(self, call: Any, result: Any = None) -> bool:
        """Whether this hook runs for ``call``: its matcher (a regular expression over the
        tool's names, run by RE2 in linear time: :mod:`._matcher`) and its ``if`` (a permission rule over the tool and its arguments);
        a ``PostToolUseFailure`` hook runs only for a result that is an error."""
        spec = call.tool
        aliases = claude_aliases(spec.id)
        names = (spec.id, spec.exported_name, *aliases)
        if self._matcher is not None and not any(n and self._matcher.fullmatch(n) for n in names):
            return False
        if self.decl.source_event == "PostToolUseFailure" and not getattr(result, "is_error", False):
            return False
        if self._rule is not None:
            arguments = call.arguments if isinstance(call.arguments, Mapping) else {}
            home = self.runtime.env.get("HOME", "")
            cwd = str(self.runtime.workspace)
            if not self._rule.matches((*aliases, spec.id, spec.exported_name), arguments, cwd=cwd, home=home):
                return False
        return True

    def matches_session(self, kwargs: Mapping[str, Any]) -> bool:
        """A Claude ``SessionStart`` matcher is over how the session began (``startup``
        for every kairox session); a ``SessionEnd`` one over the reason (kairox's, or
        ``other``)."""
        if self._matcher is None:
            return True
        if self.decl.event == "session_start":
            return bool(self._matcher.fullmatch(SESSION_SOURCE))
        if self.decl.event == "session_end":
            reason = str(kwargs.get("reason", ""))
            return any(self._matcher.fullmatch(r) for r in (reason, "other") if r)
        return True

    def payload(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        session = kwargs.get("session")
        call = kwargs.get("call")
        if session is None and call is not None:
            session = call.session
        data: dict[str, Any] = {
            "event": self.decl.event,
            "hook_event_name": self.decl.source_event or self.decl.event,
            "session_id": session.id if session is not None else None,
            "cwd": str(self.runtime.workspace),
            "plugin": self.plugin,
            "plugin_root": str(self.root),
        }
        if self.decl.event == "session_start":
            data["source"] = SESSION_SOURCE
        if "prompt" in kwargs:
            data["prompt"] = kwargs["prompt"]
        if "reason" in kwargs:
            data["reason"] = kwargs["reason"]
        if call is not None:
            aliases = claude_aliases(call.tool.id)
            data["tool"] = call.tool.id
            data["tool_name"] = aliases[0] if aliases else call.tool.id
            data["tool_input"] = data["arguments"] = _jsonable(call.arguments)
        result = kwargs.get("result")
        if result is not None:
            data["tool_response"] = {"text": result.text, "is_error": result.is_error, "structured": result.structured}
        return data

    @property
    def advisory(self) -> bool:
        """Its failure lets the call go on (``onError`` is not ``"block"``): the runtime's own
        deadline for a guard then reports the hook and goes on too."""
        return self.decl.on_error != "block"

    def _on_failure(self, error: str, *, unreadable: bool = False, refused: bool = False) -> Any:
        """What a failed run means: nothing (the default), or, for a guard that declared
        ``"onError": "block"``, or whose stdout held an answer kairox cannot read
        (``unreadable``: it may have said "block"), a block of the call it guards."""
        if self.decl.event != "pre_tool_call":
            return None
        if unreadable:
            return Block(f"guard hook {self.name} of plugin {self.plugin} answered what kairox cannot read ({error})")
        if refused:
            return Block(f"guard hook {self.name} of plugin {self.plugin} could not run ({error})")
        if self.decl.on_error == "block":
            return Block(f"guard hook {self.name} of plugin {self.plugin} failed ({error}); it blocks on error")
        return None

    # -- running ---------------------------------------------------------------------
    async def __call__(self, **kwargs: Any) -> Any:
        """Called by the runtime with the hookspec's keyword arguments; never raises."""
        call = kwargs.get("call")
        if self.refused is not None and call is not None:
            # it cannot say which calls it guards: it guards them all
            error = f"{self.refused}; it blocks every tool call"
            self.runtime.events.publish(
                BundleHookFailed(plugin=self.plugin, hook=self.name, event=self.decl.event, error=error)
            )
            return Block(f"guard hook {self.name} of plugin {self.plugin} cannot run: {error}")
        if call is not None and not self.matches(call, kwargs.get("result")):
            return None
        if call is None and not self.matches_session(kwargs):
            return None
        if self.decl.run_async:
            return self._start_in_background(kwargs)
        return await self._run_once(kwargs)

    def _session(self, kwargs: Mapping[str, Any]) -> Any:
        session = kwargs.get("session")
        call = kwargs.get("call")
        return session if session is not None or call is None else call.session

    def _start_in_background(self, kwargs: Mapping[str, Any]) -> None:
        """An ``async`` hook: run it as a runtime task; the call or turn does not wait."""

        async def run() -> None:
            await self._run_once(kwargs, background=True)

        try:
            self.runtime.spawn(run, name=f"hook {self.plugin}:{self.name}")
        except RuntimeError:  # the runtime is not open as a context: nothing to run it on
            logger.debug("async hook %s of %s not started: the runtime has no task group", self.name, self.plugin)
        return None

    async def _run_once(self, kwargs: Mapping[str, Any], *, background: bool = False) -> Any:
        event = self.decl.event
        started = time.perf_counter()
        try:
            answer = await self._answer(kwargs)
            if answer is None:  # an mcp_tool hook's own call: it does not guard itself
                return None
        except HookError as exc:
            self.runtime.events.publish(
                BundleHookFailed(plugin=self.plugin, hook=self.name, event=event, error=exc.message, stderr=exc.stderr)
            )
            return None if background else self._on_failure(exc.message, unreadable=exc.unreadable, refused=exc.refused)
        except Exception as exc:  # never let a hook break the call it observes
            logger.debug("hook %s of %s failed", self.name, self.plugin, exc_info=True)
            self.runtime.events.publish(
                BundleHookFailed(plugin=self.plugin, hook=self.name, event=event, error=f"{type(exc).__name__}: {exc}")
            )
            return None if background else self._on_failure(f"{type(exc).__name__}: {exc}")
        value: Any = None
        outcome = "ok"
        piece = (
            ContextPiece(answer.context, source=f"plugin:{self.plugin}", title=self.decl.source_event or self.name)
            if answer.context
            else None
        )
        if background:
            # nothing waits for it: context goes to the next turn, a block or a rewrite cannot apply
            if piece is not None:
                outcome = self._keep(kwargs, piece, lasting=event == "session_start")
            elif answer.block is not None or answer.arguments is not None or answer.ask is not None:
                outcome = "ignored"
        elif event == "pre_tool_call":
            if answer.block is not None:
                value, outcome = Block(answer.block), "blocked"
            elif answer.ask is not None:
                call = kwargs.get("call")
                if answer.arguments is not None and call is not None:
                    # Claude's updatedInput with "ask": the user is asked about the rewritten call
                    # (the pipeline sees the change and validates and authorizes it again)
                    call.arguments = dict(answer.arguments)
                value, outcome = Ask(answer.ask), "asked"
            elif answer.arguments is not None:
                value, outcome = answer.arguments, "rewrote"
        elif event == "pre_turn" and piece is not None:
            value, outcome = attrs.evolve(piece, title=self.name), "context"
        elif piece is not None and event in ("session_start", "post_tool_call"):
            outcome = self._keep(kwargs, piece, lasting=event == "session_start")
        self.runtime.events.publish(
            BundleHookRan(
                plugin=self.plugin,
                hook=self.name,
                event=event,
                outcome=outcome,
                duration_s=time.perf_counter() - started,
                detail=answer.block or answer.ask or "",
            )
        )
        return value

    def _keep(self, kwargs: Mapping[str, Any], piece: ContextPiece, *, lasting: bool) -> str:
        """Keep ``piece`` in the session for its turns; the outcome word for the event."""
        ctx = session_context(self._session(kwargs), self.plugin)
        if ctx is None:
            return "ok"  # no session (a tool called outside one): no turn to give it to
        (ctx.lasting if lasting else ctx.once).append(piece)
        return "context"

    async def _answer(self, kwargs: Mapping[str, Any]) -> HookAnswer | None:
        """Run the handler: a command (the default), an ``http`` POST, an ``mcp_tool`` call."""
        payload = self.payload(kwargs)
        if self.decl.handler == "http":
            from .hookhandlers import run_http

            return await run_http(self, payload)
        if self.decl.handler == "mcp_tool":
            from .hookhandlers import run_mcp_tool

            return await run_mcp_tool(self, payload, self._session(kwargs))
        return await self._run(payload)

    async def _run(self, payload: dict[str, Any]) -> HookAnswer:
        env = self.environment()
        try:
            argv = self.argv(env)
        except FileNotFoundError as exc:
            raise HookError(str(exc)) from None
        try:
            process = await anyio.open_process(
                argv,
                stdin=PIPE,
                stdout=PIPE,
                stderr=PIPE,
                cwd=str(self.runtime.workspace),
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise HookError(f"cannot start {argv[0]}: {exc}") from None
        stderr = OutputTail(MAX_STDERR)
        stdout = b""
        timed_out = False
        try:
            with anyio.move_on_after(self.timeout) as scope:
                async with anyio.create_task_group() as tg:
                    assert process.stderr is not None and process.stdout is not None and process.stdin is not None
                    tg.start_soon(drain_into, process.stderr, stderr)
                    try:
                        await process.stdin.send(json.dumps(payload).encode() + b"\n")
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        pass  # the script does not read stdin
                    finally:
                        await process.stdin.aclose()
                    stdout, _ = await read_bounded(process.stdout, MAX_STDOUT)
                    await process.wait()
            timed_out = scope.cancelled_caught
        finally:
            code = await reap(process)
        if timed_out:
            raise HookError(f"timed out after {self.timeout:g} s (killed)", stderr.text(STDERR_LINES))
        text = stdout.decode("utf-8", "replace")
        if code == 2 and self.decl.event == "pre_tool_call":
            return HookAnswer(block="\n".join(stderr.tail(5)).strip() or "blocked by a plugin hook (exit code 2)")
        if code != 0:
            raise HookError(f"the hook {describe_exit(code)}", stderr.text(STDERR_LINES))
        try:
            return parse_answer(text, text_is_context=self.decl.event in ("pre_turn", "session_start"))
        except ValueError as exc:
            # a "{" is an answer kairox could not read (plain text is no answer at all)
            raise HookError(str(exc), stderr.text(STDERR_LINES), unreadable="{" in text) from None


class HookError(Exception):
    """A hook run that failed (the handlers of :mod:`.hookhandlers` raise it too)."""

    def __init__(self, message: str, stderr: str = "", *, unreadable: bool = False, refused: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.stderr = stderr
        #: stdout held an answer (a JSON object) kairox could not read
        self.unreadable = unreadable
        #: the policy (or the user) refused what the hook needed to do (an ``mcp_tool`` hook's call)
        self.refused = refused
