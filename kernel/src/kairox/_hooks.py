"""Calling lifecycle hooks: pluggy hookimpls plus hooks registered at run time.

The runtime calls each implementation on its own (so one that raises is
reported and skipped) and awaits those that are coroutines. Hooks that are not
Python hookimpls (plugin hook scripts, Philont ``register_hook``) are added to
:class:`HookRegistry` and called after the hookimpls.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Union

import attrs
import pluggy

from ._host import trace_hook_call

if TYPE_CHECKING:
    from ._runtime import Runtime, Session
    from ._tools import ToolSpec

__all__ = ["LIFECYCLE_EVENTS", "Block", "ContextPiece", "HookRegistry", "RuntimeHook", "ToolCall"]

logger = logging.getLogger(__name__)

#: the lifecycle events hooks can be registered for at run time
LIFECYCLE_EVENTS = ("session_start", "session_end", "pre_turn", "pre_tool_call", "post_tool_call")


@attrs.frozen
class Block:
    """Returned by a ``pre_tool_call`` hook to refuse the call."""

    reason: str


@attrs.frozen
class ContextPiece:
    """Context a ``pre_turn`` hook injects into the next turn, labelled with its source."""

    text: str
    source: str = ""
    title: str = ""


@attrs.define
class ToolCall:
    """One tool call on its way through the runtime."""

    tool: ToolSpec
    arguments: dict[str, Any]
    runtime: Runtime
    session: Session | None = None
    call_id: str = ""


HookFn = Callable[..., Union[Any, Awaitable[Any]]]


@attrs.frozen
class RuntimeHook:
    event: str
    fn: HookFn
    source: str


class HookRegistry:
    """Hooks added while the runtime runs (manifest hook scripts, code plugins)."""

    def __init__(self) -> None:
        self._hooks: list[RuntimeHook] = []

    def add(self, event: str, fn: HookFn, *, source: str) -> Callable[[], None]:
        """Call ``fn`` for ``event`` (one of :data:`LIFECYCLE_EVENTS`) with the
        same keyword arguments as the matching ``kairox_*`` hookspec. Returns a
        function that removes it."""
        if event not in LIFECYCLE_EVENTS:
            raise ValueError(f"unknown hook event {event!r}; expected one of {', '.join(LIFECYCLE_EVENTS)}")
        hook = RuntimeHook(event, fn, source)
        self._hooks.append(hook)
        return lambda: self._hooks.remove(hook) if hook in self._hooks else None

    def remove_source(self, source: str) -> None:
        self._hooks = [h for h in self._hooks if h.source != source]

    def for_event(self, event: str) -> list[RuntimeHook]:
        return [h for h in self._hooks if h.event == event]

    def __len__(self) -> int:
        return len(self._hooks)


@attrs.frozen
class HookOutcome:
    source: str
    value: Any = None
    error: BaseException | None = None


def _plugin_label(pm: pluggy.PluginManager, impl: pluggy.HookImpl) -> str:
    name = pm.get_name(impl.plugin) or impl.plugin_name
    if name.isdigit():  # pluggy names unnamed instances by id(); say what they are instead
        plugin = impl.plugin
        name = getattr(plugin, "__name__", None) or type(plugin).__name__
    return name


async def call_each(
    pm: pluggy.PluginManager,
    hooks: HookRegistry | None,
    event: str,
    kwargs: dict[str, Any],
    *,
    before_each: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    after_each: Callable[[Any], None] | None = None,
) -> list[HookOutcome]:
    """Call every implementation of ``kairox_<event>`` and every runtime hook for it.

    ``before_each`` lets the caller thread a value through (the rewritten
    arguments of ``pre_tool_call``); ``after_each`` sees each result as it comes.
    """
    outcomes: list[HookOutcome] = []
    caller = getattr(pm.hook, f"kairox_{event}")
    targets: list[tuple[str, HookFn, tuple[str, ...] | None]] = []
    for impl in reversed(caller.get_hookimpls()):
        if impl.hookwrapper or impl.wrapper:
            continue
        targets.append((_plugin_label(pm, impl), impl.function, tuple(impl.argnames)))
    for hook in hooks.for_event(event) if hooks else ():
        targets.append((hook.source, hook.fn, None))
    for source, fn, argnames in targets:
        args = before_each(kwargs) if before_each else kwargs
        call_args = {k: v for k, v in args.items() if argnames is None or k in argnames}
        trace_hook_call(pm, f"kairox_{event}", source, call_args)
        try:
            value = fn(**call_args)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:  # reported by the caller as HookFailed
            logger.debug("hook %s from %s raised", event, source, exc_info=True)
            outcomes.append(HookOutcome(source, error=exc))
            continue
        outcomes.append(HookOutcome(source, value=value))
        if after_each:
            after_each(value)
    return outcomes
