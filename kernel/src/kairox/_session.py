"""A session: one conversation's approvals, state and session-scoped skills."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from ._context import build_turn_context
from ._events import SkillActivated
from ._tools import ToolResult
from .errors import ToolError

if TYPE_CHECKING:
    from ._call import Approver
    from ._runtime import Runtime
    from ._skill_model import RenderedSkill, SkillDef

__all__ = ["HostCallback", "Session"]

#: a host callback for requests an MCP server sends the client: ``sampling_callback``,
#: ``elicitation_callback`` and ``list_roots_callback`` take the MCP SDK's own signatures
#: (``mcp.client.session.SamplingFnT``, ``ElicitationFnT``, ``ListRootsFnT``: an async
#: function of ``(context, params)``, or ``(context)`` for roots, returning the SDK's result
#: type or ``ErrorData``), so a callback written for ``mcp.ClientSession`` works unchanged.
#: The kernel only holds them (it never imports ``mcp``); kairox-mcp calls them.
HostCallback = Callable[..., Awaitable[Any]]


class Session:
    """One conversation: its approvals, state and session-scoped skills end with it."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        approver: Approver | None = None,
        sampling_callback: HostCallback | None = None,
        elicitation_callback: HostCallback | None = None,
        list_roots_callback: HostCallback | None = None,
    ) -> None:
        self.id = uuid.uuid4().hex[:12]
        self.runtime = runtime
        self.approver = approver
        self.sampling_callback = sampling_callback
        self.elicitation_callback = elicitation_callback
        self.list_roots_callback = list_roots_callback
        self.approved: set[str] = set()
        self.state: dict[str, Any] = {}
        self.activated: list[RenderedSkill] = []
        self.closed = False

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        errors: Literal["raise", "result"] = "raise",
        **kwargs: Any,
    ) -> ToolResult:
        """Call a tool in this session (its approver, its approvals), through the policy and
        the hooks. ``errors="result"``: a denial, an unknown tool or a failed call comes back
        as an error :class:`~kairox.ToolResult` whose text says why (what a model reads),
        instead of raising :class:`~kairox.errors.ToolError`."""
        kwargs.setdefault("approver", self.approver)
        if errors == "raise":
            return await self.runtime.call_tool(name, arguments, session=self, **kwargs)
        try:
            return await self.runtime.call_tool(name, arguments, session=self, **kwargs)
        except ToolError as exc:
            return ToolResult.from_text(str(exc), is_error=True)

    #: ``await session.turn_context(prompt, *, tool_budget=None, max_skills=5, cwd=None,
    #: skill_budget=SKILL_BUDGET)``: what the model should see this turn (see
    #: :func:`kairox._context.build_turn_context`)
    turn_context = build_turn_context

    def add_skill(self, skill: SkillDef) -> SkillDef:
        """Add a session-scoped skill: it shadows workspace and user skills of the
        same name, and is gone when the session ends."""
        return self.runtime.skills.add_session_skill(self.id, skill)

    async def activate_skill(self, name: str, arguments: Mapping[str, Any] | None = None) -> RenderedSkill:
        """Render a skill for this session: it must be enabled, every tool it lists
        registered, its arguments valid (:class:`~kairox.ext.SkillError` otherwise).
        The result carries the prompt text, the arguments, the tools and the
        pinned ``model``; it is recorded in :attr:`activated`. A skill with a
        :attr:`~kairox.ext.SkillDef.loader` (an MCP server's) is fetched now, not before."""
        skills = self.runtime.skills
        skill = skills.require(name, session_id=self.id)
        body = await skill.loader.load(skill) if skill.loader is not None else None
        rendered = skills.prepare(name, arguments, tools=self.runtime.tools, session_id=self.id, body=body)
        self.activated.append(rendered)
        self.runtime.events.publish(SkillActivated(session_id=self.id, skill=rendered.name, model=rendered.model))
        return rendered
