"""One tool call, as a pipeline of named steps.

Every call, whatever surface it came from (the CLI, the dashboard, the gateway, an
embedding host), takes the same steps, each one concern, each asking the registry,
the policy engine, the approver and the dispatcher through their public methods (a step
of more than a line is a method of :class:`CallPipeline` or a function here; ``validate``
and ``finish`` are a few lines each in :meth:`CallPipeline.call`, which also publishes
``ToolCallStarted`` first):

``resolve``
    the registered tool by exported name or canonical id (started on demand when lazy)
``validate``
    the arguments against the tool's input schema (JSON Schema, with ``jsonschema``);
    an invalid call is an error result naming the field, and the tool never runs (an
    optional argument given as ``null`` that its schema does not accept is one not given:
    :meth:`ArgumentCheck.omit_nulls`)
``authorize``
    the policy's decision for these arguments, and on *ask* the approver
    (:func:`authorize`, which plugins' own privileged acts call too)
``guard``
    the ``pre_tool_call`` hooks; a Block, a guard that fails or answers nonsense refuses the
    call; rewritten arguments are validated and authorized again; an Ask asks the approver
``invoke``
    the tool itself, with the session set for :func:`current_session` and the deadline
``observe``
    the ``post_tool_call`` hooks
``finish``
    the ``ToolCallFinished`` event

A step that fails ends the call with a reason naming what failed; nothing falls back to
a default.
"""

from __future__ import annotations

import contextvars
import enum
import functools
import inspect
import itertools
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import anyio
import attrs

from ._events import ToolCallFinished, ToolCallStarted
from ._hooks import Block, ToolCall, snapshot_arguments
from ._policy import Allow, Ask, Deny
from ._tools import ProgressCallback, Tool, ToolContext, ToolResult, ToolSpec, ToolView
from ._types import Capability
from .errors import PolicyDenied, ToolError

if TYPE_CHECKING:
    from ._runtime import Runtime
    from ._session import Session

__all__ = [
    "ApprovalAnswer",
    "ApprovalRequest",
    "Approver",
    "ArgumentCheck",
    "CallPipeline",
    "ask_approver",
    "authorize",
    "current_session",
]


class ApprovalAnswer(str, enum.Enum):
    """What an approver answers; ``True`` counts as :attr:`ALLOW_ONCE`, anything else denies."""

    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"
    DENY = "deny"


@attrs.frozen
class ApprovalRequest:
    """What an approver is asked: this tool, these arguments, for this reason."""

    tool: ToolSpec
    arguments: dict[str, Any]
    reason: str
    session_id: str | None = None


#: a callable given an :class:`ApprovalRequest`, answering an :class:`ApprovalAnswer` or a bool
#: (``True``: allow once), or an awaitable of one
Approver = Callable[[ApprovalRequest], Union[ApprovalAnswer, bool, Awaitable[Union[ApprovalAnswer, bool]]]]

_current_session: contextvars.ContextVar[Session | None] = contextvars.ContextVar("kairox_session", default=None)


def current_session() -> Session | None:
    """The session whose tool call is running in this task (set around the tool's own call),
    or ``None``: outside a tool call, or a call without a session."""
    return _current_session.get()


# -- validate -------------------------------------------------------------------------------

#: compiled validators kept at once (a new one for each spec object, made on its first call)
_MAX_VALIDATORS = 4096
_MAX_MESSAGE = 300


class _PatternError(ValueError):
    """A schema's regular expression RE2 cannot run: ``pattern`` is the expression, the
    message RE2's reason."""

    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(reason)
        self.pattern = pattern


@functools.lru_cache(maxsize=512)
def _re2(pattern: str) -> Any:
    """``pattern`` compiled by RE2 (time linear in the text it searches, whatever the
    expression); :class:`_PatternError` when RE2 cannot run it (look-around, backreferences)."""
    import re2

    options = re2.Options()
    options.log_errors = False  # the reason goes into the refusal, not on stderr
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise _PatternError(pattern, text) from None
    except UnicodeError as exc:  # a lone surrogate ("\ud800" is valid JSON)
        raise _PatternError(pattern, str(exc)) from None


# The keywords that run a schema's regular expression over the arguments, with RE2 instead
# of jsonschema's Python ``re``, which backtracks: ``^(a+)+$`` over 34 ``a`` and a ``!``
# took minutes, on the event loop, before the policy was asked. Same meaning, same messages.


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and _re2(pattern).search(instance) is None:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = _re2(pattern)
        for key, value in instance.items():
            if compiled.search(key) is not None:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Any:
    # jsonschema's own joins patternProperties into one Python ``re``; the rest is as it does
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = [_re2(p) for p in schema.get("patternProperties", {})]
    extras = [k for k in instance if k not in properties and not any(p.search(k) is not None for p in patterns)]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            listed = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")
        else:
            joined = ", ".join(repr(each) for each in sorted(extras, key=str))
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({joined} {verb} unexpected)")


_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


@functools.cache
def _linear(base: Any) -> Any:
    """``base`` (a jsonschema validator class, one per draft) with the regex keywords run by RE2
    (``jsonschema.validators.extend``, its extension API)."""
    from jsonschema.validators import extend

    return extend(base, validators={k: v for k, v in _KEYWORDS.items() if k in base.VALIDATORS})


@functools.cache
def _schema_formats(base: Any) -> Any:
    """The format checker ``base.check_schema`` uses, with ``regex`` (the format of every
    ``pattern`` and ``patternProperties`` key in the meta-schemas) checked by RE2."""
    from jsonschema import FormatChecker

    checker = FormatChecker(base.FORMAT_CHECKER.checkers)
    checker.checks("regex", raises=_PatternError)(lambda value: not isinstance(value, str) or bool(_re2(value)))
    return checker


def _uses(schema: Any, keys: frozenset[str]) -> set[str]:
    """Which of ``keys`` appear as a key anywhere in ``schema`` (walked once, without recursion)."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.update(keys.intersection(node))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


_UNEVALUATED_WITH_PATTERNS = frozenset({"unevaluatedProperties", "patternProperties"})


class ArgumentCheck:
    """Arguments against their tool's input schema, with a real JSON Schema validator
    (``jsonschema``, imported with the first call: importing the kernel stays cheap). The
    dialect is the schema's ``$schema``, else 2020-12 (MCP's default). A schema that is not
    valid JSON Schema refuses every call of its tool: nothing is checked loosely.

    The schema is the tool's (an MCP server's: outside input), the arguments the model's or a
    gateway client's: checking them costs time linear in their size. The keywords that run
    the schema's regular expressions (``pattern``, ``patternProperties`` and the
    ``additionalProperties`` that depends on them) run them with RE2, never with Python's
    backtracking ``re``. A schema with an expression RE2 cannot run (look-around,
    backreferences), or with ``unevaluatedProperties`` beside ``patternProperties`` (which
    jsonschema evaluates with ``re`` and no extension point), cannot be checked in bounded
    time, so every call of its tool is refused saying so. ``format`` is an annotation here,
    as 2020-12 says by default (no format is asserted, so ``"format": "regex"`` runs nothing)."""

    def __init__(self) -> None:
        self._compiled: dict[int, tuple[ToolSpec, Any]] = {}

    def problem(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> str | None:
        """Why ``arguments`` do not fit ``spec``'s input schema (naming the field), or ``None``."""
        validator = self._validator(spec)
        if isinstance(validator, str):
            return validator
        from jsonschema.exceptions import best_match

        try:
            error = best_match(validator.iter_errors(dict(arguments)))
        except _PatternError as exc:  # a patternProperties key of a draft whose meta-schema does not check it
            return _unrunnable(spec, exc)
        except Exception as exc:  # an unresolvable $ref: the schema cannot check them
            return f"{spec.id}: its input schema cannot check these arguments ({type(exc).__name__}: {exc})"[:500]
        if error is None:
            return None
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
        message = error.message if len(error.message) <= _MAX_MESSAGE else error.message[:_MAX_MESSAGE] + "..."
        return f"invalid arguments for {spec.id}: {where + ': ' if where else ''}{message}"

    def omit_nulls(self, spec: ToolSpec, arguments: dict[str, Any]) -> None:
        """Drop from ``arguments`` each optional top-level argument given as ``null`` where its
        schema does not accept ``null``: MCP treats a null argument as one not given (SEP-2243's
        headers omit it), and hosts whose model API makes every field nullable (OpenAI's strict
        mode) send optional ones so. A null that is required, not a listed property, or that the
        schema accepts stays as given, for :meth:`problem` to judge."""
        if None not in arguments.values():
            return
        validator = self._validator(spec)
        schema = spec.input_schema
        if isinstance(validator, str) or not isinstance(schema, dict):
            return
        required = schema.get("required")
        required = set(required) if isinstance(required, list) else set()
        try:
            errors = list(validator.iter_errors(dict(arguments)))
        except Exception:  # a schema that cannot check them: problem() says why
            return
        for error in errors:
            path = list(error.absolute_path)
            if len(path) == 1 and error.instance is None and path[0] not in required:
                arguments.pop(str(path[0]), None)

    def _validator(self, spec: ToolSpec) -> Any:
        known = self._compiled.get(id(spec))
        if known is not None and known[0] is spec:
            return known[1]
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import Draft202012Validator, validator_for

        schema = spec.input_schema
        try:
            cls = validator_for(schema, default=Draft202012Validator)
            cls.check_schema(schema, format_checker=_schema_formats(cls))
            if _uses(schema, _UNEVALUATED_WITH_PATTERNS) == _UNEVALUATED_WITH_PATTERNS:
                validator: Any = (
                    f"{spec.id}: its input schema has unevaluatedProperties beside patternProperties, which "
                    "cannot be checked in bounded time (jsonschema runs them with Python's backtracking re); "
                    "the call is refused"
                )
            else:
                validator = _linear(cls)(schema)
        except SchemaError as exc:
            if isinstance(exc.cause, _PatternError):
                validator = _unrunnable(spec, exc.cause)
            else:
                validator = f"{spec.id}: its input schema is not valid JSON Schema ({exc.message}); the call is refused"
        except Exception as exc:  # an unknown $schema, a schema that is no object
            validator = f"{spec.id}: its input schema cannot be used ({type(exc).__name__}: {exc}); the call is refused"
        if len(self._compiled) >= _MAX_VALIDATORS:
            self._compiled.clear()
        self._compiled[id(spec)] = (spec, validator)
        return validator


def _unrunnable(spec: ToolSpec, exc: _PatternError) -> str:
    shown = exc.pattern if len(exc.pattern) <= 80 else exc.pattern[:80] + "..."
    return (
        f"{spec.id}: its input schema has a pattern RE2 cannot run ({shown!r}: {exc}); kairox checks "
        "patterns in time linear in the argument (RE2: no look-around or backreferences), so the call is refused"
    )


# -- authorize --------------------------------------------------------------------------------


async def authorize(
    runtime: Runtime,
    spec: ToolSpec,
    args: Mapping[str, Any],
    *,
    session: Session | None = None,
    approver: Approver | None = None,
    reason: str | None = None,
) -> tuple[Path, ...] | None:
    """The one approval flow, :meth:`Runtime.authorize <kairox.Runtime.authorize>` (which says what it does)."""
    policy = runtime.policy
    # the targets are resolved once: the decision and the confinement see the same
    location = policy.location(spec, args) if spec.capability is Capability.WRITE else "none"
    decision = policy.decide_at(spec, location)
    if isinstance(decision, Allow):
        if location == "inside" and not isinstance(policy.decide_at(spec, "outside"), Allow):
            return tuple(policy.roots)
        return None
    if isinstance(decision, Deny):
        raise PolicyDenied(decision.reason, tool=spec.id)
    approved = session.approved if session is not None else runtime.approved
    if spec.id in approved:
        return None
    await ask_approver(runtime, spec, args, reason or decision.reason, session=session, approver=approver)
    return None


async def ask_approver(
    runtime: Runtime,
    spec: ToolSpec,
    args: Mapping[str, Any],
    reason: str,
    *,
    session: Session | None = None,
    approver: Approver | None = None,
    remember: bool = True,
) -> None:
    """Ask the approver (``approver``, else the session's, else the runtime's) about this call,
    for ``reason``: returns on an explicit allow, raises :class:`PolicyDenied` otherwise, and
    when nobody can be asked. An "allow for the session" answer is remembered as the policy's
    approval of the tool when ``remember`` (a hook's question passes ``False``: its answer must
    not stand in for the policy's later questions)."""
    approver = approver or (session.approver if session is not None else None) or runtime.approver
    if approver is None:
        raise PolicyDenied(f"needs approval ({reason}), and no approver is available (non-interactive)", tool=spec.id)
    try:
        answer = approver(ApprovalRequest(spec, dict(args), reason, session.id if session else None))
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:  # Ctrl-C at a prompt (click.Abort), a broken UI: nobody said yes
        raise PolicyDenied(
            f"not approved: the approver failed ({type(exc).__name__}: {exc}) ({reason})", tool=spec.id
        ) from exc
    if answer is True:
        answer = ApprovalAnswer.ALLOW_ONCE
    # only an explicit allow allows: anything else (False, None, "deny", a typo) denies
    if isinstance(answer, bool) or answer not in (ApprovalAnswer.ALLOW_ONCE, ApprovalAnswer.ALLOW_SESSION):
        raise PolicyDenied(f"the user declined ({reason})", tool=spec.id)
    if remember and answer == ApprovalAnswer.ALLOW_SESSION:
        (session.approved if session is not None else runtime.approved).add(spec.id)


# -- the pipeline ---------------------------------------------------------------------------


class CallPipeline:
    """The tool calls of one runtime (:meth:`Runtime.call_tool` runs :meth:`call`)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.check = ArgumentCheck()
        self._ids = itertools.count(1)

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        session: Session | None = None,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        approver: Approver | None = None,
    ) -> ToolResult:
        """Call ``name`` through every step (see the module's docstring)."""
        spec, tool = await self.resolve(name, arguments)
        call = ToolCall(spec, dict(arguments) if arguments else {}, self.runtime, session, f"c{next(self._ids)}")
        events = self.runtime.events
        started = time.perf_counter()
        if events.has_listeners(ToolCallStarted):  # events are built only when someone listens
            events.publish(ToolCallStarted(tool=spec.id, call_id=call.call_id, session_id=_id_of(session)))
        outcome, detail = "failed", ""
        try:
            self.check.omit_nulls(spec, call.arguments)
            invalid = self.check.problem(spec, call.arguments)
            if invalid is not None:
                outcome, detail = "error", invalid
                return ToolResult.from_text(invalid, is_error=True)
            confined = await authorize(self.runtime, spec, call.arguments, session=session, approver=approver)
            confined = await self.guard(call, approver, confined)
            result = await self.invoke(tool, call, confined, timeout=timeout, progress=progress)
            outcome = "error" if result.is_error else "ok"
            await self.observe(call, result)
            return result
        except PolicyDenied as exc:
            outcome, detail = "denied", exc.reason
            raise
        except ToolError as exc:
            detail = str(exc)
            raise
        finally:
            if events.has_listeners(ToolCallFinished):
                duration = time.perf_counter() - started
                events.publish(
                    ToolCallFinished(
                        tool=spec.id,
                        call_id=call.call_id,
                        duration_s=duration,
                        outcome=outcome,
                        detail=detail,
                        session_id=_id_of(session),
                    )
                )

    async def resolve(self, name: str, arguments: Mapping[str, Any] | None) -> tuple[ToolSpec, Tool]:
        """The registered spec and the tool (started on demand when the runtime is lazy)."""
        found = self.runtime.tools.lookup(name)
        if found is not None:
            return found
        tool = await self.runtime.resolve_tool(name, arguments)
        return tool.spec, tool.inner if isinstance(tool, ToolView) else tool

    async def guard(
        self, call: ToolCall, approver: Approver | None, confined: tuple[Path, ...] | None
    ) -> tuple[Path, ...] | None:
        """The ``pre_tool_call`` hooks: a Block, an answer that is none of the hook's answers,
        or a failing guard refuses the call; arguments a hook rewrote (a nested path changed
        in place too) are validated and authorized again; an Ask is put to the approver, even
        when the policy allowed the call, every time (an "allow for the session" answers this
        call only: it is neither the hook's standing answer nor the policy's), and refuses it
        when nobody can be asked."""
        dispatch = self.runtime.dispatch
        if not dispatch.implemented("kairox_pre_tool_call"):
            return confined
        original = snapshot_arguments(call.arguments)
        answer = await dispatch.pre_tool_call(call)
        if isinstance(answer, Block):
            raise PolicyDenied(f"blocked by a hook: {answer.reason}", tool=call.tool.id)
        if call.arguments != original:
            invalid = self.check.problem(call.tool, call.arguments)
            if invalid is not None:
                raise PolicyDenied(f"a hook rewrote the arguments: {invalid}", tool=call.tool.id)
            confined = await authorize(self.runtime, call.tool, call.arguments, session=call.session, approver=approver)
        if isinstance(answer, Ask):
            reason = f"a hook asks: {answer.reason}"
            await ask_approver(
                self.runtime, call.tool, call.arguments, reason, session=call.session, approver=approver, remember=False
            )
        return confined

    async def invoke(
        self,
        tool: Tool,
        call: ToolCall,
        confined: tuple[Path, ...] | None,
        *,
        timeout: float | None,
        progress: ProgressCallback | None,
    ) -> ToolResult:
        """The tool's own call, within ``timeout``; what it raises is a :class:`ToolError`."""
        runtime, spec = self.runtime, call.tool
        context = ToolContext(runtime, call.session, call.call_id, progress, timeout, confined)
        token = _current_session.set(call.session)
        try:
            if timeout is None:
                result = await tool.call(call.arguments, context)
            else:
                # move_on_after, not fail_after: a TimeoutError the tool raises itself
                # (a socket, a peer) is a failure of the tool, not our deadline
                with anyio.move_on_after(timeout) as deadline:
                    result = await tool.call(call.arguments, context)
                if deadline.cancelled_caught:
                    raise ToolError(f"{spec.id}: timed out after {timeout:g} s")
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(f"{spec.id} failed: {type(exc).__name__}: {exc}") from exc
        finally:
            _current_session.reset(token)
        return result.limited(max_text=runtime.max_result_text, max_binary=runtime.max_result_binary)

    async def observe(self, call: ToolCall, result: ToolResult) -> None:
        """The ``post_tool_call`` hooks (a failing one is reported; the result stands)."""
        dispatch = self.runtime.dispatch
        if dispatch.implemented("kairox_post_tool_call"):
            await dispatch.post_tool_call(call, result)


def _id_of(session: Session | None) -> str | None:
    return session.id if session is not None else None
