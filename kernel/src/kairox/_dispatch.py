"""One dispatcher for every kairox hook: pluggy's executor, one implementation at a time.

Every hook the kernel calls goes through :class:`Dispatcher`: the registration
hooks, ``kairox_register_commands``, the lifecycle hooks and ``kairox_event``.
It owns, in one place:

- **Order.** Pluggy's own call order, the one its ``_multicall`` uses:
  ``get_hookimpls()`` reversed. ``tryfirst`` implementations run first and
  ``trylast`` ones last; among the rest the plugin registered last runs first
  (inline plugins, then entry points in reverse load order, then the kernel's
  built-ins). Hooks added at run time (:class:`~kairox.ext.HookRegistry`: bundle
  hook scripts, Philont ``register_hook``) run after every hookimpl, in the
  order they were added. A registration hook's first caller is the first
  claimant of a name, so it keeps it and a later caller is refused.
- **Execution.** Each implementation is called through pluggy's own executor, as a
  hook caller of that one plugin (``pm.subset_hook_caller``): pluggy picks the
  arguments it names, and its hook-call monitoring sees every call. Pluggy calls a
  hook's implementations in one loop that stops at the first exception, so kairox
  asks it for one at a time.
- **Isolation.** Each implementation is called on its own. One that raises is
  recorded under its plugin's name (a :class:`~kairox.ext.LoadFailure` for a
  registration hook, a failed :class:`HookOutcome` for the others) and the
  others still run. A guard (:meth:`Dispatcher.pre_tool_call`) that
  fails blocks the call it guards, unless it is advisory.
- **Tracing.** ``KAIROX_TRACE_PLUGINS=1`` turns on pluggy's own tracing
  (``pm.enable_tracing()``), which writes each call; any other
  ``pm.add_hookcall_monitoring`` observer sees them too.

Callers use one typed method per hookspec, named after it without the
``kairox_`` prefix (as tox's ``Plugin`` does), never a hook name as a string.
No hookspec is ``firstresult``: every implementation runs. A wrapper
(``hookwrapper=True``/``wrapper=True``) would never run when implementations
are called one by one, so the host refuses a plugin that has one when it is
registered (:func:`wrapper_hooks`, stage ``"validate"``).
"""

from __future__ import annotations

import inspect
import logging
import reprlib
import traceback
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import attrs
import pluggy

from ._hooks import Block, HookFn, HookRegistry
from ._policy import Ask
from ._text import terminal_safe
from .hookspecs import ADVISORY

if TYPE_CHECKING:
    from pathlib import Path

    import click

    from ._config import ConfigSection
    from ._events import Event
    from ._hooks import ToolCall
    from ._host import LoadFailure, PluginHost
    from ._registrar import Registrar
    from ._runtime import Runtime
    from ._session import Session
    from ._tools import ToolResult
    from .protocols import CatalogSource, ManifestFormat, SkillSource, ToolProvider

__all__ = ["Dispatcher", "HookOutcome", "wrapper_hooks"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


@attrs.frozen
class HookOutcome:
    """What one implementation of a hook returned, or what it raised."""

    source: str  # the plugin (or the runtime hook's source) that ran
    value: Any = None
    error: BaseException | None = None
    hook: str = ""  # the hook's name, ``kairox_pre_turn``
    traceback: str = ""


@attrs.frozen
class _Target:
    plugin: str  # the plugin's name in the manager; the runtime hook's source
    source: str  # who it is in outcomes
    #: a hookimpl: pluggy's caller of this one plugin (it returns a list of the non-None
    #: results); a run-time hook: the function, called with every argument
    fn: HookFn
    pluggy: bool
    advisory: bool = False  # a guard whose failure is reported, not a block


def wrapper_hooks(pm: pluggy.PluginManager, plugin: object) -> list[str]:
    """The hooks ``plugin`` implements with a wrapper, which kairox refuses."""
    return sorted(
        caller.name
        for caller in pm.get_hookcallers(plugin) or ()
        if any(i.plugin is plugin and (i.hookwrapper or i.wrapper) for i in caller.get_hookimpls())
    )


def _shown(value: Any) -> str:
    """What a hook answered, shown short and safe for a terminal (its repr may be anything)."""
    try:
        text = reprlib.repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return terminal_safe(text)


def plugin_label(name: str, plugin: object) -> str:
    """How a plugin is named in outcomes and traces."""
    if name.isdigit():  # pluggy names unnamed instances by id(); say what they are instead
        return str(getattr(plugin, "__name__", None) or type(plugin).__name__)
    return name


async def _settle(outcome: HookOutcome, timeout: float | None) -> HookOutcome:
    """``outcome`` with its awaitable value awaited (within ``timeout`` seconds, when given)."""
    try:
        with anyio.fail_after(timeout):
            value = await outcome.value
    except TimeoutError:
        error = TimeoutError(f"did not answer within {timeout:g} s")
        return attrs.evolve(outcome, value=None, error=error, traceback="")
    except Exception as exc:
        logger.debug("hook %s of %s raised", outcome.hook, outcome.source, exc_info=True)
        return attrs.evolve(outcome, value=None, error=exc, traceback=traceback.format_exc())
    return attrs.evolve(outcome, value=value)


class _RegistrarClaims:
    """A registrar's entries per plugin: all of a plugin's registrations, or none."""

    def __init__(self, registrar: Registrar[Any]) -> None:
        self.registrar = registrar
        self._before: set[str] = set()

    def begin(self, owner: str) -> None:
        self.registrar.owner = owner
        self._before = set(self.registrar.names())

    def rollback(self) -> None:
        self.registrar.discard(set(self.registrar.names()) - self._before)

    def clashes(self) -> list[str]:
        """None to report: a :class:`Registrar` raises on a clash inside the plugin's hook,
        which rolls the plugin's entries back (the same interface as :class:`_CommandClaims`)."""
        return []

    def end(self) -> None:
        self.registrar.owner = "<code>"


class _CommandClaims:
    """A click group's commands per plugin: half-added ones are taken back, a replaced one restored."""

    def __init__(self, group: click.Group) -> None:
        self.group = group
        self._owners = dict.fromkeys(group.commands, "kairox")
        self._before: dict[str, click.Command] = {}
        self._owner = ""

    def begin(self, owner: str) -> None:
        self._owner = owner
        self._before = dict(self.group.commands)

    def rollback(self) -> None:
        self.group.commands = dict(self._before)

    def clashes(self) -> list[str]:
        errors = []
        for name, command in self._before.items():
            if self.group.commands.get(name) is not command:
                self.group.commands[name] = command
                errors.append(f'command "{name}" is registered twice: by {self._owners[name]} and by {self._owner}')
        for name in self.group.commands.keys() - self._before.keys():
            self._owners[name] = self._owner
        return errors

    def end(self) -> None:
        return None


_Claims = _RegistrarClaims | _CommandClaims


class Dispatcher:
    """Calls the hooks of one plugin host; one typed method per hookspec.

    ``host.dispatch`` is the host's own. A runtime uses :meth:`bind` to also
    call its run-time hooks and to hear of lifecycle hooks that failed.
    """

    def __init__(
        self,
        host: PluginHost,
        *,
        hooks: HookRegistry | None = None,
        report: Callable[[HookOutcome], None] | None = None,
    ) -> None:
        self.host = host
        self._hooks = hooks
        self._report = report
        #: hook name -> (the hookimpls, the run-time hooks' version, the targets): resolved
        #: once, again when a plugin (un)registers or a run-time hook comes or goes
        self._resolved: dict[tuple[str, bool], tuple[pluggy.HookCaller, list[Any], int, list[_Target]]] = {}
        #: seconds a guard's coroutine may take before it blocks the call (``None``: no limit)
        self.guard_timeout: float | None = None

    def bind(
        self, *, hooks: HookRegistry | None = None, report: Callable[[HookOutcome], None] | None = None
    ) -> Dispatcher:
        """A dispatcher for the same host that also calls ``hooks`` (for the lifecycle
        hooks) and passes every failed lifecycle outcome to ``report``."""
        return Dispatcher(self.host, hooks=hooks, report=report)

    # -- registration hooks: a failure is a LoadFailure of the plugin --------------

    def register_owned(self, hook: str, registrar: Registrar[T], **kwargs: Any) -> Registrar[T]:
        """Call ``hook``, a registration hook a plugin added (``kairox_addhooks``), as the
        kernel calls its own: each implementation on its own, one that raises or registers
        a name twice is a :class:`~kairox.ext.LoadFailure` of its plugin. ``hook`` must
        have been added (a :class:`KeyError` otherwise); implementations of a hook no
        installed plugin declares are load failures when the host is built."""
        caller = getattr(self.host.pm.hook, hook, None)
        if caller is None or not caller.has_spec():
            raise KeyError(f"no plugin declares the hook {hook!r}")
        self._register(caller, _RegistrarClaims(registrar), registrar=registrar, **kwargs)
        return registrar

    def register_tool_providers(self, registrar: Registrar[ToolProvider], runtime: Runtime) -> Registrar[ToolProvider]:
        hook = self.host.pm.hook.kairox_register_tool_providers
        self._register(hook, _RegistrarClaims(registrar), registrar=registrar, runtime=runtime)
        return registrar

    def register_skill_sources(self, registrar: Registrar[SkillSource], runtime: Runtime) -> Registrar[SkillSource]:
        hook = self.host.pm.hook.kairox_register_skill_sources
        self._register(hook, _RegistrarClaims(registrar), registrar=registrar, runtime=runtime)
        return registrar

    def register_catalog_sources(
        self, registrar: Registrar[CatalogSource], runtime: Runtime
    ) -> Registrar[CatalogSource]:
        hook = self.host.pm.hook.kairox_register_catalog_sources
        self._register(hook, _RegistrarClaims(registrar), registrar=registrar, runtime=runtime)
        return registrar

    def register_manifest_formats(self, registrar: Registrar[ManifestFormat]) -> Registrar[ManifestFormat]:
        hook = self.host.pm.hook.kairox_register_manifest_formats
        self._register(hook, _RegistrarClaims(registrar), registrar=registrar)
        return registrar

    def register_config_sections(self, registrar: Registrar[ConfigSection]) -> Registrar[ConfigSection]:
        hook = self.host.pm.hook.kairox_register_config_sections
        self._register(hook, _RegistrarClaims(registrar), registrar=registrar)
        return registrar

    def register_commands(self, cli: click.Group) -> list[LoadFailure]:
        """Let each plugin add its commands to ``cli``. A plugin that raises has its
        half-added commands taken back; one that replaces a command the core or
        an earlier plugin added is refused, naming both, and the first keeps it.
        Returns the failures this recorded."""
        return self._register(self.host.pm.hook.kairox_register_commands, _CommandClaims(cli), cli=cli)

    # -- lifecycle hooks: a failure is a failed HookOutcome -----------------------

    async def session_start(self, session: Session) -> list[HookOutcome]:
        return await self._lifecycle(self.host.pm.hook.kairox_session_start, session=session)

    async def session_end(self, session: Session, reason: str) -> list[HookOutcome]:
        return await self._lifecycle(self.host.pm.hook.kairox_session_end, session=session, reason=reason)

    async def instructions(self, session: Session, cwd: Path) -> list[HookOutcome]:
        return await self._lifecycle(self.host.pm.hook.kairox_instructions, session=session, cwd=cwd)

    async def pre_turn(self, session: Session, prompt: str) -> list[HookOutcome]:
        return await self._lifecycle(self.host.pm.hook.kairox_pre_turn, session=session, prompt=prompt)

    async def pre_tool_call(self, call: ToolCall) -> Block | Ask | None:
        """Run the ``pre_tool_call`` implementations (then the run-time hooks) in order, failing
        closed. A dict one returns replaces ``call.arguments`` before the next runs; the first
        :class:`~kairox.Block` returned is the answer, else the first :class:`~kairox.Ask` (the
        others still run: they may record the attempt). One that raises, or whose awaitable does
        not finish within :attr:`guard_timeout` seconds, is reported and blocks the call, naming
        it, unless it is advisory (:func:`kairox.advisory`, or a run-time hook added with
        ``advisory=True``). One that answers anything else (``False``, a string, an exception it
        did not raise) has not said yes: it blocks the call, naming what it answered."""
        hook = self.host.pm.hook.kairox_pre_tool_call
        block: Block | None = None
        ask: Ask | None = None
        for target in self._targets(hook, runtime_hooks=True):
            outcome = self._call(hook.name, target, {"call": call})
            if outcome.error is None and inspect.isawaitable(outcome.value):
                outcome = await _settle(outcome, self.guard_timeout)
            if outcome.error is not None:
                if self._report is not None:
                    self._report(outcome)
                if not target.advisory and block is None:
                    error = outcome.error
                    block = Block(f"the guard of {target.source} failed ({type(error).__name__}: {error})")
                continue
            value = outcome.value
            if value is None:
                continue
            if isinstance(value, dict):
                call.arguments = dict(value)
            elif isinstance(value, Block):
                block = block or value
            elif isinstance(value, Ask):
                ask = ask or value
            elif block is None:
                block = Block(
                    f"the guard of {target.source} answered {_shown(value)}, which is no answer (a guard "
                    "returns None, a dict of arguments, kairox.Block or kairox.Ask)"
                )
        return block or ask

    async def post_tool_call(self, call: ToolCall, result: ToolResult) -> list[HookOutcome]:
        return await self._lifecycle(self.host.pm.hook.kairox_post_tool_call, call=call, result=result)

    def event(self, event: Event, runtime: Runtime) -> list[HookOutcome]:
        """Synchronous: an ``async def`` implementation's awaitable is its outcome's
        value, for the caller to run as a task. A failure is logged, never reported
        (a report would be an event, and so on)."""
        hook = self.host.pm.hook.kairox_event
        outcomes = [self._call(hook.name, t, {"event": event, "runtime": runtime}) for t in self._targets(hook)]
        for o in outcomes:
            if o.error is not None:
                logger.error("%s hook of %s failed", o.hook, o.source, exc_info=o.error)
        return outcomes

    # -- the one executor --------------------------------------------------------

    def implemented(self, hook: str, runtime_hooks: bool = True) -> bool:
        """Whether calling hook ``hook`` (``"kairox_pre_tool_call"``) would call anything (with
        ``runtime_hooks``: counting the run-time hooks, as the lifecycle hooks do). Cheap: the
        targets are resolved once per hook, and again only when they changed."""
        return bool(self._targets_named(hook, runtime_hooks))

    def _targets_named(self, hook: str, runtime_hooks: bool = True) -> list[_Target]:
        """What calling hook ``hook`` (``"kairox_pre_tool_call"``) calls, in order (with
        ``runtime_hooks``: the run-time hooks too, as the lifecycle hooks do); empty when
        nothing implements it. Resolved once, again when the implementations changed."""
        cached = self._resolved.get((hook, runtime_hooks))
        if cached is not None:  # the check _targets makes, without looking the caller up
            caller, impls, version, targets = cached
            hooks = self._hooks
            if version == (hooks.version if runtime_hooks and hooks is not None else -1) and impls == (
                caller.get_hookimpls()
            ):
                return targets
        return self._targets(getattr(self.host.pm.hook, hook), runtime_hooks=runtime_hooks)

    def _targets(self, caller: pluggy.HookCaller, *, runtime_hooks: bool = False) -> list[_Target]:
        """Pluggy's call order (``get_hookimpls()`` reversed), then the run-time hooks:
        worked out once per hook, and again when its implementations changed (compared
        with the copy made when they were resolved, element by element)."""
        version = self._hooks.version if runtime_hooks and self._hooks is not None else -1
        key = (caller.name, runtime_hooks)
        cached = self._resolved.get(key)
        if cached is not None and cached[0] is caller and cached[2] == version and cached[1] == caller.get_hookimpls():
            return cached[3]
        impls = caller.get_hookimpls()
        targets = self._resolve(caller, impls, runtime_hooks)
        self._resolved[key] = (caller, impls, version, targets)
        return targets

    def _resolve(self, caller: pluggy.HookCaller, impls: list[Any], runtime_hooks: bool) -> list[_Target]:
        pm = self.host.pm
        plugins = [impl.plugin for impl in impls]
        targets = []
        for impl in reversed(impls):
            name = pm.get_name(impl.plugin) or impl.plugin_name
            if impl.hookwrapper or impl.wrapper:  # host.register refuses these; one registered past it is skipped
                logger.warning("%s: the wrapper of %s is not called (kairox has no wrappers)", caller.name, name)
                continue
            advisory = getattr(impl.function, ADVISORY, False) is True
            # pluggy's caller of this plugin alone: every other implementer left out
            alone = pm.subset_hook_caller(caller.name, [p for p in plugins if p is not impl.plugin])
            targets.append(_Target(name, plugin_label(name, impl.plugin), alone, True, advisory))
        if runtime_hooks and self._hooks is not None:
            for hook in self._hooks.for_event(caller.name.removeprefix("kairox_")):
                targets.append(_Target(hook.source, hook.source, hook.fn, False, hook.advisory))
        return targets

    def _call(self, hook: str, target: _Target, kwargs: Mapping[str, Any]) -> HookOutcome:
        """Call one implementation (pluggy gives it the arguments it names); what it raises is its outcome."""
        try:
            if target.pluggy:
                results: list[Any] = target.fn(**kwargs)  # type: ignore[assignment]
                value = results[0] if results else None
            else:
                value = target.fn(**kwargs)
        except Exception as exc:
            logger.debug("hook %s of %s raised", hook, target.source, exc_info=True)
            return HookOutcome(target.source, error=exc, hook=hook, traceback=traceback.format_exc())
        return HookOutcome(target.source, value=value, hook=hook)

    def _register(self, caller: pluggy.HookCaller, claims: _Claims, **kwargs: Any) -> list[LoadFailure]:
        seen = len(self.host.failures)
        try:
            for target in self._targets(caller):
                claims.begin(self.host.label(target.plugin))
                outcome = self._call(caller.name, target, kwargs)
                if outcome.error is None and inspect.iscoroutine(outcome.value):
                    outcome.value.close()
                    error = TypeError(f"{caller.name} is synchronous; {target.source} implements it with async def")
                    outcome = attrs.evolve(outcome, value=None, error=error)
                if outcome.error is not None:
                    claims.rollback()
                    self.host.fail(target.plugin, caller.name, outcome.error, outcome.traceback)
                    continue
                for clash in claims.clashes():
                    self.host.fail(target.plugin, caller.name, clash)
        finally:
            claims.end()
        return self.host.failures[seen:]

    async def _lifecycle(self, caller: pluggy.HookCaller, **kwargs: Any) -> list[HookOutcome]:
        outcomes = []
        for target in self._targets(caller, runtime_hooks=True):
            outcome = self._call(caller.name, target, kwargs)
            if outcome.error is None and inspect.isawaitable(outcome.value):
                outcome = await _settle(outcome, None)
            outcomes.append(outcome)
        if self._report is not None:
            for o in outcomes:
                if o.error is not None:
                    self._report(o)
        return outcomes
