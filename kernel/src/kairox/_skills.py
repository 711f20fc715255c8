"""Skills: the data model and the registry (discovery ships as the kairox-skills plugin)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._events import EventBus

if TYPE_CHECKING:
    from ._runtime import Runtime

__all__ = ["SkillRegistry"]


class SkillRegistry:
    """Every skill the agent may use (placeholder until the skills issue lands)."""

    def __init__(self, events: EventBus | None = None) -> None:
        self._events = events or EventBus()
        self._skills: dict[str, Any] = {}

    async def scan(self, sources: Iterable[Any], runtime: Runtime) -> None:
        return None

    def end_session(self, session_id: str) -> None:
        return None

    def __len__(self) -> int:
        return len(self._skills)
