"""What lifecycle hooks pass and return, and the hooks registered at run time.

Hooks that are not Python hookimpls (plugin hook scripts, Philont
``register_hook``) are added to :class:`HookRegistry`; the dispatcher
(:mod:`kairox._dispatch`) calls them after the hookimpls.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Union

import attrs

if TYPE_CHECKING:
    from ._runtime import Runtime
    from ._session import Session
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

_ATOMS = (str, int, float, bool, type(None))


def snapshot_arguments(value: Any) -> Any:
    """A deep copy of a call's arguments, fast for what JSON holds (dicts, lists, strings,
    numbers, booleans, None); anything else is ``copy.deepcopy``'d."""
    kind = type(value)
    if kind is dict:
        return {k: snapshot_arguments(v) for k, v in value.items()}
    if kind is list:
        return [snapshot_arguments(v) for v in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)


@attrs.frozen
class RuntimeHook:
    event: str
    fn: HookFn
    source: str
    #: a failing ``pre_tool_call`` hook is reported and the call goes on (else it blocks the call)
    advisory: bool = False


class HookRegistry:
    """Hooks added while the runtime runs (manifest hook scripts, code plugins)."""

    def __init__(self) -> None:
        self._hooks: list[RuntimeHook] = []
        #: changes with every add and removal (the dispatcher resolves its targets again)
        self.version = 0

    def add(self, event: str, fn: HookFn, *, source: str, advisory: bool = False) -> Callable[[], None]:
        """Call ``fn`` for ``event`` (one of :data:`LIFECYCLE_EVENTS`) with the
        same keyword arguments as the matching ``kairox_*`` hookspec. A ``pre_tool_call``
        hook that fails blocks the call, unless ``advisory``. Returns a function that removes it."""
        if event not in LIFECYCLE_EVENTS:
            raise ValueError(f"unknown hook event {event!r}; expected one of {', '.join(LIFECYCLE_EVENTS)}")
        hook = RuntimeHook(event, fn, source, advisory)
        self._hooks.append(hook)
        self.version += 1

        def remove() -> None:
            if hook in self._hooks:
                self._hooks.remove(hook)
                self.version += 1

        return remove

    def remove_source(self, source: str) -> None:
        kept = [h for h in self._hooks if h.source != source]
        if len(kept) != len(self._hooks):
            self._hooks = kept
            self.version += 1

    def for_event(self, event: str) -> list[RuntimeHook]:
        return [h for h in self._hooks if h.event == event]

    def __len__(self) -> int:
        return len(self._hooks)
